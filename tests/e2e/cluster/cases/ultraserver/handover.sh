# Sourced by ultraserver_test.sh (its helpers, lib.sh's and dra_lib.sh's and the cluster are in scope).
# Deleting the first workload releases the UltraServer to the waiting one, whose pod runs with its
# node's UltraServer environment.

echo "== deleting the first workload releases the UltraServer to the second"
k delete nusw -n e2e "$first" --wait=false > /dev/null
first_gone() {
  ! k get nusw -n e2e "$first" > /dev/null 2>&1 || { echo "$first: $(state_of "$first")"; return 1; }
  # Its Job's pods finished before: they hold no claim, so the operator leaves them to the Job.
  local phases
  phases="$(k get pods -n e2e -l "job-name=$first" -o jsonpath='{.items[*].status.phase}')"
  [[ -z "$(tr ' ' '\n' <<< "$phases" | grep -vE '^(Succeeded|Failed|)$')" ]] ||
    { echo "its pods are not finished: $phases"; return 1; }
  ! k get resourceclaimtemplate -n e2e "$first" > /dev/null 2>&1 || { echo "its template remains"; return 1; }
}
check "$first and its template are gone, and no pod of it runs" eventually 90 first_gone
check "second is Allocated" eventually 60 state_is second Allocated
check "its pod runs" eventually 120 pod_running second-0
env_is_the_nodes() {
  ultraserver_environment second-0 "$(k get pod -n e2e second-0 -o jsonpath='{.spec.nodeName}')" 4
}
check "...with its node's UltraServer environment" env_is_the_nodes
k delete pod -n e2e second-0 --wait=true > /dev/null
