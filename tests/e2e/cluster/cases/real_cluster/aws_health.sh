# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# AWS's NeuronHealth condition from the kernel log within 2 s of the chip's firmware ECC counter
# confirming the line (a line alone is a claim any device holder can write); HyperPod's label
# untouched. The lines, in the format AWS documents (the runtime's, through the driver's printk
# ioctl), go into the kernel's own log (/dev/kmsg on the host: every bed node shares the kernel), which the agent
# follows through syslog(2) under the chart's grants; a line naming another chip's serial number
# is not this node's.

echo "== AWS's health condition from the kernel log; HyperPod's label untouched"
k label node "$NODE_NAME" sagemaker.amazonaws.com/node-health-status=Schedulable --overwrite > /dev/null
neuron_health_reason() {
  k get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="NeuronHealth")].reason}'
}
neuron_health_is() { [[ "$(neuron_health_reason)" == "$1" ]]; }
check "NeuronHealth says NeuronHasNoError" eventually 30 neuron_health_is NeuronHasNoError
# The node's /dev/kmsg is the kernel's (1:11), which the agent's container may not open.
kmsg_is_the_kernels() {
  local kind
  kind="$(stat -c '%F %t:%T' "$SIMULATED_NODE_DIR/dev/kmsg")"
  [[ "$kind" == "character special file 1:b" ]] || { echo "the node's /dev/kmsg: $kind"; return 1; }
}
check "the node's /dev/kmsg is the kernel's (1:11)" kmsg_is_the_kernels
# neuron7 of this node by its serial number (info/serial_number, as the runtime prints it).
serial_of_neuron7="$(cat "$SIMULATED_NODE_DIR/sys/devices/virtual/neuron_device/neuron7/info/serial_number")"
neuron7_sram_ecc="$SIMULATED_NODE_DIR/sys/devices/virtual/neuron_device/neuron7/stats/hardware/sram_ecc_uncorrected"
hbm_claims_on_neuron7() {
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" |
    grep -q '^torus_kernel_hardware_errors_total{type="HBM_UNCORRECTABLE_ERROR",neuron_device_index="7"}'
}
# Another node's chip first (nd-id 7 there too): logged in the same kernel, ignored here.
echo "NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR instance-id=i-0e2e0000000000001 hostname=elsewhere" \
  "nd-id=7 nc-id=0 serial-num=0123456789abcdef action=TERMINATE_INSTANCE" > /dev/kmsg
echo "NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR instance-id=i-0e2e0000000000002 hostname=$NODE_NAME" \
  "nd-id=7 nc-id=0 serial-num=$serial_of_neuron7 action=TERMINATE_INSTANCE" > /dev/kmsg
check "the line naming neuron7 is counted as a claim" eventually 15 hbm_claims_on_neuron7
# Acting on it set the condition within 2 s (the check below measures that), so 5 s without
# it means the line alone was not acted on.
check "...which alone leaves NeuronHealth NeuronHasNoError" holds 5 neuron_health_is NeuronHasNoError
neuron_health_within_2s() {
  local started=$SECONDS reason
  # The chip's firmware ECC counter rises within the hold: the claim is proven.
  echo 1 > "$neuron7_sram_ecc"
  local deadline=$(($(date +%s%N) + 2000000000))
  while (($(date +%s%N) < deadline)); do
    reason="$(neuron_health_reason)"
    if [[ "$reason" == NeuronHasError_HBM_UNCORRECTABLE_ERROR ]]; then
      echo "set within $((SECONDS - started)) s"
      return 0
    fi
    sleep 0.1
  done
  echo "NeuronHealth reason after 2 s: ${reason:-none}"
  return 1
}
check "the chip's firmware ECC counter confirms it: NeuronHealth NeuronHasError_HBM_UNCORRECTABLE_ERROR within 2 s" \
  neuron_health_within_2s
echo 0 > "$neuron7_sram_ecc"
# Lines are read in order: once the second counted, the first was seen and passed over.
only_its_own_line() {
  local errors
  errors="$(curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" | grep '^torus_kernel_hardware_errors_total')"
  echo "$errors"
  grep -q 'type="HBM_UNCORRECTABLE_ERROR".*neuron_device_index="7"\|neuron_device_index="7".*type="HBM_UNCORRECTABLE_ERROR"' <<< "$errors" &&
    ! grep -q SRAM_UNCORRECTABLE_ERROR <<< "$errors"
}
check "...counted for neuron7; the other node's line is not counted" only_its_own_line
hyperpod_label_kept() {
  [[ "$(k get node "$NODE_NAME" -o 'jsonpath={.metadata.labels.sagemaker\.amazonaws\.com/node-health-status}')" == Schedulable ]]
}
check "...and leaves HyperPod's node-health-status label as it was" hyperpod_label_kept
k label node "$NODE_NAME" sagemaker.amazonaws.com/node-health-status- > /dev/null
