# Sourced by dra_134_test.sh (lib.sh's and dra_lib.sh's helpers and the cluster are in scope).
# The chart's own test where every Neuron node is in DRA mode.

echo "== helm test where every Neuron node is in DRA mode"
# Before 1.36 there is no aws.amazon.com/neuroncore on a DRA node: with dra.allNodes the chart's
# test pod asks for a chip by claim.
HELM="$REPO/build/tools/helm"
check "helm upgrade with dra.allNodes=true" "$HELM" --kubeconfig "$KUBECONFIG" upgrade torus \
  "$REPO/helm/torus" -n kube-system --reuse-values --set dra.allNodes=true --wait --timeout 3m
check "helm test" "$HELM" --kubeconfig "$KUBECONFIG" test torus -n kube-system --timeout 3m
