# Sourced by dra_test.sh (its helpers, dra_lib.sh's and the cluster are in scope).
# Old aws.amazon.com/neuron pod specs on the DRA node, and the UltraServer node device on the trn2u.

echo "== old pod specs: aws.amazon.com/neuron runs on the DRA node"
pod_manifest dra-extended neuron 4 | k apply -f - > /dev/null
check "aws.amazon.com/neuron: 4 runs on the DRA node" eventually 120 pod_succeeded dra-extended
check "... with 4 chips and their cores" saw_any dra-extended neuron 4
pod_manifest dra-extended-cores neuroncore 2 | k apply -f - > /dev/null
check "aws.amazon.com/neuroncore: 2 runs on the DRA node" eventually 120 pod_succeeded dra-extended-cores
check "... with 2 cores" saw_any dra-extended-cores neuroncore 2

echo "== the UltraServer node device on the trn2u: never beside one of its chips; the environment"
# deploy/examples/dra/2-node-inference-us.yaml's claim (the whole node, UltraServerConfig mode 2)
# on the trn2u node. While a pod holds one chip there, the node device (which consumes every
# chip's counter) cannot be allocated; given back, the same pod runs, and its container gets the
# pair's mode (X2V, 3), server id and node id, the ones the node's own labels publish.
NODE_NAME="$TRN2U_NODE" dra_pod part-us-chip one-chip 3600
check "a pod holding one chip of the trn2u runs" eventually 120 phase_is part-us-chip Running
apply_example_template 2-node-inference-us.yaml
NODE_NAME="$TRN2U_NODE" dra_pod dra-us-node ultraserver-node-pair
check "AWS's UltraServer node claim waits meanwhile (Unschedulable: cannot allocate all claims)" \
  eventually 60 unschedulable_with_reason dra-us-node
k delete pod -n e2e part-us-chip --wait=false > /dev/null
check "the chip given back: that claim runs on the trn2u" eventually 120 pod_succeeded dra-us-node
check "... with the pair's mode and the server and node ids its node's labels publish" \
  ultraserver_environment dra-us-node "$TRN2U_NODE"
k delete pod -n e2e dra-us-node --wait=false > /dev/null
