# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# A pod that fits no node says why; a full node's /metrics name every pod on the cores kubelet
# lists for it; a Pending pod runs once pods are deleted, and the deleted pods leave /metrics.

echo "== a pod that fits no node"
pod_manifest too-big neuroncore 65 neuron-scheduler | k apply -f - > /dev/null
pending_with_reason() {
  [[ "$(pod_phase too-big)" == Pending ]] || return 1
  k get pod -n e2e too-big -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}' |
    grep -q 'aws.amazon.com/neuroncore'
}
check "a 65-core pod stays Pending and says why" eventually 30 pending_with_reason
k delete pod -n e2e too-big --wait=false > /dev/null

echo "== a full node: a Pending pod runs after deletions; preemption frees a valid shape"
# fill_node PREFIX: 16 pods of 4 cores, one per device, at the default priority.
fill_node() {
  local n
  for n in $(seq 1 16); do
    pod_manifest "$1-$n" neuroncore 4 neuron-scheduler 600 | k apply -f - > /dev/null
  done
  check "16 pods of 4 cores fill the node ($1)" eventually 120 all_running $(printf "$1-%s " $(seq 1 16))
}
fill_node low

echo "== per-pod metrics: each core's series names the pod kubelet says holds it"
# metrics_name_holders [GONE...]: every holder in /allocations (kubelet's pod-resources) has its
# cores in torus_allocation_info and its name on those cores' series; the GONE pods appear nowhere.
metrics_name_holders() {
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" > "$STATE_DIR/metrics.txt" || return 1
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/allocations" > "$STATE_DIR/allocations.json" || return 1
  checks_py metrics-name-holders "$STATE_DIR/metrics.txt" "$STATE_DIR/allocations.json" "$@"
}
check "/metrics names all 16 pods on exactly the cores kubelet lists for them" eventually 10 metrics_name_holders
promtool_passes() {
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" | promtool check metrics
}
check "...and passes promtool check metrics" promtool_passes
deleted_pods=("$(pod_on_device 0)" "$(pod_on_device 1)")

pod_manifest waiter neuroncore 8 neuron-scheduler 600 | k apply -f - > /dev/null
waits() {
  [[ "$(pod_phase waiter)" == Pending ]] &&
    k get pod -n e2e waiter -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}' |
    grep -q Unschedulable
}
check "an 8-core pod waits on the full node" eventually 30 waits
k delete pod -n e2e "${deleted_pods[@]}" --wait=false > /dev/null
check "...and runs once the pods on devices 0 and 1 are deleted" eventually 90 pod_running waiter
check "the deleted pods' names are gone from /metrics" eventually 10 metrics_name_holders "${deleted_pods[@]}"
