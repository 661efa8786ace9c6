# Sourced by dra_134_test.sh (lib.sh's, dra_lib.sh's and ultraserver_lib.sh's helpers and the
# cluster are in scope). Runs after ultraserver_node, whose pod has let go of the trn2u.
# Where the API server drops device taints, a reserved node publishes only its node device, the
# one the workload's template asks for: a stranger's chip claim waits unscheduled, one that
# tolerates every taint is refused at admission, and the owner's pod runs.

echo "== a reserved trn2u without device taints: strangers wait, the owner's pod runs"
workload reserved-134 1 RestartAll
check "a one-node workload reserves the trn2u (Allocated)" eventually 90 state_is reserved-134 Allocated
only_the_node_device() { NODE_NAME="$TRN2U_NODE" pool_devices | checks_py node-device-without-counters 0; }
check "the reserved trn2u publishes only its node device, no chip" eventually 60 only_the_node_device
check "...tagged for the workload" eventually 60 tagged_is reserved-134 "$TRN2U_NODE"
claim_template stranger-chip chip.neuron.aws.com
NODE_NAME="$TRN2U_NODE" dra_pod stranger-134 stranger-chip 3600
# The chart's policy refuses a toleration of every taint here too: admission sees the field on 1.34.
tolerant_template_refused() {
  refused "toleration of every taint" claim_template stranger-anything neuron.aws.com "" "*"
}
check "a stranger's chip claim on the reserved node waits unscheduled" eventually 60 unschedulable stranger-134
check "a stranger's template that tolerates every taint is refused at admission" tolerant_template_refused
deployment owner-134 reserved-134 1
check "the owner's pod, started after both, runs" eventually 120 count_running owner-134 1
# The operator would give the node up only for a stranger's claim allocated there; none is.
check "...while the stranger still waits unscheduled" unschedulable stranger-134
check "...and the workload stays Allocated" state_is reserved-134 Allocated
k delete pod -n e2e stranger-134 --wait=false > /dev/null
k delete deploy -n e2e owner-134 --wait=false > /dev/null
k delete nusw -n e2e reserved-134 --wait=false > /dev/null
released() {
  ! k get nusw -n e2e reserved-134 > /dev/null 2>&1 || return 1
  NODE_NAME="$TRN2U_NODE" pool_devices | checks_py node-device-without-counters 16
}
check "deleted, the workload gives the trn2u's 16 chips back to the pool" eventually 90 released
