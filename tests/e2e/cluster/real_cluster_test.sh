#!/usr/bin/env bash
# End-to-end on a real Kubernetes: scripts/local-cluster.sh brings up upstream's API server,
# controller manager, scheduler and kubelet (built from their Go modules) with containerd and a
# simulated trn2.48xlarge node, installs Torus with `helm install`, and this script checks what
# Kubernetes and the workloads see: registration with the real kubelet, pods of every size through
# the default scheduler and through the chart's second scheduler and extender, the hand-off, helm
# test and upgrade, pods force-deleted while their containers run on (their successors start
# only once those have stopped), and that no Torus identity was ever refused by the API server.
#
# The checks are in cases/real_cluster/*.sh, sourced in order on the one cluster (a case may use
# what an earlier one left: the e2e namespace, the chart's values); the JSON they read is checked
# by the named functions of checks/ (run by e2e_checks.py).
#
# Usage: tests/e2e/cluster/real_cluster_test.sh [--keep]   (--keep leaves the cluster running)
# TORUS_E2E_CASES="case ..." runs only those cases of cases/real_cluster/, in that order.
# Needs root (kubelet, containerd). Prints 'N passed, N failed'; exits non-zero on any failure,
# printing the component logs that explain it. Bounded: every wait has a deadline.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
source "$REPO/tests/e2e/cluster/lib.sh"

cluster_test_setup torus-e2e "${1:-}"

# Four real nodes, as a cluster has: the trn2 the checks below count on (torus-node-1, NODE_NAME),
# a trn2u of a simulated UltraServer and an inf2.xlarge, each with its own agent, and a
# trn2.3xlarge, a type the chart does not list, which gets an agent only while unknown_type labels
# it. The pods here are pinned to the first node (PIN_NODE), since what they check is per node
# (ids, counts, kubelet's view); the others run beside it all along (multinode_test.sh checks what
# happens between nodes).
cluster_up_for_test "local cluster: trn2, trn2u, inf2 and trn2.3xlarge nodes" \
  --nodes=trn2.48xlarge:1,trn2u.48xlarge:1@us0,inf2.xlarge:1,trn2.3xlarge:1
PIN_NODE="$NODE_NAME"
# The node agent's pod on NODE_NAME.
agent_pods() {
  k get pods -n kube-system -l app.kubernetes.io/component=node-agent \
    --field-selector "spec.nodeName=$NODE_NAME" "$@"
}

node_is_ready() {
  [[ "$(k get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]
}

# trn2.48xlarge: 16 devices of 8 physical cores; LNC 2 makes 4 logical cores per device.
CORES_PER_DEVICE=4
EXPECTED_LNC=2
export CORES_PER_DEVICE EXPECTED_LNC

allocatable_is() {
  local have
  have="$(k get node "$NODE_NAME" -o "jsonpath={.status.allocatable.aws\.amazon\.com/$1}")"
  [[ "$have" == "$2" ]] || { echo "allocatable aws.amazon.com/$1: ${have:-none}"; return 1; }
}
# The agent serves kubelet: its pod is Ready, the restarting taint is gone and kubelet counts every
# id of both resources.
agent_serving() {
  [[ "$(agent_pods -o jsonpath='{.items[*].status.containerStatuses[0].ready}')" == true ]] || return 1
  ! k get node "$NODE_NAME" -o jsonpath='{.spec.taints[*].key}' | grep -q device-plugin-restarting ||
    { echo "the node still carries the restarting taint"; return 1; }
  allocatable_is neuroncore 64 && allocatable_is neuron 16
}
lnc_label_is() {
  [[ "$(k get node "$NODE_NAME" -o 'jsonpath={.metadata.labels.torus\.dev/lnc}')" == "$1" ]]
}
all_running() {
  local n
  for n in "$@"; do pod_running "$n" || { echo "$n: $(pod_phase "$n")"; return 1; }; done
}
HELM="$REPO/build/tools/helm"
neuron_cli() { KUBECONFIG="$KUBECONFIG" "$REPO/build/bin/kubectl-neuron" "$@"; }

# TORUS_E2E_CASES="admission_stress faults" runs only those (a developer's loop; CI runs all).
for case in ${TORUS_E2E_CASES:-device_plugin unknown_type extender_bind admission_stress full_node preemption force_delete faults \
  kubectl_neuron helm_and_audit node_agent_rbac aws_health debug_bundle exec_kubeconfig uninstall_and_lnc1}; do
  source "$REPO/tests/e2e/cluster/cases/real_cluster/$case.sh"
done

echo "took $((SECONDS - started)) s"
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
