# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# Faults with pods running: a kubelet restart (both resources register again within 2 s), the
# agent's pod deleted (the new one recovers what pods hold, and places new pods elsewhere), the
# extender's pod deleted (its /state rebuilt from the pods), resets of released devices.

echo "== faults: kubelet restart, agent and extender restarts with pods running"
for n in 1 2; do
  pod_manifest "hold-$n" neuroncore 4 neuron-scheduler 600 | k apply -f - > /dev/null
  check "hold-$n runs" eventually 90 pod_running "hold-$n"
done
held_before="$( (cores_held_by hold-1; cores_held_by hold-2) | sort -n | tr '\n' ' ')"
check "the agent reports what hold-1 and hold-2 hold" test "$(wc -w <<< "$held_before")" = 8

kubelet_log="$STATE_DIR/logs/kubelet-$NODE_NAME.log"
lines_before="$(wc -l < "$kubelet_log")"
cluster restart "kubelet-$NODE_NAME" > /dev/null
registered_again() {
  local log registered
  log="$(tail -n +"$((lines_before + 1))" "$kubelet_log")"
  for resource in neuroncore neuron; do
    grep -q "Got registration request from device plugin with resource.*aws.amazon.com/$resource\"" <<< "$log" || return 1
  done
}
check "both resources register again after a kubelet restart" eventually 60 registered_again
registration_delay() {
  local log socket_at last_at delay
  log="$(tail -n +"$((lines_before + 1))" "$kubelet_log")"
  socket_at="$(klog_seconds "$(grep -m1 'Creating device plugin registration server' <<< "$log")")"
  last_at="$(klog_seconds "$(grep 'Got registration request from device plugin' <<< "$log" | tail -1)")"
  delay="$(checks_py at-most-seconds-apart "$socket_at" "$last_at" 2)" || return 1
  echo "registered $delay after the kubelet made its socket"
}
check "...within 2 s of the kubelet's plugin socket appearing" registration_delay
check "the node is Ready again" eventually 60 node_is_ready

k delete pod -n kube-system "$(agent_pods -o jsonpath='{.items[0].metadata.name}')" --wait=false > /dev/null
agent_ready() {
  [[ "$(agent_pods -o jsonpath='{.items[*].status.containerStatuses[0].ready}')" == true ]]
}
check "a deleted agent pod is replaced and Ready" eventually 90 agent_ready
held_again() {
  [[ "$( (cores_held_by hold-1; cores_held_by hold-2) | sort -n | tr '\n' ' ')" == "$held_before" ]]
}
check "the new agent recovers what the running pods hold" eventually 30 held_again
# kubelet counts a re-registered plugin's devices only after its first ListAndWatch, and a pod it
# admits before that fails for good. The stopping agent tainted the node, so the default scheduler
# too holds the pod until the new agent serves: no wait here.
pod_manifest after-restart neuroncore 4 | k apply -f - > /dev/null
check "a pod after the agent restart runs" eventually 90 pod_succeeded after-restart
disjoint_from_running() {
  local got
  got="$(pod_report after-restart | sed -n 's/^CORES=//p')"
  for core in $(expand_ids "$got"); do
    if grep -qw "$core" <<< "$held_before"; then
      echo "core $core given to after-restart is held by a running pod ($held_before)"
      return 1
    fi
  done
}
check "...on cores no running pod holds" disjoint_from_running

k delete pod -n kube-system -l app.kubernetes.io/component=scheduler-extender --wait=false > /dev/null
state_matches_pods() {
  curl -sf "http://$EXTENDER_HOST:$EXTENDER_PORT/state" > "$STATE_DIR/extender-state.json" || return 1
  k get pods -A -o json > "$STATE_DIR/pods-all.json" || return 1
  checks_py extender-state-matches-pods "$STATE_DIR/extender-state.json" "$STATE_DIR/pods-all.json"
}
check "a restarted extender rebuilds /state equal to the pods' AWS_NEURON_IDS" eventually 90 state_matches_pods

resets_counted() {
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" |
    grep -q '^torus_device_release_resets_total{result="ok"} [1-9]'
}
k delete pod -n e2e hold-1 hold-2 --wait=false > /dev/null
check "deleting pods resets their devices (counted in /metrics)" eventually 60 resets_counted
