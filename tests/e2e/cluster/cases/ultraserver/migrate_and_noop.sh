# Sourced by ultraserver_test.sh (its helpers, lib.sh's and dra_lib.sh's and the cluster are in scope).
# MigrateAffected moves only the pod on a lost node; NoOp reports the loss and moves nothing.

echo "== MigrateAffected moves only the affected pod; NoOp reports and moves nothing"
workload mover 1 MigrateAffected
workload stayer 1 NoOp
check "mover is Allocated" eventually 60 state_is mover Allocated
check "stayer is Allocated" eventually 60 state_is stayer Allocated
deployment mover mover 1
deployment stayer stayer 1
check "mover's pod runs" eventually 120 count_running mover 1
check "stayer's pod runs" eventually 120 count_running stayer 1
mover_before="$(running_pods mover)"
stayer_before="$(running_pods stayer)"
mover_node="${mover_before#*@}"
stayer_node="${stayer_before#*@}"
echo "      mover on $mover_node, stayer on $stayer_node"
stop_node "$mover_node"
stop_node "$stayer_node"
both_not_ready() { node_not_ready "$mover_node" && node_not_ready "$stayer_node"; }
check "both nodes go NotReady" eventually 60 both_not_ready
moved() {
  local now
  now="$(running_pods mover)"
  [[ -n "$now" && "${now#*@}" != "$mover_node" && "${now#*@}" != "$stayer_node" ]] ||
    { echo "mover's running pod: '$now'"; return 1; }
}
check "mover's pod runs again on a healthy node" eventually 180 moved
stayer_degraded() {
  state_is stayer Allocated || return 1
  local degraded
  degraded="$(k get nusw -n e2e stayer -o jsonpath='{.status.conditions[?(@.type=="Degraded")].status}/{.status.conditions[?(@.type=="Degraded")].reason}')"
  [[ "$degraded" == "True/NodeNotReady" ]] || { echo "Degraded: $degraded"; return 1; }
  k get pods -n e2e -l app=stayer -o jsonpath='{.items[*].metadata.uid}' | grep -q "${stayer_before%@*}" ||
    { echo "stayer's pod was deleted"; return 1; }
}
check "stayer stays Allocated, reported Degraded (NodeNotReady), its pod left alone" eventually 60 stayer_degraded
start_node "$mover_node"
start_node "$stayer_node"
both_ready() { node_ready "$mover_node" && node_ready "$stayer_node"; }
check "both nodes are Ready again" eventually 90 both_ready
stayer_runs_where_it_was() { [[ "$(running_pods stayer)" == "$stayer_before" ]]; }
check "stayer's pod runs on where it was" eventually 120 stayer_runs_where_it_was
