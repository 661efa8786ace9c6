#!/usr/bin/env bash
# End-to-end on several real nodes: scripts/local-cluster.sh brings up five kubelets, each in its
# own mount and network namespace — the four trn2u.48xlarge nodes of one simulated UltraServer and
# a trn2.48xlarge — with the simulated driver's files at the real driver's paths (its devices
# served by neuron-sim-driver as the driver serves them), and installs Torus from the chart's
# production values. Checked: each node is seen as its own (devices, UltraServer place, address:
# logs, exec and top), the agent's pod is the production one (args, mounts, capabilities:
# rendered and diffed) and a write production forbids fails, pods land where they are sent, gangs
# start whole on one UltraServer or not at all (holding nothing meanwhile), Kueue and
# LeaderWorkerSet place jobs and groups on Torus's UltraServer label (--placers=kueue,lws), an
# AllReduce runs between pods on the UltraServer's four nodes over libfabric tcp and a dead rank
# stops the others, a chip whose reset fails holds its pod back until a reset succeeds, and one
# node's loss leaves the others' pods alone and heals when it returns.
#
# The checks are in cases/multinode/*.sh, sourced in order on the one cluster; the JSON they read
# is checked by the named functions of checks/ (run by e2e_checks.py).
#
# Usage: tests/e2e/cluster/multinode_test.sh [--keep]   (--keep leaves the cluster running)
# Needs root. Prints 'N passed, N failed'; exits non-zero on any failure. Bounded: every wait has
# a deadline.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
source "$REPO/tests/e2e/cluster/lib.sh"

cluster_test_setup torus-multinode "${1:-}"

cluster_up_for_test "five real nodes: an UltraServer of four trn2u and a trn2" \
  --nodes=trn2u.48xlarge:4@us0,trn2.48xlarge:1 --placers=kueue,lws
ULTRASERVER=(0 1 2 3)  # indices of the UltraServer's nodes in names; the trn2 is index 4
TRN2=4
neuron_cli() { "$REPO/build/bin/kubectl-neuron" "$@"; }
agent_pod_on() {
  k get pods -n kube-system -l app.kubernetes.io/component=node-agent \
    --field-selector "spec.nodeName=$1" -o 'jsonpath={.items[0].metadata.name}'
}
# pinned_pod NAME NODE [SECONDS]: four devices (a trn2 shape) through neuron-scheduler, on NODE.
pinned_pod() {
  local name="$1" node="$2"
  pod_manifest "$name" neuron 4 neuron-scheduler "${3:-0}" |
    sed "s|^spec:|spec:\n  nodeSelector: {kubernetes.io/hostname: $node}|"
}

# TORUS_E2E_CASES="reset_failure" runs only those (a developer's loop; CI runs all).
for case in ${TORUS_E2E_CASES:-every_node production_agent placement placers allreduce reset_failure \
  node_lost}; do
  source "$REPO/tests/e2e/cluster/cases/multinode/$case.sh"
done

echo
echo "$PASSED passed, $FAILED failed ($((SECONDS - started)) s)"
((FAILED == 0))
