# Sourced by multinode_test.sh (its helpers, cluster, names and ips are in scope).
# One node lost (its kubelet and containerd stopped) and back: nothing is placed there meanwhile,
# the others' pods run on, and its agent registers again within 10 s.

echo "== one node lost and back"
for index in 0 1; do
  pinned_pod "stay-$index" "${names[$index]}" 600 | k apply -f - > /dev/null
done
both_running() { pod_running stay-0 && pod_running stay-1; }
check "a pod runs on each of the first two nodes" eventually 90 both_running
lost="${names[2]}"
cluster stop "kubelet-$lost" > /dev/null
cluster stop "containerd-$lost" > /dev/null
node_not_ready() {
  [[ "$(k get node "$lost" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" != True ]]
}
check "$lost goes NotReady once its kubelet and containerd stop" eventually 60 node_not_ready
pinned_pod lost-pod "$lost" | k apply -f - > /dev/null
# The scheduler has looked at the pod and found no node for it (the lost node's not-ready taint):
# from then on the pod waits, unbound, until the node is back.
not_placed() {
  [[ "$(k get pod -n e2e lost-pod -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}')" == Unschedulable ]] ||
    { echo "lost-pod not marked Unschedulable yet"; return 1; }
  [[ -z "$(k get pod -n e2e lost-pod -o jsonpath='{.spec.nodeName}')" ]] ||
    { echo "lost-pod bound to $(k get pod -n e2e lost-pod -o jsonpath='{.spec.nodeName}')"; return 1; }
}
check "nothing is placed on the lost node: the scheduler keeps the pod waiting" eventually 30 not_placed
check "the other nodes' pods keep running" both_running
kubelet_log="$STATE_DIR/logs/kubelet-$lost.log"
lines_before="$(wc -l < "$kubelet_log")"
cluster start "containerd-$lost" > /dev/null
cluster start "kubelet-$lost" > /dev/null
node_ready_again() {
  [[ "$(k get node "$lost" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]
}
check "$lost is Ready again once they start" eventually 90 node_ready_again
registered_within_10s() {
  local log socket_at last_at resource apart
  log="$(tail -n +"$((lines_before + 1))" "$kubelet_log")"
  for resource in neuroncore neuron; do
    grep -q "Got registration request from device plugin with resource.*aws.amazon.com/$resource\"" <<< "$log" ||
      { echo "$resource not registered yet"; return 1; }
  done
  socket_at="$(klog_seconds "$(grep -m1 'Creating device plugin registration server' <<< "$log")")"
  last_at="$(klog_seconds "$(grep 'Got registration request from device plugin' <<< "$log" | tail -1)")"
  apart="$(checks_py at-most-seconds-apart "$socket_at" "$last_at" 10)" || return 1
  echo "registered $apart after the kubelet made its socket"
}
check "its agent registers both resources within 10 s of the kubelet's socket" eventually 60 registered_within_10s
echo "      $(registered_within_10s | tail -1)"
check "the pod sent there runs now" eventually 120 pod_succeeded lost-pod
check "the other nodes' pods ran on throughout" both_running
