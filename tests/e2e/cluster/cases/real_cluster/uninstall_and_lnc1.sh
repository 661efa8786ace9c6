# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# helm uninstall leaves nothing behind, on the node either; a reinstall at LNC 1 doubles the
# core count and a 16-core pod runs on two connected devices.

echo "== helm uninstall"
check "helm uninstall" "$HELM" --kubeconfig "$KUBECONFIG" uninstall torus -n kube-system --wait --timeout 2m
leftover() {
  local left
  left="$(k get all,sa,role,rolebinding,configmap -n kube-system -l app.kubernetes.io/instance=torus -o name 2> /dev/null)"
  left+="$(k get clusterrole,clusterrolebinding -l app.kubernetes.io/instance=torus -o name 2> /dev/null)"
  [[ -z "$left" ]] || { echo "left behind: $left"; return 1; }
}
check "uninstall leaves none of the chart's objects" eventually 30 leftover
node_forgotten() {
  k get node "$NODE_NAME" -o json | checks_py node-forgotten
}
check "uninstall leaves no torus.dev label, annotation or NeuronHealthy condition" eventually 30 node_forgotten

echo "== LNC 1: the counts double"
check "helm install with nodeAgent.lnc=1" "$HELM" --kubeconfig "$KUBECONFIG" install torus \
  "$REPO/helm/torus" -n kube-system -f "$STATE_DIR/values-local.yaml" --set nodeAgent.lnc=1 \
  --wait --timeout 3m
check "kubelet advertises 128 cores at LNC 1" eventually 60 allocatable_is neuroncore 128
check "and still 16 devices" eventually 30 allocatable_is neuron 16
CORES_PER_DEVICE=8
EXPECTED_LNC=1
pod_manifest lnc1-cores neuroncore 16 | k apply -f - > /dev/null
check "a 16-core pod runs at LNC 1" eventually 90 pod_succeeded lnc1-cores
check "...on two NeuronLink-connected devices, with NEURON_LOGICAL_NC_CONFIG=1" \
  check_pod_saw lnc1-cores neuroncore 16
k delete pod -n e2e lnc1-cores --wait=false > /dev/null
check "helm uninstall (LNC 1)" "$HELM" --kubeconfig "$KUBECONFIG" uninstall torus -n kube-system \
  --wait --timeout 2m
