#!/usr/bin/env bash
# End-to-end of neuron-ultraserver-operator (AWS's NeuronUltraServerWorkload API) on the four real
# trn2u.48xlarge nodes of one simulated UltraServer, each a kubelet in its own namespaces running
# the DRA driver from the chart's production values (dra.enabled, ultraserverOperator.enabled).
# Checked: the NeuronUltraServer object the operator builds from the agents' labels; a 4-node
# workload reserved whole, its devices tagged, its ResourceClaimTemplate written, and
# deploy/examples/ultraserver-workload.yaml's AllReduce across the four nodes with the
# UltraServer environment as rank; a second workload waiting with a status naming why and holding
# no device, then running once the first is deleted; a workload whose namespace's quota refuses
# its template marked Degraded while another namespace's workload still gets its status; a claim
# of nobody's workload kept off the
# reserved chips by their taint, and refused at prepare naming the workload when it tolerates the
# taint; and the failure strategies when a node's kubelet
# stops: RestartAll (all pods restart once the UltraServer is whole again), MigrateAffected (only
# the affected pod moves) and NoOp (reported, nothing moved); leader election between two
# replicas; a chip's fault evicting a workload's pod (dra.taintEffect=NoExecute, set from the
# start: nothing else here faults a chip) and the pod back once the chip recovered; and no 403
# for Torus's identities in the API server's audit log.
#
# The checks are in cases/ultraserver/*.sh, sourced in order on the one cluster; the JSON they
# read is checked by the named functions of checks/ (run by e2e_checks.py).
#
# Usage: tests/e2e/cluster/ultraserver_test.sh [--keep]   (--keep leaves the cluster running)
# Needs root. Prints 'N passed, N failed'; exits non-zero on any failure. Every wait is bounded.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
source "$REPO/tests/e2e/cluster/lib.sh"
source "$REPO/tests/e2e/cluster/dra_lib.sh"
source "$REPO/tests/e2e/cluster/ultraserver_lib.sh"

cluster_test_setup torus-ultraserver "${1:-}"

# The operator stays on the node no check stops (torus-node-4: node id 3): a controller on a lost
# node stops with it, as it would in production (docs/ultraserver.md says where to run it).
cluster_up_for_test "an UltraServer of four trn2u nodes, DRA and the UltraServer operator" --dra \
  --nodes=trn2u.48xlarge:4@us0 --set ultraserverOperator.enabled=true \
  --set ultraserverOperator.failureGracePeriodSeconds=20 --set dra.taintEffect=NoExecute \
  --set 'ultraserverOperator.nodeSelector.kubernetes\.io/hostname=torus-node-4'
all_nodes="$(printf '%s\n' "${names[@]}" | sort | xargs)"
first=allreduce-us  # the workload of deploy/examples/ultraserver-workload.yaml

# TORUS_E2E_CASES="operator tenants" runs only those (a developer's loop; CI runs all).
for case in ${TORUS_E2E_CASES:-operator busy deletion allreduce waiting tenants reservation handover restart_all migrate_and_noop \
  eviction leader_election least_privilege}; do
  source "$REPO/tests/e2e/cluster/cases/ultraserver/$case.sh"
done

echo
echo "$PASSED passed, $FAILED failed ($((SECONDS - started)) s)"
((FAILED == 0))
