#!/usr/bin/env bash
# The DRA driver on Kubernetes 1.34, the oldest release EKS runs it on: the same local cluster as
# dra_test.sh (upstream's components, containerd with CDI, a simulated trn2.48xlarge labelled for
# DRA) at v1.34.4, where partitionable devices, device taints and extended-resource mapping are
# alpha and off. The driver must notice what the API server drops and fall back: whole chips only
# (no core partitions, whose counters would be dropped) and unhealthy chips left out of the pool
# (no taints), and still publish AWS's UltraServer node device on a trn2u (without counters).
# Checked: the fallbacks, claims for 1, 4 connected and all chips and LNC 1, a prioritized list
# (each container its request's chip and cores), admin access beside a workload, AWS's UltraServer
# template on a trn2u, an UltraServer workload reserving it (strangers' chip claims wait, the
# owner's pod runs), a fault that takes a chip out and the recovery that brings it back,
# unprepare, and helm test where every node is in DRA mode.
#
# The checks are in cases/dra_134/*.sh and cases/dra_common/*.sh (what dra_test.sh checks too),
# sourced in order on the one cluster; the JSON they read is checked by the named functions of
# checks/ (run by e2e_checks.py).
#
# Usage: tests/e2e/cluster/dra_134_test.sh [--keep]   (--keep leaves the cluster running)
# Needs root. Prints 'N passed, N failed'; exits non-zero on any failure. Every wait is bounded.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
source "$REPO/tests/e2e/cluster/lib.sh"
source "$REPO/tests/e2e/cluster/dra_lib.sh"
source "$REPO/tests/e2e/cluster/ultraserver_lib.sh"
K8S_134=v1.34.4

cluster_test_setup torus-dra-134 "${1:-}"

# The pods below run on the trn2 (NODE_NAME); the trn2u of an UltraServer is for AWS's template.
cluster_up_for_test "local cluster in DRA mode on Kubernetes $K8S_134" --dra \
  --k8s-version="$K8S_134" --nodes=trn2.48xlarge:1,trn2u.48xlarge:1@us0 --set ultraserverOperator.enabled=true
PIN_NODE="$NODE_NAME"
TRN2U_NODE="${names[1]}"

# trn2.48xlarge: 16 chips of 8 physical cores; LNC 2 makes 4 logical cores per chip.
CORES_PER_DEVICE=4
EXPECTED_LNC=2
export CORES_PER_DEVICE EXPECTED_LNC

# Prioritized lists and admin access are on by default (beta) in 1.34 already.
# TORUS_E2E_CASES="dra_134/fault" runs only those (a developer's loop; CI runs all).
for case in ${TORUS_E2E_CASES:-dra_134/fallbacks dra_common/chip_examples dra_common/prioritized_list \
  dra_common/admin_access dra_134/ultraserver_node dra_134/reservation dra_134/fault dra_134/helm_test}; do
  source "$REPO/tests/e2e/cluster/cases/$case.sh"
done

uninstall_and_report
