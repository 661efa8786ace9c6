# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# helm test and upgrade, and no 403 for the chart's ServiceAccounts in the audit log.

echo "== helm test and upgrade"
check "helm test" "$HELM" --kubeconfig "$KUBECONFIG" test torus -n kube-system --timeout 2m
check "helm upgrade with a changed value" "$HELM" --kubeconfig "$KUBECONFIG" upgrade torus \
  "$REPO/helm/torus" -n kube-system --reuse-values --set nodeAgent.logLevel=debug --wait --timeout 3m
check "the upgraded agent runs with the new value" eventually 60 sh -c \
  "'$KUBECTL' --kubeconfig '$KUBECONFIG' get ds -n kube-system -o jsonpath='{.items[0].spec.template.spec.containers[0].args}' | grep -q -- --log-level=debug"

echo "== no Torus identity was refused by the API server"
refusals() {
  checks_py audit-refusals "$STATE_DIR/logs/audit.log" system:serviceaccount:kube-system:torus \
    system:serviceaccount:kube-system:neuron-scheduler
}
check "no 403 for the chart's ServiceAccounts in the audit log" refusals
