# Sourced by dra_134_test.sh (lib.sh's and dra_lib.sh's helpers and the cluster are in scope).
# The driver registers on 1.34 and publishes only what that API server keeps: whole chips, found
# out before its first write.

server_is_134() { k version -o json | checks_py server-version-is v1.34.; }
check "the API server is 1.34" server_is_134

echo "== the driver registers and falls back to what 1.34 keeps"
check "the DRA agent runs" eventually 120 agent_ready
check "kubelet registered the plugin" eventually 60 plugin_registered
whole_chips_only() { pool_devices | checks_py whole-chips-only 16; }
check "16 whole chips and no core partitions published" eventually 60 whole_chips_only
said_counters_dropped() { agent_log | grep -q "the API server dropped device counters"; }
check "the agent said why (counters dropped)" said_counters_dropped
# Found out by dry run before the first write: no pool with cores but no counters was ever
# written and then corrected (the scheduler could have given a chip and its core to two claims).
never_wrote_what_was_dropped() {
  ! agent_log | grep "dropped fields of a switched-off feature"
}
check "... before its first write: no pool was written and corrected" never_wrote_what_was_dropped
