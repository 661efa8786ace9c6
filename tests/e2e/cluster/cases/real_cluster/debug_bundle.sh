# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# kubectl neuron debug: one archive of a faulty device's evidence, collected through pods/exec and
# pods/log with the caller's kubeconfig, whose manifest lists parts that are all there, and with
# no Secret or token in it.

echo "== kubectl neuron debug"
pod_manifest debugged neuron 1 neuron-scheduler 600 | k apply -f - > /dev/null
check "a pod on the device to debug runs" eventually 90 pod_running debugged
DEBUG_DEVICE="$(annotation_of debugged AWS_NEURON_IDS)"
# A hardware error on that chip, in the kernel's log, as aws_health.sh writes one.
debug_serial="$(cat "$SIMULATED_NODE_DIR/sys/devices/virtual/neuron_device/neuron$DEBUG_DEVICE/info/serial_number")"
echo "NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR instance-id=i-0e2e0000000000003 hostname=$NODE_NAME" \
  "nd-id=$DEBUG_DEVICE nc-id=0 serial-num=$debug_serial action=TERMINATE_INSTANCE" > /dev/kmsg
# A line alone is a claim any device holder can write; the chip's firmware SRAM ECC counter
# rising within the hold confirms it.
debug_sram_ecc="$SIMULATED_NODE_DIR/sys/devices/virtual/neuron_device/neuron$DEBUG_DEVICE/stats/hardware/sram_ecc_uncorrected"
echo 1 > "$debug_sram_ecc"
debug_device_unhealthy() {
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" |
    grep -Eq "^torus_device_health_state\{.*neuron_device_index=\"$DEBUG_DEVICE\",state=\"unhealthy\"\} 1\$"
}
check "the chip is unhealthy after the kernel's line" eventually 15 debug_device_unhealthy

DEBUG_DIR="$(mktemp -d)"
debug_archive_complete() {
  neuron_cli debug "$NODE_NAME" --device="$DEBUG_DEVICE" --output="$DEBUG_DIR/bundle.tar" &&
    tar -xf "$DEBUG_DIR/bundle.tar" -C "$DEBUG_DIR"
}
check "kubectl neuron debug NODE --device=N writes a complete archive" debug_archive_complete
debug_contents() {
  checks_py debug-bundle-complete "$DEBUG_DIR" "$DEBUG_DEVICE" "$debug_serial"
}
check "...with the chip's health, its kernel line, driver files, the agent's log and metrics, the Node and the pod on it" debug_contents
# The credentials that could leak: the agent's service-account token (what it reads the API
# with), the kubeconfig's, and any JWT or private key at all.
debug_no_secrets() {
  local agent token
  agent="$(agent_pods -o jsonpath='{.items[0].metadata.name}')"
  token="$(k exec -n kube-system "$agent" -- cat /var/run/secrets/kubernetes.io/serviceaccount/token)"
  [[ -n "$token" ]] || { echo "no token read from the agent's pod"; return 1; }
  checks_py debug-bundle-without-secrets "$DEBUG_DIR/bundle.tar" "$token" "$KUBECONFIG"
}
check "...and no Secret, service-account token or kubeconfig credential" debug_no_secrets
debug_unknown_device() {
  local output
  output="$(neuron_cli debug "$NODE_NAME" --device=99 --output="$DEBUG_DIR/partial.tar" 2>&1)"
  local code=$?
  echo "$output"
  ((code == 3)) && grep -q "device 99 is not on this node" <<< "$output"
}
check "a device the node does not have: the archive says so, and the exit code" debug_unknown_device
rm -rf "$DEBUG_DIR"
echo 0 > "$debug_sram_ecc"
k delete pod -n e2e debugged --wait=false > /dev/null
