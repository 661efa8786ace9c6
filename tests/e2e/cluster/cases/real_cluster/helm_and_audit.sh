# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# helm test and upgrade, an agent without hostPID not Ready (it could not see who holds a
# device), and no 403 for the chart's ServiceAccounts in the audit log.

echo "== helm test and upgrade"
check "helm test" "$HELM" --kubeconfig "$KUBECONFIG" test torus -n kube-system --timeout 2m
check "helm upgrade with a changed value" "$HELM" --kubeconfig "$KUBECONFIG" upgrade torus \
  "$REPO/helm/torus" -n kube-system --reuse-values --set nodeAgent.logLevel=debug --wait --timeout 3m
check "the upgraded agent runs with the new value" eventually 60 sh -c \
  "'$KUBECTL' --kubeconfig '$KUBECONFIG' get ds -n kube-system -o jsonpath='{.items[0].spec.template.spec.containers[0].args}' | grep -q -- --log-level=debug"

echo "== an agent without hostPID says it cannot find a device's holders, and is not Ready"
# In its own PID namespace the agent would see no process holding a device and reset under one;
# the grant probe must notice, not pass on the agent's own container.
check "helm upgrade with nodeAgent.hostPID=false" "$HELM" --kubeconfig "$KUBECONFIG" upgrade torus \
  "$REPO/helm/torus" -n kube-system --reuse-values --set nodeAgent.hostPID=false --timeout 3m
# The DaemonSet replaces one agent at a time and stalls at the first one not Ready: that one, on
# whichever node it is, is "the agent without hostPID": its host IP and readiness.
agent_without_host_pid() {
  k get pods -n kube-system -l app.kubernetes.io/component=node-agent -o \
    jsonpath='{range .items[*]}{.status.hostIP} {.status.containerStatuses[0].ready} {.spec.hostPID}{"\n"}{end}' |
    awk '$3 != "true" && $1 != "" { print $1, $2; exit }'
}
scan_denied() {
  local agent readyz
  agent="$(agent_without_host_pid)"
  [[ -n "$agent" ]] || { echo "no agent without hostPID runs yet"; return 1; }
  readyz="$(curl -s "http://${agent% *}:$AGENT_METRICS_PORT/readyz")"
  echo "$readyz"
  [[ "$readyz" == "not ready: denied: "*"process scan: "* ]] || return 1
  curl -sf "http://${agent% *}:$AGENT_METRICS_PORT/metrics" |
    grep -qx 'torus_agent_grant_denied{grant="process scan"} 1'
}
check "its /readyz names the process scan as denied, and so does torus_agent_grant_denied" \
  eventually 90 scan_denied
not_ready() { [[ "$(agent_without_host_pid)" == *" false" ]]; }
check "...and kubelet reports its pod not Ready" eventually 30 not_ready
check "helm upgrade back to hostPID" "$HELM" --kubeconfig "$KUBECONFIG" upgrade torus \
  "$REPO/helm/torus" -n kube-system --reuse-values --set nodeAgent.hostPID=true --wait --timeout 3m
check "the agent serves kubelet again" eventually 90 agent_serving

echo "== no Torus identity was refused by the API server"
refusals() {
  checks_py audit-refusals "$STATE_DIR/logs/audit.log" system:serviceaccount:kube-system:torus \
    system:serviceaccount:kube-system:neuron-scheduler
}
check "no 403 for the chart's ServiceAccounts in the audit log" refusals
