# Sourced by ultraserver_test.sh (its helpers, lib.sh's and dra_lib.sh's and the cluster are in scope).
# RestartAll: when a node of the workload has been lost for the failure grace period (the bed
# sets 20 s), every pod of it restarts, once, when the UltraServer is whole again.

echo "== RestartAll: a node lost, all four pods restart once the UltraServer is whole again"
deployment trainer second 4
check "four pods of workload second run, one per node" eventually 180 count_running trainer 4
# Each pod's whole-node claim opens its node's chips through the device rules, and no other minor.
trainer_device_rules() {
  local pod
  for pod in $(k get pods -n e2e -l app=trainer -o jsonpath='{.items[*].metadata.name}'); do
    device_rules_in e2e "$pod" > /dev/null || { echo "$pod:"; device_rules_in e2e "$pod"; return 1; }
  done
}
check "each pod's device rules open exactly its node's 16 chips" trainer_device_rules
before="$(running_pods trainer)"
# A cordon keeps new workloads off a node but moves nothing that runs there.
k cordon "${names[1]}" > /dev/null
# The NeuronUltraServer's Ready condition names the cordoned node once a pass has seen it.
seen_cordoned() { us_json | grep -q "(not: ${names[1]})"; }
check "the operator has seen the cordon" eventually 30 seen_cordoned
untouched() {
  [[ "$(running_pods trainer)" == "$before" ]] || { echo "pods now: $(running_pods trainer)"; return 1; }
  state_is second Allocated
}
check "a cordoned node restarts nothing under RestartAll" untouched
k uncordon "${names[1]}" > /dev/null
seen_uncordoned() { ! seen_cordoned; }
check "...and the uncordon" eventually 30 seen_uncordoned
lost="${names[2]}"
stop_node "$lost"
check "$lost goes NotReady" eventually 60 node_not_ready "$lost"
# Within the grace period (a kubelet restart) the workload is reported and nothing moves.
in_grace() {
  state_is second Allocated || return 1
  local degraded
  degraded="$(k get nusw -n e2e second -o jsonpath='{.status.conditions[?(@.type=="Degraded")].status}/{.status.conditions[?(@.type=="Degraded")].reason}/{.status.conditions[?(@.type=="Degraded")].message}')"
  [[ "$degraded" == "True/NodeNotReady/"*"grace period"* ]] || { echo "Degraded: $degraded"; return 1; }
  [[ "$(running_pods trainer)" == "$before" ]] || { echo "pods now: $(running_pods trainer)"; return 1; }
}
check "within the grace period second is Degraded (NodeNotReady) and keeps its pods" eventually 15 in_grace
# The lost node's agent is down with it, so its slices keep the old tag until it is back.
released() {
  state_is second Pending || return 1
  local tagged
  tagged="$(tagged_nodes second)"
  [[ "$tagged" == "" || "$tagged" == "$lost" ]] || { echo "still tagged: $tagged"; return 1; }
}
check "second is released (Pending, no healthy node's device tagged)" eventually 60 released
others_deleted() {
  local entry pod node
  for entry in $before; do
    node="${entry#*@}"
    [[ "$node" == "$lost" ]] && continue
    pod="${entry%@*}"
    ! running_pods trainer | grep -q "$pod" || { echo "pod $pod on $node still runs"; return 1; }
  done
}
check "the pods on the three healthy nodes are deleted too" eventually 60 others_deleted
start_node "$lost"
check "$lost is Ready again" eventually 90 node_ready "$lost"
all_new() {
  count_running trainer 4 || return 1
  local now entry
  now="$(running_pods trainer)"
  for entry in $before; do
    ! grep -q "${entry%@*}" <<< "$now" || { echo "old pod ${entry%@*} is still one of them"; return 1; }
  done
}
check "second is Allocated again and four new pods run" eventually 240 all_new
restarted_once() {
  local n
  n="$(k get events -n e2e --field-selector involvedObject.name=second,reason=RestartAll -o name | wc -l)"
  [[ "$n" == 1 ]] || { echo "$n RestartAll Events, want 1"; return 1; }
}
check "the job was restarted once (one RestartAll Event)" restarted_once
k delete deploy -n e2e trainer --wait=false > /dev/null
k delete nusw -n e2e second --wait=false > /dev/null
gone() { ! k get nusw -n e2e "$1" > /dev/null 2>&1; }
check "second is deleted" eventually 90 gone second
