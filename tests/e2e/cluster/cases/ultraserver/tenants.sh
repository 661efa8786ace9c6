# Sourced by ultraserver_test.sh (its helpers, lib.sh's and dra_lib.sh's and the cluster are in scope).
# One tenant's API error stays that tenant's: a namespace whose quota refuses ResourceClaimTemplates
# gets its workload marked Degraded with the API's words, and a workload of another namespace,
# created after it, still gets its status (the operator's pass used to stop at the first error).

echo "== a workload its namespace's quota refuses a template is Degraded; the others go on"
k create namespace e2e-quota > /dev/null
k apply -f - > /dev/null <<'YAML'
apiVersion: v1
kind: ResourceQuota
metadata: {name: no-templates, namespace: e2e-quota}
spec:
  hard: {count/resourceclaimtemplates.resource.k8s.io: "0"}
YAML
k apply -f - > /dev/null <<'YAML'
apiVersion: neuron.aws.com/v1beta1
kind: NeuronUltraServerWorkload
metadata: {name: refused, namespace: e2e-quota}
spec:
  instanceType: trn2u.48xlarge
  topologySize: 1
  serverCount: 1
  allocationPolicy: {failureStrategy: RestartAll}
  resourceClaimTemplate: {name: refused}
YAML
workload third 1 RestartAll
degraded_by_quota() {
  local reason message
  reason="$(k get nusw -n e2e-quota refused -o jsonpath='{.status.conditions[?(@.type=="Degraded")].reason}')"
  message="$(k get nusw -n e2e-quota refused -o jsonpath='{.status.conditions[?(@.type=="Degraded")].message}')"
  echo "Degraded: ${reason:-none}: $message"
  [[ "$reason" == ClaimTemplateNotWritten && "$message" == *"exceeded quota"* ]]
}
check "the refused workload is Degraded, naming the quota" eventually 60 degraded_by_quota
check "a workload of another namespace, created after it, has its status (Pending)" \
  eventually 60 state_is third Pending
k delete nusw -n e2e third --wait=false > /dev/null
k delete nusw -n e2e-quota refused --wait=false > /dev/null
gone() { ! k get nusw -n e2e third > /dev/null 2>&1 && ! k get nusw -n e2e-quota refused > /dev/null 2>&1; }
check "both are released when deleted" eventually 60 gone
k delete namespace e2e-quota --wait=false > /dev/null

echo "== a claim forging a workload's annotation is refused at admission"
# The reservation trusts neuron.aws.com/workload on a claim in the workload's namespace; the chart's
# ValidatingAdmissionPolicy keeps the annotation to the operator (templates) and the resource-claim
# controller (claims it makes from them). Here the cluster's administrator tries it, in the
# workload's own namespace.
forged_claim_refused() {
  local out
  if out="$(k apply -f - 2>&1 <<'YAML'
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: forged
  namespace: e2e
  annotations: {neuron.aws.com/workload: e2e/first}
spec:
  devices:
    requests:
      - name: node
        exactly: {deviceClassName: neuronnode.neuron.aws.com}
YAML
)"; then
    k delete resourceclaim -n e2e forged --wait=false > /dev/null 2>&1
    echo "created: $out"
    return 1
  fi
  echo "$out"
  [[ "$out" == *"neuron.aws.com/workload"*"reserves an UltraServer"* ]]
}
check "a ResourceClaim carrying another's workload annotation is refused, naming it" \
  forged_claim_refused
