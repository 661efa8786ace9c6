# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# kubectl neuron against the real API: nodes, node, pods (--json) and top, in a real terminal
# (tmux) and as JSON.

echo "== kubectl neuron against the real API"
pod_manifest shown neuroncore 8 neuron-scheduler 600 | k apply -f - > /dev/null
check "a pod for kubectl neuron runs" eventually 90 pod_running shown
shows_pod() {
  local ids
  ids="$(annotation_of shown AWS_NEURON_IDS)"
  neuron_cli nodes | grep -E "$NODE_NAME .*trn2.48xlarge.* 8/64 " &&
    neuron_cli node "$NODE_NAME" | grep "e2e/shown" &&
    neuron_cli pods --json | checks_py neuron-pods-show e2e/shown "$ids"
}
check "kubectl neuron nodes, node and pods show what the pod holds" eventually 30 shows_pod

# A counter the agent cannot read leaves the chip in service with its health unknown; readable
# again, healthy.
counter5="$SIMULATED_NODE_DIR/sys/devices/virtual/neuron_device/neuron5/stats/hardware/mem_ecc_uncorrected"
printf '\x01\xfejunk' > "$counter5"
health_is() {
  local nodes
  nodes="$(neuron_cli nodes)"
  grep -Eq "^\| $NODE_NAME +\|.*\| $1 +\|$" <<< "$nodes" || { echo "$nodes"; return 1; }
}
unknown_in_json() {
  neuron_cli node "$NODE_NAME" --json | checks_py health-unknown-is 5
}
check "an unreadable counter: kubectl neuron nodes shows chip 5's health unknown" \
  eventually 15 health_is "unknown 5"
check "... as does kubectl neuron node --json" unknown_in_json
# Prints chip 5's state samples (or curl's error), so that a failure shows what the agent said.
state_metric_is() {
  local metrics
  metrics="$(curl -sS --max-time 10 "http://$NODE_IP:$AGENT_METRICS_PORT/metrics")" || return 1
  grep -E '^torus_device_health_state\{.*neuron_device_index="5",' <<< "$metrics"
  grep -Eq "^torus_device_health_state\{.*neuron_device_index=\"5\",state=\"$1\"\} 1\$" <<< "$metrics"
}
check "... and the agent's torus_device_health_state" state_metric_is unknown
echo 0 > "$counter5"
# Both read the agent's health asynchronously (its poll, then the annotation's publication).
readable_again() { health_is ok && state_metric_is healthy; }
check "readable again: healthy in kubectl neuron nodes and the metric" eventually 15 readable_again

# trn2's uncorrectable HBM error awaiting repair shows only in mem_ecc_repairable_uncorrected. On
# an idle chip it takes the chip out of service; recovery resets it at once (a reset is what
# repairs it, so it cannot wait for the counter to clear), the simulated driver's reset ends
# READY and repairs it, and the chip is back: counted, reset and healthy, whatever kubectl saw of
# the few seconds it was out.
idle_chip() {
  local range id chip used=()
  for range in $(annotation_of shown AWS_NEURON_IDS | tr ',' ' '); do
    for ((id = ${range%-*}; id <= ${range#*-}; id++)); do used[id / CORES_PER_DEVICE]=1; done
  done
  for ((chip = 15; chip >= 0; chip--)); do
    if [[ -z "${used[chip]:-}" ]]; then echo "$chip"; return 0; fi
  done
  return 1
}
REPAIR_CHIP="$(idle_chip)"
# SERIES: its value, nothing while the agent has no such series; fails when the agent does not
# answer.
agent_metric() {
  local metrics
  metrics="$(curl -sS --max-time 10 "http://$NODE_IP:$AGENT_METRICS_PORT/metrics")" || return 1
  awk -v series="$1 " 'index($0, series) == 1 { print $NF; exit }' <<< "$metrics"
}
resets_before="$(agent_metric 'torus_device_recoveries_total{result="reset_only"}')"
echo 1 > "$SIMULATED_NODE_DIR/sys/devices/virtual/neuron_device/neuron$REPAIR_CHIP/stats/hardware/mem_ecc_repairable_uncorrected"
repaired_by_a_reset() {
  local out resets counter
  out="$(agent_metric "torus_device_health_transitions_total{neuron_device_index=\"$REPAIR_CHIP\",to=\"unhealthy\"}")"
  resets="$(agent_metric 'torus_device_recoveries_total{result="reset_only"}')"
  counter="$(cat "$SIMULATED_NODE_DIR/sys/devices/virtual/neuron_device/neuron$REPAIR_CHIP/stats/hardware/mem_ecc_repairable_uncorrected")"
  echo "chip $REPAIR_CHIP: out of service ${out:-0} times; resets ${resets_before:-0} -> ${resets:-0}; counter $counter"
  [[ "${out:-0}" != 0 && "${resets:-0}" != "${resets_before:-0}" && "$counter" == 0 ]] &&
    health_is ok && state_metric_is_of "$REPAIR_CHIP" healthy
}
state_metric_is_of() {
  curl -sS --max-time 10 "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" |
    grep -Eq "^torus_device_health_state\{.*neuron_device_index=\"$1\",state=\"$2\"\} 1\$"
}
check "an HBM error awaiting repair takes an idle chip out, a reset repairs it, and it is back" \
  eventually 30 repaired_by_a_reset

# kubectl neuron top in a real terminal (tmux): both pods with their cores, refreshed in place,
# read from the agent at its node's address as on any cluster (no --agent-host).
pod_manifest shown-too neuron 1 neuron-scheduler 600 | k apply -f - > /dev/null
check "a second pod for kubectl neuron top runs" eventually 90 pod_running shown-too
TMUX_SERVER="torus-e2e-top-$$"
top_shows_both_pods_and_refreshes() {
  local screen first second clock1 clock2 cores
  tmux -L "$TMUX_SERVER" new-session -d -s top -x 200 -y 50 \
    "KUBECONFIG='$KUBECONFIG' '$REPO/build/bin/kubectl-neuron' top --interval=1s" ||
    return 1
  local deadline=$((SECONDS + 30))
  while ((SECONDS < deadline)); do
    screen="$(tmux -L "$TMUX_SERVER" capture-pane -p -t top)"
    if grep -q "shown-too" <<< "$screen" && grep -q " shown " <<< "$screen"; then break; fi
    sleep 0.5
  done
  first="$screen"
  sleep 2.5
  second="$(tmux -L "$TMUX_SERVER" capture-pane -p -t top)"
  tmux -L "$TMUX_SERVER" send-keys -t top C-c
  sleep 0.5
  tmux -L "$TMUX_SERVER" kill-server 2> /dev/null || true
  printf '%s\n' "$second" > "$STATE_DIR/kubectl-neuron-top.txt"
  echo "$second"
  cores="$(annotation_of shown AWS_NEURON_IDS | checks_py compress-ids)"
  grep -Eq " shown +\| .* $cores " <<< "$first" || { echo "shown's cores $cores not on screen"; return 1; }
  grep -q "shown-too" <<< "$first" || { echo "shown-too not on screen"; return 1; }
  clock1="$(head -n 1 <<< "$first")" clock2="$(head -n 1 <<< "$second")"
  [[ "$clock1" == *"Ctrl-C to quit"* && "$clock1" != "$clock2" ]] ||
    { echo "the view did not refresh: '$clock1' then '$clock2'"; return 1; }
}
check "kubectl neuron top shows both pods' cores and refreshes (tmux)" top_shows_both_pods_and_refreshes
top_once_json_names_the_pods() {
  neuron_cli top "$NODE_NAME" --json | checks_py top-names shown=cores:8 shown-too=devices:1
}
check "kubectl neuron top NODE --json names both pods and all 16 devices" top_once_json_names_the_pods
k delete pod -n e2e shown shown-too --wait=false > /dev/null
