# Sourced by dra_test.sh (its helpers, dra_lib.sh's and the cluster are in scope).
# A hardware fault taints the chip (and the pod's resource health says so); cleared, it goes.

echo "== a hardware fault taints the chip; cleared, the taint goes"
claim_template chip-nine chip.neuron.aws.com "$(chip_id_is 9)"
# What kubelet shows in the pod's status from the driver's resource-health stream.
resource_health_is() {
  local health
  health="$(k get pod -n e2e "$1" -o jsonpath='{.status.containerStatuses[0].allocatedResourcesStatus[*].resources[*].health}')"
  [[ "$health" == "$2" ]] || { echo "allocatedResourcesStatus health: '${health}', want '$2'"; return 1; }
}
# A counter the agent cannot read: chip 9 stays in service, with an informational taint.
printf '\x01\xfejunk' > "$ECC"
check "an unreadable counter on chip 9: the informational unmonitored taint" \
  eventually 10 taint_on neurondevice9 "neuron.aws.com/unmonitored=:None"
echo 0 > "$ECC"
check "... readable again: the taint is gone" eventually 10 taint_on neurondevice9 ""
dra_pod dra-nine-held chip-nine 3600
check "a pod holding chip 9 runs" eventually 120 phase_is dra-nine-held Running
check "its status shows chip 9 Healthy (resource health)" eventually 60 resource_health_is dra-nine-held Healthy
faulted=$SECONDS
echo 2 > "$ECC"
check "uncorrected ECC on chip 9: NoSchedule taint on it" eventually 10 taint_on neurondevice9 "neuron.aws.com/ecc-uncorrected=mem:NoSchedule"
echo "      tainted $((SECONDS - faulted)) s after the fault"
check "... and on its cores" taint_on neuroncore37 "neuron.aws.com/ecc-uncorrected=mem:NoSchedule"
check "... and not on its neighbour" taint_on neurondevice8 ""
check "the running pod's status shows chip 9 Unhealthy" eventually 30 resource_health_is dra-nine-held Unhealthy
k delete pod -n e2e dra-nine-held --wait=true > /dev/null
dra_pod dra-nine chip-nine
check "a new claim for chip 9 stays Pending while it is tainted (Unschedulable)" \
  eventually 60 unschedulable dra-nine
recoveries_before="$(recoveries_reset_only)"
echo 0 > "$ECC"
check "fault cleared: the taint is gone" eventually 15 taint_on neurondevice9 ""
check "... once the agent had reset chip 9 (memory not tested: /sys is read-only)" \
  recoveries_at_least $((recoveries_before + 1))
check "fault cleared: the waiting claim gets chip 9" eventually 120 pod_succeeded dra-nine
saw_chip_nine() { pod_report dra-nine | grep -q 'DEVICES=neuron9 '; }
check "chip 9's claim saw /dev/neuron9" saw_chip_nine
k delete pod -n e2e dra-nine --wait=true > /dev/null

echo "== an HBM error awaiting repair taints the chip until a reset repairs it"
# On trn2 the driver counts an uncorrectable HBM error pending repair only here; the reset the
# agent gives the idle chip is what repairs it (the simulated driver clears the counter when a
# reset ends READY, as the firmware's repair does).
REPAIRABLE="${ECC%/mem_ecc_uncorrected}/mem_ecc_repairable_uncorrected"
# The repair takes as long as the reset: 8 s here (the simulated driver's behaviour file, as
# --simulate-fault=reset-slow writes it), so the taint is there to be seen while it runs.
SLOW_RESET="$SIMULATED_NODE_DIR/simulated-driver/neuron9/reset"
mkdir -p "${SLOW_RESET%/reset}"
echo "slow 8000" > "$SLOW_RESET"
recoveries_before="$(recoveries_reset_only)"
# What the agent and the simulated driver said of chip 9 lately: a failed check shows it.
chip_nine_story() {
  agent_log | grep -E '(device|devices|chips)=9( |$)' | tail -6
  grep -E 'device=9( |$)' "$STATE_DIR/logs/driver-$NODE_NAME.log" | tail -4
}
repair_taint_shown() {
  taint_on neurondevice9 "neuron.aws.com/ecc-uncorrected=mem_repairable:NoSchedule" ||
    { chip_nine_story; return 1; }
}
echo 1 > "$REPAIRABLE"
check "a repairable HBM error on chip 9: NoSchedule taint on it" eventually 10 repair_taint_shown
check "... the agent resets the idle chip, the reset repairs it, and the taint goes" \
  eventually 30 taint_on neurondevice9 ""
check "... a reset the driver took" eventually 10 recoveries_at_least $((recoveries_before + 1))
rm -f "$SLOW_RESET"
