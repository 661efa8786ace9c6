#!/usr/bin/env bash
# End-to-end of the DRA driver neuron.aws.com on a real Kubernetes: scripts/local-cluster.sh --dra
# brings up upstream's API server, scheduler, controller manager and a kubelet with containerd (CDI
# on) on each of three simulated nodes labelled for DRA (a trn2.48xlarge the checks are about, a
# trn2u.48xlarge of an UltraServer and an inf2.xlarge beside it), and installs Torus with
# dra.enabled.
# This script checks what Kubernetes and the containers see: ResourceSlices with AWS's attributes,
# claims for 1, 4 connected and all chips, 4 cores of one chip and LNC 1 (the examples in
# deploy/examples/dra), an unsatisfiable claim, a bad opaque config, a health taint that comes and
# goes, old `aws.amazon.com/neuron` pods, unprepare, agent and kubelet restarts, and uninstall.
#
# The checks are in cases/dra/*.sh and cases/dra_common/*.sh, sourced in order on the one cluster
# (a case may use what an earlier one left); the JSON they read is checked by the named functions
# of checks/ (run by e2e_checks.py).
#
# Usage: tests/e2e/cluster/dra_test.sh [--keep]   (--keep leaves the cluster running)
# Needs root. Prints 'N passed, N failed'; exits non-zero on any failure. Every wait is bounded.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
source "$REPO/tests/e2e/cluster/lib.sh"
source "$REPO/tests/e2e/cluster/dra_lib.sh"

cluster_test_setup torus-dra "${1:-}"

# Three real DRA nodes; the pods below run on the first (NODE_NAME), whose driver they check. Plus
# two kwok nodes, one that advertises the device plugin's resources and one in DRA mode with the
# slices the driver publishes for a trn2: a mixed cluster.
cluster_up_for_test "local cluster in DRA mode" --dra \
  --nodes=trn2.48xlarge:1,trn2u.48xlarge:1@us0,inf2.xlarge:1 \
  --fake-nodes=trn2.48xlarge:1 --dra-nodes=trn2.48xlarge:1
PIN_NODE="$NODE_NAME"  # pod_manifest's pods too
TRN2U_NODE="${names[1]}"

# trn2.48xlarge: 16 chips of 8 physical cores; LNC 2 makes 4 logical cores per chip.
CORES_PER_DEVICE=4
EXPECTED_LNC=2
export CORES_PER_DEVICE EXPECTED_LNC

# Helpers more than one case uses.
# taint_on DEVICE TAINTS: the device's taints in this node's pool are TAINTS
# ("key=value:effect,...", "" for none).
taint_on() { pool_devices | checks_py device-taints-are "$1" "$2"; }
release_resets() { metric 'torus_device_release_resets_total{result="ok"}' | cut -d. -f1; }
resets_at_least() {
  local have
  have="$(release_resets)"
  ((have >= $1)) || { echo "torus_device_release_resets_total{result=\"ok\"} is $have, want >= $1"; return 1; }
}
# Chip 9's uncorrected-ECC counter in the simulated driver: 2 is a fault, 0 clears it.
ECC="$(ecc_counter 9)"

# Cases of cases/dra, and of cases/dra_common (what dra_134_test.sh checks too), in order.
# TORUS_E2E_CASES="dra_common/admin_access dra/taints" runs only those (a developer's loop; CI
# runs all).
for case in ${TORUS_E2E_CASES:-dra/pool dra/pcie_pairing dra_common/chip_examples dra/examples \
  dra_common/prioritized_list dra/request_configs dra_common/admin_access dra/refusals \
  dra/partitions dra/taints dra/old_specs dra/restarts dra/mixed_cluster dra/corrupt_checkpoint}; do
  source "$REPO/tests/e2e/cluster/cases/$case.sh"
done

uninstall_and_report
