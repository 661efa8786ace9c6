# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# The extender's POST /bind answers anyone who reaches its port. A caller binding someone else's
# pending pod to a node of its choosing is refused: the node was not passed by the extender's filter
# for that pod in a scheduling cycle, and with a forged filter request the pod's own node rules
# (here its nodeSelector) still keep it off. The bed's network does not enforce NetworkPolicy, so
# the chart's policy (which keeps other pods from connecting at all) is checked by the chart tests.

# A Neuron pod no node may take: kube-scheduler's NodeAffinity keeps it pending before the
# extender is ever asked about it.
PIN_NODE=no-such-node pod_manifest stray neuron 1 neuron-scheduler | k apply -f - > /dev/null
stray_uid="$(k get pod -n e2e stray -o jsonpath='{.metadata.uid}')"
extender_verb() {  # VERB BODY: the extender's answer
  curl -sf -X POST -H 'Content-Type: application/json' --data-binary "$2" \
    "http://$EXTENDER_HOST:$EXTENDER_PORT/$1"
}
bind_refused_with() {  # NODE TEXT: a bind of stray to NODE is refused with TEXT in its error
  local answer
  answer="$(extender_verb bind \
    "{\"PodName\":\"stray\",\"PodNamespace\":\"e2e\",\"PodUID\":\"$stray_uid\",\"Node\":\"$1\"}")" ||
    return 1
  grep -qF "$2" <<< "$answer" || { echo "answer: $answer"; return 1; }
}
check "a bind of someone else's pending pod to a node filter never passed is refused" \
  bind_refused_with "$NODE_NAME" "filter has not passed the pod"
# A forged filter for the pod over every node: the extender passes those where a device is free.
forged_filter_passes_a_node() {
  local all_nodes answer node
  all_nodes="$(k get nodes -o jsonpath='{range .items[*]}"{.metadata.name}",{end}')" || return 1
  answer="$(extender_verb filter \
    "{\"Pod\":$(k get pod -n e2e stray -o json),\"NodeNames\":[${all_nodes%,}]}")" || return 1
  node="$(grep -o '"NodeNames":\["[^"]*"' <<< "$answer" | sed 's/.*\["//; s/"$//')"
  [[ -n "$node" ]] || { echo "filter answer: $answer"; return 1; }
  echo "$node" > "$STATE_DIR/forged-node"
}
check "...a forged filter request passes a node for it" forged_filter_passes_a_node
forged_node="$(cat "$STATE_DIR/forged-node" 2> /dev/null || echo no-node-passed)"
check "...yet its nodeSelector keeps it off that node at bind" \
  bind_refused_with "$forged_node" \
  "does not match the pod's nodeSelector kubernetes.io/hostname=no-such-node"
stray_unbound() { [[ -z "$(k get pod -n e2e stray -o jsonpath='{.spec.nodeName}')" ]]; }
check "...and the pod stays unbound" stray_unbound
k delete pod -n e2e stray --wait=false > /dev/null

echo "== another controller's pod annotations survive Torus's bind and the agent's hand-off"
# OVN-Kubernetes keeps a pod's network in an annotation: a write that replaced the pod's
# annotations (the extender's Binding, the agent's hand-off) would drop it, and the pod would
# never get its network. One is set before the pod is scheduled, another once it runs.
OVN_NETWORKS='{"default":{"ip_addresses":["10.128.0.5/23"]}}'
pod_manifest annotated neuroncore 2 neuron-scheduler 15 |
  sed "s|^  labels: {e2e: neuron}|&\n  annotations: {k8s.ovn.org/pod-networks: '$OVN_NETWORKS'}|" |
  k apply -f - > /dev/null
check "a pod with another controller's annotation runs through the extender" \
  eventually 90 pod_running annotated
k annotate pod -n e2e annotated example.com/set-after-start=kept > /dev/null
others_and_ours_kept() {
  local ovn after ids
  ovn="$(annotation_of annotated 'k8s\.ovn\.org/pod-networks')"
  after="$(annotation_of annotated 'example\.com/set-after-start')"
  ids="$(annotation_of annotated AWS_NEURON_IDS)"
  [[ "$ovn" == "$OVN_NETWORKS" ]] || { echo "k8s.ovn.org/pod-networks: '$ovn'"; return 1; }
  [[ "$after" == kept ]] || { echo "example.com/set-after-start: '$after'"; return 1; }
  [[ -n "$ids" ]] || { echo "no AWS_NEURON_IDS: Torus's own keys are missing"; return 1; }
}
check "...both are unchanged beside Torus's AWS_NEURON_IDS" others_and_ours_kept
check "...and the pod ends having used the ids the extender wrote" eventually 60 pod_succeeded annotated
check "...its container saw them" check_handoff_honoured annotated
check "...and the annotations are still there" others_and_ours_kept
k delete pod -n e2e annotated --wait=false > /dev/null
