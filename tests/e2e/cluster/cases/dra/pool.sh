# Sourced by dra_test.sh (its helpers, dra_lib.sh's and the cluster are in scope).
# The driver registers with kubelet and publishes the pool with AWS's attributes; a slice someone
# else edits is written back.

echo "== the driver registers and publishes the pool"
check "the DRA agent runs on the node labelled for DRA" eventually 120 agent_ready
no_plugin_agent() {
  [[ -z "$(k get pods -n kube-system -l app.kubernetes.io/component=node-agent -o name)" ]]
}
check "no device-plugin agent on that node" no_plugin_agent
check "kubelet registered the plugin" eventually 60 plugin_registered
check "DeviceClasses neuron.aws.com, chip. and core. are installed" \
  k get deviceclass neuron.aws.com chip.neuron.aws.com core.neuron.aws.com
pool_is_complete() { pool_devices | checks_py pool-counts 16 64; }
check "16 chips and 64 cores published" eventually 60 pool_is_complete
chip_attributes_are_aws() { pool_devices | checks_py trn2-chip5-attributes; }
check "chip attributes use AWS names and carry capacity" chip_attributes_are_aws

echo "== a slice someone else edits is written back"
# kubectl patch as an operator (or an old controller) might: the agent's watch sees the slice
# differ from what it published and writes it back within one write (audit L2).
edit_a_slice() {
  local slice index
  read -r slice index < <(k get resourceslices -o json |
    checks_py slice-device-index "$NODE_NAME" neurondevice5) || return 1
  k patch resourceslice "$slice" --type=json -p "[{\"op\": \"replace\", \"path\": \"/spec/devices/$index/attributes/instanceType/string\", \"value\": \"edited-by-hand\"}]"
}
instance_type_is() {
  pool_devices | checks_py device-attribute-is neurondevice5 instanceType string "$1"
}
check "kubectl patch changes neurondevice5's instanceType" edit_a_slice
check "... the agent writes it back" eventually 30 instance_type_is trn2.48xlarge
said_written_back() { agent_log | grep -q "differs from what was published; writing it back"; }
check "... and says why" said_written_back

CORE_DEVICES_LABEL=torus.dev/dra-core-devices
echo "== a node labelled $CORE_DEVICES_LABEL=false publishes whole chips only"
# Partitions cost every claim filtered on the node (docs/benchmarks.md); the operator keeps them
# to the nodes that run core claims. The agent reads the Node at each resync (60 s).
chips_only() { pool_devices | checks_py pool-counts 16 0; }
check "label the node ${CORE_DEVICES_LABEL}=false" \
  k label node "$NODE_NAME" "$CORE_DEVICES_LABEL=false"
check "... its pool drops the cores within a resync" eventually 90 chips_only
check "... the agent never removes the operator's label" \
  test "$(k get node "$NODE_NAME" -o jsonpath="{.metadata.labels.torus\.dev/dra-core-devices}")" = false
check "remove the label" k label node "$NODE_NAME" "$CORE_DEVICES_LABEL-"
check "... the cores are back within a resync" eventually 90 pool_is_complete
