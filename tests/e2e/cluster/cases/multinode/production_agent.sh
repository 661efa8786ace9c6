# Sourced by multinode_test.sh (its helpers, cluster, names and ips are in scope).
# The agent's pod is the chart's production one (args, mounts, capabilities), a write production
# forbids fails, and kubectl logs and kubectl neuron top reach every node's agent at its address.

echo "== the node agent is the production one"
no_simulate_argument() {
  local args
  args="$(k get pods -n kube-system -l app.kubernetes.io/component=node-agent -o jsonpath='{..args}')"
  echo "$args"
  [[ -n "$args" && "$args" != *simulate* ]]
}
check "no agent runs with a simulate argument" no_simulate_argument
agent_pod_matches_production() {
  local helm="$REPO/build/tools/helm"
  # Production: the chart's defaults, in the same mode (device plugin or DRA) as here.
  "$helm" template torus "$REPO/helm/torus" -n kube-system --set "dra.enabled=$( ((DRA)) && echo true || echo false)" \
    > "$STATE_DIR/production.yaml"
  "$helm" template torus "$REPO/helm/torus" -n kube-system -f "$STATE_DIR/values-local.yaml" \
    > "$STATE_DIR/local.yaml"
  python3 "$REPO/tests/e2e/cluster/agent_pod_diff.py" "$STATE_DIR/production.yaml" "$STATE_DIR/local.yaml"
}
check "the agent's pod differs from production only in image, API address and host network" \
  agent_pod_matches_production
forbidden_writes_fail() {
  local pod output
  pod="$(agent_pod_on "${names[0]}")"
  # sysfs outside the driver's devices is read-only to the agent, as on a real node...
  output="$(k exec -n kube-system "$pod" -- sh -c \
    'for f in /sys/bus/pci/drivers/neuron-driver/*:*.*; do echo 1 > "$f/resource4_wc"; exit; done' \
    2>&1)" &&
    { echo "a write to the memory BAR succeeded"; return 1; }
  echo "resource4_wc: $output"
  grep -q "Read-only file system" <<< "$output" || return 1
  # ...and so is /dev...
  output="$(k exec -n kube-system "$pod" -- sh -c 'touch /dev/neuron-test' 2>&1)" &&
    { echo "a file was created in /dev"; return 1; }
  echo "/dev: $output"
  # ...and every attribute of the driver's devices (a real node says Permission denied, the
  # local cluster's read-only overlay Read-only file system); the one writable file is
  # neuronN/reset.
  output="$(k exec -n kube-system "$pod" -- sh -c 'echo 4 > /sys/class/neuron_device/neuron0/core_count' 2>&1)" &&
    { echo "a write to neuron0/core_count succeeded"; return 1; }
  echo "core_count: $output"
  grep -qE "Permission denied|Read-only file system" <<< "$output" || return 1
  k exec -n kube-system "$pod" -- sh -c 'echo 1 > /sys/class/neuron_device/neuron0/reset'
}
check "kubectl exec: the agent may write neuronN/reset, not an attribute, the memory BAR or /dev" \
  forbidden_writes_fail
# The whole log, then the search: grep -q would close the pipe early and, with pipefail, fail
# the kubectl still writing.
logs_of_every_agent() {
  local name log
  for name in "${names[@]}"; do
    log="$(k logs -n kube-system "$(agent_pod_on "$name")")" || return 1
    grep -q '"setting" name=node-name value='"$name" <<< "$log" ||
      { echo "no log of $name's agent ($(wc -l <<< "$log") lines)"; return 1; }
  done
}
check "kubectl logs reads every node's agent" eventually 30 logs_of_every_agent
top_reads_every_node() { neuron_cli top --json | checks_py top-devices-per-node 16 "${names[@]}"; }
check "kubectl neuron top reads every node's agent at its address" eventually 30 top_reads_every_node
