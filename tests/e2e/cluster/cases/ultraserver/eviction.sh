# Sourced by ultraserver_test.sh (its helpers, lib.sh's and dra_lib.sh's and the cluster are in scope).
# Under dra.taintEffect=NoExecute a chip's fault evicts a workload's pod: its claim holds the
# node device (neuronnode), which carries every chip's health taint; the pod comes back on its
# reserved node once the chip has recovered. Runs after migrate_and_noop, whose "stayer" runs.

echo "== NoExecute: a chip's fault evicts the UltraServer workload's pod on its node"
stayer_now="$(running_pods stayer)"
stayer_node="${stayer_now#*@}"
stayer_pod="$(k get pods -n e2e -l app=stayer --field-selector status.phase=Running \
  -o jsonpath='{.items[0].metadata.name}')"
# Chip 3 of that node, in its own simulated driver tree.
stayer_ecc="${SIMULATED_NODE_DIR/${names[0]}/$stayer_node}/sys/devices/virtual/neuron_device/neuron3/stats/hardware/mem_ecc_uncorrected"
node_device_taints() {
  k get resourceslices --field-selector "spec.nodeName=$stayer_node" -o json |
    checks_py device-taints-listed neuronnode
}
node_device_tainted() {
  local taints
  taints="$(node_device_taints)"
  grep -q "neuron.aws.com/ecc-uncorrected=mem:NoExecute" <<< "$taints" ||
    { echo "neuronnode's taints: $taints"; return 1; }
}
echo 2 > "$stayer_ecc"
check "uncorrected ECC on chip 3 of stayer's node: its node device is tainted NoExecute" \
  eventually 30 node_device_tainted
check "the device taint eviction deletes stayer's pod" eventually 60 evicted_by_device_taint "$stayer_pod"
echo 0 > "$stayer_ecc"
stayer_back() {
  local now
  now="$(running_pods stayer)"
  [[ -n "$now" && "${now#*@}" == "$stayer_node" && "${now%@*}" != "${stayer_now%@*}" ]] ||
    { echo "stayer's running pod: '$now' (was $stayer_now); neuronnode's taints: $(node_device_taints)"; return 1; }
}
check "fault cleared and the chip recovered: a new pod of stayer runs on its node" eventually 180 stayer_back
