# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# The node agent, with a token bound to its pod, writes only its own Node and the pods bound to
# it, and only the fields it owns; a token not bound to its pod writes nothing.

echo "== the node agent writes only its own Node and the pods bound to it"
# Node B is the second real node, with a pod of its own. The agent's token is one bound to its
# pod, as kubelet mounts it, so the API server names the agent's node in it.
node_b="${names[1]}"
pod_manifest on-node-a neuroncore 4 neuron-scheduler 600 | k apply -f - > /dev/null
PIN_NODE="$node_b" pod_manifest on-node-b neuroncore 1 neuron-scheduler 600 | k apply -f - > /dev/null
check "a pod on the agent's node and one on node B run" eventually 90 all_running on-node-a on-node-b
agent_pod="$(agent_pods -o jsonpath='{.items[0].metadata.name}')"
agent_sa="$(k get pod -n kube-system "$agent_pod" -o jsonpath='{.spec.serviceAccountName}')"
agent_token="$(k create token -n kube-system "$agent_sa" --duration 10m --bound-object-kind Pod \
  --bound-object-name "$agent_pod" \
  --bound-object-uid "$(k get pod -n kube-system "$agent_pod" -o jsonpath='{.metadata.uid}')")"
unbound_token="$(k create token -n kube-system "$agent_sa" --duration 10m)"
CA_FILE="$(k config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority}')"
# as_agent TOKEN WANT_CODE PATCH_TYPE PATH BODY [WANT_MESSAGE]: a PATCH with the token gets WANT_CODE.
as_agent() {
  local token="$1" want="$2" type="$3" path="$4" body="$5" message="${6:-}" code
  code="$(curl -s -o "$STATE_DIR/patch-reply.json" -w '%{http_code}' --max-time 10 \
    --cacert "$CA_FILE" -H "Authorization: Bearer $token" -X PATCH \
    -H "Content-Type: application/$type-patch+json" "https://$APISERVER_HOST:$APISERVER_PORT$path" -d "$body")"
  cat "$STATE_DIR/patch-reply.json"
  [[ "$code" == "$want" ]] || { echo "HTTP $code, want $want"; return 1; }
  [[ -z "$message" ]] || grep -q "$message" "$STATE_DIR/patch-reply.json"
}
check "the agent of node A may label its own Node (torus.dev/*)" as_agent "$agent_token" 200 merge \
  "/api/v1/nodes/$NODE_NAME" '{"metadata":{"labels":{"torus.dev/e2e-probe":"a"}}}'
check "...and mark a pod on node A allocated" as_agent "$agent_token" 200 merge \
  /api/v1/namespaces/e2e/pods/on-node-a '{"metadata":{"annotations":{"NEURON_ALLOCATED":"true"}}}'
check "...is refused a patch of node B" as_agent "$agent_token" 403 merge "/api/v1/nodes/$node_b" \
  '{"metadata":{"labels":{"torus.dev/lnc":"1"}}}' "may change only its own Node, not $node_b"
check "...and of a pod on node B" as_agent "$agent_token" 403 merge \
  /api/v1/namespaces/e2e/pods/on-node-b '{"metadata":{"annotations":{"AWS_NEURON_IDS":"0"}}}' \
  "may change only pods bound to its node"
check "...and any label of its Node it does not own" as_agent "$agent_token" 403 merge \
  "/api/v1/nodes/$NODE_NAME" '{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}' \
  "may not change the labels node-role.kubernetes.io/control-plane"
check "...and cordoning its Node" as_agent "$agent_token" 403 merge "/api/v1/nodes/$NODE_NAME" \
  '{"spec":{"unschedulable":true}}' "may not change a spec"
check "...and tainting its Node with any taint but its own" as_agent "$agent_token" 403 merge \
  "/api/v1/nodes/$NODE_NAME" '{"spec":{"taints":[{"key":"evil","effect":"NoSchedule"}]}}' \
  "may not change a spec"
check "...but may set and remove its restarting taint" as_agent "$agent_token" 200 merge \
  "/api/v1/nodes/$NODE_NAME" \
  '{"spec":{"taints":[{"key":"torus.dev/device-plugin-restarting","effect":"NoSchedule"}]}}'
check "...(removed)" as_agent "$agent_token" 200 merge "/api/v1/nodes/$NODE_NAME" '{"spec":{"taints":null}}'
check "...and any condition but NeuronHealthy and AWS's NeuronHealth" as_agent "$agent_token" 403 \
  strategic-merge "/api/v1/nodes/$NODE_NAME/status" \
  '{"status":{"conditions":[{"type":"Ready","status":"False"}]}}' \
  "only its Node's NeuronHealthy, NeuronHealth conditions"
check "...and the image of a pod on its own node" as_agent "$agent_token" 403 strategic-merge \
  /api/v1/namespaces/e2e/pods/on-node-a '{"spec":{"containers":[{"name":"app","image":"evil"}]}}' \
  "may not change a spec"
check "...and an annotation of that pod it does not own" as_agent "$agent_token" 403 merge \
  /api/v1/namespaces/e2e/pods/on-node-a '{"metadata":{"annotations":{"owner":"me"}}}' \
  "may not change the annotations owner"
check "a token of the agent's account not bound to its pod may write nothing" as_agent \
  "$unbound_token" 403 merge "/api/v1/nodes/$NODE_NAME" \
  '{"metadata":{"labels":{"torus.dev/e2e-probe":"b"}}}' "token names no node"
k label node "$NODE_NAME" torus.dev/e2e-probe- > /dev/null
k delete pod -n e2e on-node-a on-node-b --wait=false > /dev/null
