# Sourced by dra_test.sh (its helpers, dra_lib.sh's and the cluster are in scope).
# A corrupt checkpoint stops the driver and the Node says what to do.

echo "== a corrupt checkpoint stops the driver and the Node says what to do"
# Starting without its record of prepared claims would hand out chips running pods hold: the
# driver refuses, and a Warning Event on the Node names the file and the way out (audit L6).
CHECKPOINT="$KUBELET_ROOT/plugins/neuron.aws.com/checkpoint.json"
# The driver rewrites the file when its background resets of the last pods' chips finish: the
# corruption goes in after that, or the running agent overwrites it.
check "the checkpoint lists no claim and no chip left to reset" \
  eventually 60 checks_py checkpoint-idle "$CHECKPOINT"
cp "$CHECKPOINT" "$STATE_DIR/checkpoint.saved"
echo '{"version": 1, "claims": [' > "$CHECKPOINT"
k delete pod -n kube-system "$(agent_pod)" --wait=true > /dev/null
node_event_says_what_to_do() {
  k get events -n default --field-selector "involvedObject.name=$NODE_NAME,reason=DRADriverNotStarted" \
    -o jsonpath='{.items[*].message}' |
    grep -o 'neuron.aws.com/checkpoint.json[^;]*; the driver cannot tell which chips.*Drain the node' |
    head -n 1 | grep .
}
check "the Node's DRADriverNotStarted event names the file and says to drain and delete it" \
  eventually 90 node_event_says_what_to_do
agent_not_ready() { ! agent_ready; }
check "... and the agent is not Ready" agent_not_ready
cp "$STATE_DIR/checkpoint.saved" "$CHECKPOINT"
k delete pod -n kube-system "$(agent_pod)" --wait=true > /dev/null
check "with the checkpoint back, a new agent starts and is Ready" eventually 120 agent_ready
