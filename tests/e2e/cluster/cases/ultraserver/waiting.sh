# Sourced by ultraserver_test.sh (its helpers, lib.sh's and dra_lib.sh's and the cluster are in scope).
# A second 4-node workload waits while the first holds the UltraServer, holding nothing.

echo "== a second 4-node workload waits, holding nothing"
workload second 4 RestartAll
waits_naming_first() {
  state_is second Pending || return 1
  local message
  message="$(k get nusw -n e2e second -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')"
  echo "$message"
  [[ "$message" == *"held by e2e/$first"* ]]
}
check "workload second is Pending and its status names e2e/$first" eventually 60 waits_naming_first
dra_pod second-0 second 3600  # on the first node (dra_lib.sh), which the workload will hold
check "its pod waits unscheduled" eventually 60 unschedulable second-0
holds_nothing() {
  k get resourceclaims -n e2e -o json | checks_py no-claim-allocated-for e2e/second || return 1
  tagged_is second ""
}
check "...and holds no device: no claim of it allocated, no device tagged for it" holds_nothing
