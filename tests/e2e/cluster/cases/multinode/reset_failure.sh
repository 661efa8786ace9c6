# Sourced by multinode_test.sh (its helpers, cluster, names and ips are in scope).
# A chip whose reset fails is not handed out: its pod waits until a reset succeeds.

echo "== a chip whose reset fails is not handed out: its pod waits until a reset succeeds"
# The trn2's driver (neuron-sim-driver) ends every reset of chip 5 INVALID from now on; a pod of
# all 16 chips there must not start on it, and must start once the chip resets again.
trn2_driver="$STATE_DIR/nodes/${names[$TRN2]}/driver"
"$REPO/build/bin/neuron-ls" --simulate=trn2.48xlarge --simulate-dir="$trn2_driver" \
  --simulate-fault=reset-fail:5 > /dev/null
pinned_pod reset-held "${names[$TRN2]}" | sed 's/neuron: 4$/neuron: 16/' | k apply -f - > /dev/null
held_back_naming_the_chip() {
  local events
  [[ "$(pod_phase reset-held)" == Pending ]] || { echo "phase $(pod_phase reset-held)"; return 1; }
  events="$(k get events -n e2e --field-selector involvedObject.name=reset-held -o jsonpath='{.items[*].message}')"
  grep -q "neuron5: the driver reports state INVALID" <<< "$events" ||
    { echo "no event names chip 5's failed reset yet: $events" | cut -c1-300; return 1; }
}
check "the pod does not start on a chip whose reset failed; its events name the chip" \
  eventually 90 held_back_naming_the_chip
rm "$trn2_driver/simulated-driver/neuron5/reset"
check "...and runs once chip 5 resets again (kubelet retries)" eventually 120 pod_succeeded reset-held
saw_all_16_chips() { pod_report reset-held | grep -qE 'DEVICES=(neuron[0-9]+ ){16}$'; }
check "...with all 16 chips" saw_all_16_chips
k delete pods -n e2e --all --wait=true > /dev/null

echo "== a reset slower than kubelet's deadline: the pod waits for it and runs"
# The driver may take up to 480 s to start a reset on trn2. Chip 6's resets now take 90 s, three
# times kubelet's 30 s for PreStartContainer: the agent waits 25 s, says the reset goes on, kubelet
# retries the start (the driver drops a second request while one is pending, and the agent waits on
# the one that runs), and the pod runs once the reset is done.
"$REPO/build/bin/neuron-ls" --simulate=trn2.48xlarge --simulate-dir="$trn2_driver" \
  --simulate-fault=reset-slow:6:90000 > /dev/null
pinned_pod reset-slow "${names[$TRN2]}" | sed 's/neuron: 4$/neuron: 16/' | k apply -f - > /dev/null
waits_for_the_reset() {
  local events
  events="$(k get events -n e2e --field-selector involvedObject.name=reset-slow -o jsonpath='{.items[*].message}')"
  grep -q "neuron6: still in reset after 25000 ms; the driver may take up to 480 s, the reset goes on" <<< "$events" ||
    { echo "no event says chip 6's reset goes on yet: $events" | cut -c1-300; return 1; }
}
check "the container's start waits 25 s of the reset and says it goes on" eventually 60 waits_for_the_reset
check "...and the pod runs once the 90 s reset is done (kubelet retries)" eventually 180 pod_succeeded reset-slow
rm "$trn2_driver/simulated-driver/neuron6/reset"
k delete pods -n e2e --all --wait=true > /dev/null
