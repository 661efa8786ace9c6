# Sourced by dra_test.sh (its helpers, dra_lib.sh's and the cluster are in scope).
# Agent and kubelet restarts keep every prepared claim; unprepare resets and cleans up; a
# NoExecute taint evicts.

echo "== restarts keep every prepared claim"
dra_pod dra-held four-connected-chips 3600
check "a long-running claim pod runs" eventually 120 phase_is dra-held Running
check "its claim is prepared" eventually 30 claims_prepared 1
# The claim's cores carry the pod kubelet's pod-resources lists for it (dynamic resources).
claim_cores_name_the_pod() {
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" > "$STATE_DIR/metrics.txt" || return 1
  allocations > "$STATE_DIR/allocations.json" || return 1
  # Who the agent sees using the claim, should this fail.
  cat "$STATE_DIR/allocations.json"
  checks_py claim-metrics-name-the-pod "$STATE_DIR/metrics.txt" "$(claim_name_of dra-held)" \
    "$NODE_NAME" dra-held "$CORES_PER_DEVICE" < "$STATE_DIR/allocations.json"
}
claim_name_of() {
  k get pod -n e2e "$1" -o jsonpath='{.status.resourceClaimStatuses[0].resourceClaimName}'
}
check "/metrics names dra-held on exactly its claim's 16 cores, with the claim's dra_* labels" \
  eventually 15 claim_cores_name_the_pod
old_agent="$(agent_pod)"
k delete pod -n kube-system "$old_agent" --wait=true > /dev/null
check "the agent comes back" eventually 120 agent_ready
check "the restarted agent still holds the claim (checkpoint)" eventually 30 claims_prepared 1
dra_pod dra-during-restart four-connected-chips
check "a claim after the agent restart runs" eventually 120 pod_succeeded dra-during-restart
disjoint_from_held() {
  allocations | checks_py chips-disjoint-from-first-claim 4 \
    "$(pod_report dra-during-restart | sed -n 's/^DEVICES=//p')"
}
check "it did not get the held pod's chips" disjoint_from_held
cluster restart "kubelet-$NODE_NAME" > /dev/null
node_ready() {
  [[ "$(k get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]
}
check "after a kubelet restart the node is Ready" eventually 120 node_ready
check "after a kubelet restart a claim runs (registered again)" run_claim dra-after-kubelet one-chip
resets_before="$(release_resets)"
k delete pod -n e2e dra-held --wait=true > /dev/null
check "deleting the held pod unprepares its claim" eventually 60 claims_prepared 0
check "... and resets its chips" eventually 15 resets_at_least $((resets_before + 1))
check "... and removes its CDI spec" no_cdi_specs

echo "== dra.taintEffect=NoExecute: a fault evicts the pod using the chip"
check "helm upgrade with dra.taintEffect=NoExecute" "$REPO/build/tools/helm" --kubeconfig "$KUBECONFIG" \
  upgrade torus "$REPO/helm/torus" -n kube-system --reuse-values --set dra.taintEffect=NoExecute \
  --set nodeAgent.kernelErrorHold=20s --wait --timeout 3m
check "the DRA agent runs again" eventually 120 agent_ready
dra_pod dra-evicted chip-nine 3600
check "a pod holding chip 9 runs" eventually 120 phase_is dra-evicted Running

# A NEURON_HW_ERR line is a claim any holder of a device node can write (the driver's printk
# ioctl), and a process with no device gets one in by segfaulting in a file named like it: neither
# takes chip 9 from the pod (docs/security.md, "The kernel log: claims, not evidence").
serial_of_chip9="$(cat "$SIMULATED_NODE_DIR/sys/devices/virtual/neuron_device/neuron9/info/serial_number")"
echo "<6>a.out[4242]: segfault at 0 ip 0000000000401136 sp 00007ffc00000000 error 4 in" \
  "NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR serial-num=$serial_of_chip9[401000+1000] likely on CPU 1" > /dev/kmsg
echo "NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR instance-id=i-0e2e0000000000009 hostname=$NODE_NAME" \
  "nd-id=9 nc-id=0 serial-num=$serial_of_chip9 action=TERMINATE_INSTANCE" > /dev/kmsg
claims_on_chip9() {
  local hbm sram
  hbm="$(metric 'torus_kernel_hardware_errors_total{type="HBM_UNCORRECTABLE_ERROR",neuron_device_index="9"}')"
  sram="$(metric 'torus_kernel_hardware_errors_total{type="SRAM_UNCORRECTABLE_ERROR",neuron_device_index="9"}')"
  [[ "$hbm" == 1 && "$sram" == 0 ]] || { echo "claims on chip 9: HBM $hbm, SRAM $sram; want 1, 0"; return 1; }
}
# Lines are read in order: once the forged report is counted, the segfault line was seen.
check "the forged report is counted as a claim; the segfault line is not" eventually 15 claims_on_chip9
neuron_health_reason() {
  k get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="NeuronHealth")].reason}'
}
chip9_untouched() {
  taint_on neurondevice9 "" && phase_is dra-evicted Running &&
    [[ "$(neuron_health_reason)" == NeuronHasNoError ]]
}
# Acting on a line tainted the chip within seconds (the ECC fault below is tainted within the
# same agent pass), so 10 s without a taint means nothing was done; no taint, no eviction.
check "... chip 9 stays untainted, its pod running, NeuronHealth NeuronHasNoError" holds 10 chip9_untouched

# The chip's firmware ECC counter, which no tenant can write, rises within the hold: the claim is
# proven, and the fault evicts.
echo 2 > "$ECC"
check "uncorrected ECC on chip 9, the claim confirmed: NoExecute taints on it" eventually 30 \
  taint_on neurondevice9 \
  "neuron.aws.com/ecc-uncorrected=mem:NoExecute,neuron.aws.com/hardware-error=HBM_UNCORRECTABLE_ERROR:NoExecute"
check "the device taint eviction deletes the pod using chip 9" eventually 60 evicted_by_device_taint dra-evicted
check "... and the confirmed claim sets NeuronHealth" eventually 10 \
  eval '[[ "$(neuron_health_reason)" == NeuronHasError_HBM_UNCORRECTABLE_ERROR ]]'
echo 0 > "$ECC"
# The hardware error's hold (20 s here) from its confirmation, then the chip's reset.
check "fault cleared: the taint is gone" eventually 60 taint_on neurondevice9 ""

# The eviction controller reads a pod's own claims; kubernetes#141290 reports that it misses the
# claims made for an extended-resource request (pod.status.extendedResourceClaimStatus). Shown
# here on this version: such a pod is evicted too, and a claim that tolerates the taint stays.
echo "== NoExecute reaches an aws.amazon.com/neuron pod; a tolerating claim stays"
claim_template chip-ten-tolerant chip.neuron.aws.com "$(chip_id_is 10)" \
  neuron.aws.com/ecc-uncorrected NoExecute
dra_pod dra-tolerant chip-ten-tolerant 3600
PIN_NODE="$NODE_NAME" pod_manifest dra-evicted-extended neuron 1 default-scheduler 3600 |
  k apply -f - > /dev/null
check "a pod with a tolerating claim on chip 10 runs" eventually 120 phase_is dra-tolerant Running
check "an aws.amazon.com/neuron: 1 pod runs on the DRA node" eventually 120 phase_is dra-evicted-extended Running
extended_chip() {
  local claim
  claim="$(k get pod -n e2e dra-evicted-extended -o jsonpath='{.status.extendedResourceClaimStatus.resourceClaimName}')"
  [[ -n "$claim" ]] || return 1
  k get resourceclaim -n e2e "$claim" -o jsonpath='{.status.allocation.devices.results[0].device}' |
    sed -n 's/^neurondevice//p'
}
extended="$(extended_chip)"
check "its chip is named in its extended-resource claim (chip ${extended:-none})" test -n "$extended"
if [[ -n "$extended" ]]; then
  echo 2 > "$(ecc_counter "$extended")"
  echo 2 > "$(ecc_counter 10)"
  check "a fault on its chip: the device taint eviction deletes the aws.amazon.com/neuron pod" \
    eventually 60 evicted_by_device_taint dra-evicted-extended
  check "... chip 10 carries the same NoExecute taint" \
    taint_on neurondevice10 "neuron.aws.com/ecc-uncorrected=mem:NoExecute"
  check "... and the pod whose claim tolerates it keeps running" phase_is dra-tolerant Running
  echo 0 > "$(ecc_counter "$extended")"
  echo 0 > "$(ecc_counter 10)"
  check "fault cleared: chip $extended's taint is gone once its evicted claim was released" \
    eventually 30 taint_on "neurondevice$extended" ""
fi
# Cleared, chip 10 waits for its reset under a NoSchedule taint: the tolerating pod stays.
check "fault cleared: the recovering chip 10 is NoSchedule, not NoExecute" \
  eventually 15 taint_on neurondevice10 "neuron.aws.com/recovery=Recovering:NoSchedule"
check "... and the tolerating pod keeps running" phase_is dra-tolerant Running
k delete pod -n e2e dra-tolerant --wait=false --ignore-not-found > /dev/null
check "released: chip 10 is reset and its taint goes" eventually 30 taint_on neurondevice10 ""
