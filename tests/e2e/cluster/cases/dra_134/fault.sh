# Sourced by dra_134_test.sh (lib.sh's and dra_lib.sh's helpers and the cluster are in scope).
# Without device taints (off in 1.34) a faulty chip leaves the pool, and comes back once reset.

echo "== a hardware fault takes the chip out of the pool; recovered, it comes back"
ECC="$(ecc_counter 9)"
claim_template chip-nine chip.neuron.aws.com "$(chip_id_is 9)"
in_pool() { pool_devices | checks_py in-pool "$1" "$2"; }
echo 2 > "$ECC"
check "uncorrected ECC on chip 9: it leaves the pool" eventually 15 in_pool neurondevice9 no
check "... and its neighbour stays" in_pool neurondevice8 yes
said_taints_dropped() { agent_log | grep -q "the API server dropped device taints"; }
check "the agent said why (taints dropped)" said_taints_dropped
dra_pod dra-nine chip-nine
check "a claim for chip 9 waits while it is out (Unschedulable: cannot allocate all claims)" \
  eventually 60 unschedulable_with_reason dra-nine
recoveries_before="$(recoveries_reset_only)"
echo 0 > "$ECC"
check "fault cleared: chip 9 is back in the pool" eventually 30 in_pool neurondevice9 yes
check "... once the agent had reset it (memory not tested: /sys is read-only)" \
  recoveries_at_least $((recoveries_before + 1))
check "the waiting claim gets chip 9" eventually 120 pod_succeeded dra-nine
saw_chip_nine() { pod_report dra-nine | grep -q 'DEVICES=neuron9 '; }
check "chip 9's claim saw /dev/neuron9" saw_chip_nine
