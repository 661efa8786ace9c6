# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# Pods of every size through the default scheduler (the device plugin alone) and through the
# chart's second scheduler and the extender, with node names and then with whole Node objects.

check "kubelet advertises aws.amazon.com/neuroncore: 64" eventually 30 allocatable_is neuroncore 64
check "kubelet advertises aws.amazon.com/neuron: 16" eventually 30 allocatable_is neuron 16
check "the agent labels its node torus.dev/lnc=2" eventually 30 lnc_label_is 2

# run_pods SCHEDULER SUFFIX: pods of every size, one after the other (they exit after printing).
run_pods() {
  local scheduler="$1" suffix="$2" resource count name
  for spec in neuroncore:1 neuroncore:4 neuroncore:16 neuron:1 neuron:4 neuron:16; do
    resource="${spec%%:*}" count="${spec##*:}"
    name="$resource-$count-$suffix"
    pod_manifest "$name" "$resource" "$count" "$scheduler" | k apply -f - > /dev/null
    check "$name runs ($scheduler)" eventually 90 pod_succeeded "$name"
    check "$name saw $count $resource as one NeuronLink-connected set" check_pod_saw "$name" "$resource" "$count"
    if [[ "$scheduler" != default-scheduler ]]; then
      check "$name got the ids the extender wrote on it" check_handoff_honoured "$name"
    fi
    # No wait for the agent to see the pod gone: the next pod, of either resource, must run.
    k delete pod -n e2e "$name" --wait=false > /dev/null
  done
}

echo "== pods through the default scheduler (device plugin alone)"
run_pods default-scheduler plain
echo "== pods through the chart's second scheduler and the extender (nodeCacheCapable: true)"
run_pods neuron-scheduler extender

echo "== the same with whole Node objects in every extender call (nodeCacheCapable: false)"
scheduler_config_has() {
  k get configmap -n kube-system neuron-scheduler-config -o jsonpath='{.data.config\.yaml}' | grep -q "$1"
}
check "helm upgrade to nodeCacheCapable: false" "$HELM" --kubeconfig "$KUBECONFIG" upgrade torus \
  "$REPO/helm/torus" -n kube-system --reuse-values --set scheduler.nodeCacheCapable=false --wait --timeout 3m
check "the scheduler's config says so" scheduler_config_has "nodeCacheCapable: false"
run_pods neuron-scheduler full-nodes
