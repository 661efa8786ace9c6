# Sourced by dra_134_test.sh (lib.sh's and dra_lib.sh's helpers and the cluster are in scope).
# AWS's UltraServer template on the trn2u, where 1.34 drops the node device's counters.

echo "== AWS's UltraServer template on the trn2u: the node device without counters"
trn2u_node_device() {
  NODE_NAME="$TRN2U_NODE" pool_devices | checks_py node-device-without-counters 16
}
check "the trn2u publishes neuronnode beside its 16 chips, without counters" \
  eventually 60 trn2u_node_device
apply_example_template 2-node-inference-us.yaml
NODE_NAME="$TRN2U_NODE" dra_pod dra-us-node ultraserver-node-pair
check "AWS's UltraServer node claim runs on the trn2u" eventually 120 pod_succeeded dra-us-node
check "... with the pair's mode and the server and node ids its node's labels publish" \
  ultraserver_environment dra-us-node "$TRN2U_NODE"
check "... and all 16 chips" saw_any dra-us-node neuron 16
