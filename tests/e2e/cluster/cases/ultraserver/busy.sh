# Sourced by ultraserver_test.sh (its helpers, lib.sh's and dra_lib.sh's and the cluster are in scope).
# An UltraServer where an ordinary claim holds a chip is not reserved: the workload waits, naming
# the claim, and is reserved once the claim is gone. (Reserved anyway, the claim's pod would run
# beside the workload, or, allocated just before the reservation's taint, never prepare while the
# workload's own pod could never be placed.)

echo "== a workload waits while an ordinary claim holds a chip of the UltraServer"
claim_template plain-chip neuron.aws.com
dra_pod plain-holder plain-chip 3600  # on the first node (dra_lib.sh)
check "an ordinary pod holds a chip of the UltraServer" eventually 90 pod_running plain-holder
workload busy-wait 4 NoOp
waits_naming_the_claim() {
  state_is busy-wait Pending || return 1
  local message
  message="$(k get nusw -n e2e busy-wait -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')"
  echo "$message"
  [[ "$message" == *"busy: $NODE_NAME (ResourceClaim e2e/plain-holder-"* ]]
}
check "the workload is Pending, naming the node and the claim" eventually 60 waits_naming_the_claim
check "...and holds no device" tagged_is busy-wait ""
k delete pod -n e2e plain-holder --wait=true > /dev/null
check "once the pod and its claim are gone, the workload is Allocated" \
  eventually 90 state_is busy-wait Allocated
k delete nusw -n e2e busy-wait --wait=false > /dev/null
busy_wait_gone() { ! k get nusw -n e2e busy-wait > /dev/null 2>&1 && tagged_is busy-wait ""; }
check "...and released when deleted" eventually 60 busy_wait_gone
k delete resourceclaimtemplate -n e2e plain-chip --wait=false > /dev/null
