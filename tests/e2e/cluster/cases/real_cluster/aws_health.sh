# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# AWS's NeuronHealth condition from the kernel log within 2 s; HyperPod's label untouched.

echo "== AWS's health condition from the kernel log; HyperPod's label untouched"
k label node "$NODE_NAME" sagemaker.amazonaws.com/node-health-status=Schedulable --overwrite > /dev/null
neuron_health_reason() {
  k get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="NeuronHealth")].reason}'
}
neuron_health_is() { [[ "$(neuron_health_reason)" == "$1" ]]; }
check "NeuronHealth says NeuronHasNoError" eventually 30 neuron_health_is NeuronHasNoError
neuron_health_within_2s() {
  local started=$SECONDS reason
  echo "6,9001,1000,-;neuron: nd7: NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR" >> "$SIMULATED_NODE_DIR/dev/kmsg"
  local deadline=$(($(date +%s%N) + 2000000000))
  while (($(date +%s%N) < deadline)); do
    reason="$(neuron_health_reason)"
    if [[ "$reason" == NeuronHasError_HBM_UNCORRECTABLE_ERROR ]]; then
      echo "set within $((SECONDS - started)) s"
      return 0
    fi
    sleep 0.1
  done
  echo "NeuronHealth reason after 2 s: ${reason:-none}"
  return 1
}
check "an HBM uncorrectable error sets NeuronHealth NeuronHasError_HBM_UNCORRECTABLE_ERROR within 2 s" \
  neuron_health_within_2s
hyperpod_label_kept() {
  [[ "$(k get node "$NODE_NAME" -o 'jsonpath={.metadata.labels.sagemaker\.amazonaws\.com/node-health-status}')" == Schedulable ]]
}
check "...and leaves HyperPod's node-health-status label as it was" hyperpod_label_kept
k label node "$NODE_NAME" sagemaker.amazonaws.com/node-health-status- > /dev/null
