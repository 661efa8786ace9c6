# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# Preemption on a full node frees a valid shape: kube-scheduler's own for a core pod, the
# extender's through the Eviction API for a device pod (kube-scheduler counts the two resources
# apart), evicting only the pods on the new pod's set.

# Pods newer than the rest on scattered devices: kube-scheduler's count-based victims are the
# newest pods, and evicting them alone opens no 16-core set.
for device in 5 10 15; do
  old="$(pod_on_device "$device")"
  k delete pod -n e2e "$old" --wait=false > /dev/null
  pod_manifest "newer-$device" neuroncore 4 neuron-scheduler 600 | k apply -f - > /dev/null
  check "newer-$device replaces $old on device $device" eventually 90 pod_running "newer-$device"
done
k get pods -n e2e -o json > "$STATE_DIR/pods-before-preemption.json"
k create priorityclass e2e-high --value=1000 --description="e2e preemptor" > /dev/null
pod_manifest high neuroncore 16 neuron-scheduler 0 e2e-high | k apply -f - > /dev/null
check "a priority-1000 16-core pod preempts its way onto the full node" eventually 120 pod_succeeded high
check "...on one NeuronLink-connected set" check_pod_saw high neuroncore 16
# victims_freed_exactly CORES: the pods gone since pods-before-preemption.json held exactly CORES (the
# node was full, so a minimal choice evicts the pods on the new pod's cores and no other).
victims_freed_exactly() {
  k get pods -n e2e -o json > "$STATE_DIR/pods-now.json" || return 1
  checks_py victims-freed-exactly "$1" "$STATE_DIR/pods-before-preemption.json" \
    "$STATE_DIR/pods-now.json" "$CORES_PER_DEVICE"
}
only_overlapping_victims() {
  victims_freed_exactly "$(pod_report high | sed -n 's/^CORES=//p')"
}
check "...evicting only the pods on that set" only_overlapping_victims
k delete pods -n e2e -l e2e=neuron --wait=false > /dev/null

# Core pods leave no device free, and kube-scheduler counts the two resources apart: it never
# preempts for a device pod here. The extender does, through the Eviction API.
fill_node core
k get pods -n e2e -o json > "$STATE_DIR/pods-before-preemption.json"
pod_manifest high-devices neuron 4 neuron-scheduler 0 e2e-high | k apply -f - > /dev/null
check "a priority-1000 pod of 4 devices preempts 4-core pods" eventually 150 pod_succeeded high-devices
check "...and gets one NeuronLink-connected set" check_pod_saw high-devices neuron 4
only_overlapping_victims_of_devices() {
  local cores
  cores="$(pod_report high-devices | sed -n 's/^CORES=//p')"
  victims_freed_exactly "$cores"
}
check "...evicting only the pods on those devices" only_overlapping_victims_of_devices
preempting_event() {
  k get events -n e2e --field-selector involvedObject.name=high-devices -o jsonpath='{.items[*].reason}' |
    grep -q NeuronPreempting
}
check "...with a NeuronPreempting event on the pod" preempting_event
preemptions_counted() {
  curl -sf "http://$EXTENDER_HOST:$EXTENDER_PORT/metrics" |
    grep -q '^torus_extender_cross_resource_evictions_total{result="evicted"} 4$'
}
check "...counted in the extender's /metrics" preemptions_counted
k delete pods -n e2e -l e2e=neuron --wait=false > /dev/null
k delete priorityclass e2e-high > /dev/null
