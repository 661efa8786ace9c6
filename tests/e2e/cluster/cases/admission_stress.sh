# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# Admission under churn (issue 31): 200 short pods in bursts through neuron-scheduler, and the
# agent still serving and never restarted after it.

echo "== admission under churn: 200 short pods in bursts (issue 31)"
# stress_run SCHEDULER RUN MIX: the pods of admission_stress.py, then gone. Sets kubelet itself
# chose badly under this churn (shared, disconnected) are printed as findings, not failed: see the
# script's --help and issue 31's note.
stress_run() {
  python3 "$REPO/tests/e2e/cluster/admission_stress.py" --kubectl "$KUBECTL" \
    --kubeconfig "$KUBECONFIG" --scheduler "$1" --run "$2" --mix "$3" --pods 200 \
    --node-dir "$SIMULATED_NODE_DIR" --node "$NODE_NAME" \
    --cores-per-device "$CORES_PER_DEVICE" --timeout 600 --placement-as-findings \
    > "$STATE_DIR/$2.log" 2>&1
  local status=$?
  cat "$STATE_DIR/$2.log"
  k delete pods -n e2e -l "stress=$2" --wait=false > /dev/null
  return $status
}
# The run's figures, passed or not.
stress_summary() {
  grep -E 'pods in|placement findings|FINDING|given back' "$STATE_DIR/$1.log" | sed 's/^ */      /'
}
check "no pod placed by neuron-scheduler fails admission (1, 4 cores; 1, 4, 16 devices)" \
  stress_run neuron-scheduler stress-extender \
  neuroncore:1,neuroncore:4,neuron:1,neuron:4,neuron:16
stress_summary stress-extender
check "the node agent still serves kubelet after the churn" eventually 90 agent_serving
# Its container ran the whole churn: a restart here was once its memory limit (OOMKilled).
agent_never_restarted() {
  local restarts reason
  restarts="$(agent_pods -o jsonpath='{.items[0].status.containerStatuses[0].restartCount}')"
  reason="$(agent_pods -o jsonpath='{.items[0].status.containerStatuses[0].lastState.terminated.reason}')"
  [[ "$restarts" == 0 ]] || { echo "restarted $restarts times (last: ${reason:-unknown})"; return 1; }
}
check "the node agent's container was never restarted during the churn" agent_never_restarted
# Not run here yet: the same with the agent restarted twice mid-run (--restart-agent-after
# 70,140). Through neuron-scheduler the last runs lost 1 and 6 of 200 pods, 16-device pods bound
# around the second restart; through the default scheduler (neuroncore:4) 25 of 200. The
# restarting taint and the drain do not yet close that path (issue 31's note). By hand:
#   admission_stress.py --scheduler neuron-scheduler --restart-agent-after 70,140 ...
