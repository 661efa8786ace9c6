# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# Admission under churn: 200 short pods in bursts through neuron-scheduler, the agent
# still serving and never restarted after it; then the same with the agent restarted twice in the
# middle, through neuron-scheduler and through the default scheduler (the device plugin alone).

echo "== admission under churn: 200 short pods in bursts"
# stress_run SCHEDULER RUN MIX [ARGS...]: the pods of admission_stress.py, then gone. Two containers
# on one core at the same time fail the run; a disconnected set kubelet chose itself past the
# plugin's preference is printed as a finding (see the script's --help).
stress_run() {
  python3 "$REPO/tests/e2e/cluster/admission_stress.py" --kubectl "$KUBECTL" \
    --kubeconfig "$KUBECONFIG" --scheduler "$1" --run "$2" --mix "$3" --pods 200 \
    --node-dir "$SIMULATED_NODE_DIR" --node "$NODE_NAME" \
    --cores-per-device "$CORES_PER_DEVICE" --timeout 600 --disconnected-as-findings \
    --agent-logs "$STATE_DIR/logs" "${@:4}" \
    > "$STATE_DIR/$2.log" 2>&1
  local status=$?
  cat "$STATE_DIR/$2.log"
  k delete pods -n e2e -l "stress=$2" --wait=false > /dev/null
  return $status
}
# The run's figures, passed or not, and how long the agent held its pod-resources Lists back while
# kubelet had an allocation in flight (counters since the agent started).
stress_summary() {
  grep -E 'pods in|placement findings|FINDING|given back|held back' "$STATE_DIR/$1.log" |
    sed 's/^ */      /'
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" |
    grep -E '^torus_(pod_resources_lists_held|kubelet_double_allocations)' | sed 's/^/      /' ||
    true
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

# The agent restarted twice mid-run (its DaemonSet pod deleted): the stopping agent taints the node
# and waits for the pods bound here to be admitted; the next one serves kubelet only once it knows
# who holds what, and removes the taint. Through the default scheduler one resource only: with
# both, kube-scheduler counts each resource alone and kubelet refuses what the other one holds
# (docs/troubleshooting.md).
check "no pod fails admission while the agent restarts twice (neuron-scheduler)" \
  stress_run neuron-scheduler stress-restarts \
  neuroncore:1,neuroncore:4,neuron:1,neuron:4,neuron:16 --restart-agent-after 70,140
stress_summary stress-restarts
check "no pod fails admission while the agent restarts twice (default scheduler, 4 cores)" \
  stress_run default-scheduler stress-plain-restarts neuroncore:4 --restart-agent-after 70,140
stress_summary stress-plain-restarts
check "the node agent serves kubelet after the restarts" eventually 90 agent_serving
