# Sourced by ultraserver_test.sh (its helpers, lib.sh's and dra_lib.sh's and the cluster are in scope).
# A workload's template is its own: a template of its name that another owns makes it Failed
# before anything is reserved. Deleting a workload whose pods a Deployment keeps making deletes
# its template first, evicts its pods, releases its UltraServer, and names the Deployment; a pod
# of no workload is never touched.

echo "== a workload whose template name is taken by someone else's reserves nothing"
claim_template clash neuron.aws.com  # a plain template, owned by no workload
workload clash 1 NoOp
clash_failed() {
  state_is clash Failed || return 1
  local reason
  reason="$(k get nusw -n e2e clash -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}')"
  [[ "$reason" == ClaimTemplateExists ]] || { echo "Ready reason: $reason"; return 1; }
}
check "clash is Failed (ClaimTemplateExists)" eventually 60 clash_failed
holds_nothing() {
  ! us_json | grep -q '"e2e/clash"' || { echo "an allocation names e2e/clash"; return 1; }
  tagged_is clash ""
}
check "...and was never given a node" holds_nothing
check "the other template is left as it was" k get resourceclaimtemplate -n e2e clash
k delete nusw -n e2e clash --wait=false > /dev/null
k delete resourceclaimtemplate -n e2e clash > /dev/null

echo "== deleting a workload whose pods a Deployment keeps making releases it and names the Deployment"
workload kept 1 NoOp
deployment kept-app kept 1
check "kept's pod runs" eventually 120 count_running kept-app 1
# A bystander: a pod of no workload in the same namespace.
k run -n e2e bystander --image=public.ecr.aws/docker/library/debian:bookworm-slim --restart=Never \
  --overrides='{"spec":{"terminationGracePeriodSeconds":1}}' -- sleep infinity > /dev/null
check "the bystander runs" eventually 60 pod_running bystander
bystander_uid="$(k get pod -n e2e bystander -o jsonpath='{.metadata.uid}')"
k delete nusw -n e2e kept --wait=false > /dev/null
kept_released() {
  ! k get nusw -n e2e kept > /dev/null 2>&1 || { echo "kept: $(state_of kept)"; return 1; }
  ! us_json | grep -q '"e2e/kept"' || { echo "an allocation still names e2e/kept"; return 1; }
  ! k get resourceclaimtemplate -n e2e kept > /dev/null 2>&1 || { echo "its template remains"; return 1; }
}
check "kept is released and gone, its template first deleted" eventually 90 kept_released
names_the_deployment() {
  k get events -n e2e --field-selector involvedObject.name=kept,reason=PodsStillCreated \
    -o jsonpath='{.items[*].message}' | grep -q "Deployment e2e/kept-app"
}
check "a Warning Event names Deployment e2e/kept-app, which keeps making its pods" names_the_deployment
evicted_once() {
  local n
  n="$(k get events -n e2e --field-selector involvedObject.name=kept,reason=EvictedPod -o name | wc -l)"
  [[ "$n" == 1 ]] || { echo "$n EvictedPod Events, want 1"; return 1; }
}
check "its one pod was evicted once (Event EvictedPod)" evicted_once
bystander_untouched() {
  [[ "$(k get pod -n e2e bystander -o jsonpath='{.metadata.uid}/{.status.phase}')" == "$bystander_uid/Running" ]]
}
check "the bystander was not touched" bystander_untouched
k delete deploy -n e2e kept-app --wait=false > /dev/null
k delete pod -n e2e bystander --wait=false > /dev/null
