# Sourced by ultraserver_test.sh (its helpers, lib.sh's and dra_lib.sh's and the cluster are in scope).
# The reservation's taint keeps a claim of no workload off the reserved chips; one that tolerates
# the taint is refused at prepare, naming the workload.

echo "== a claim of no workload on a reserved chip waits unscheduled; one that forces its way is refused at prepare"
# Chip 3 of the first node (dra_pod pins its pods there); the second template also tolerates the
# reservation's taint, as a claim written to get past the scheduler would.
chip_three='device.attributes["neuron.aws.com"].resourceType == "neuron_device" && '"$(chip_id_is 3)"
claim_template chip-three neuron.aws.com "$chip_three"
dra_pod stranger chip-three
reserved_tainted() { k get resourceslices -o json | checks_py every-device-reserved; }
check "every reserved device carries the NoSchedule taint neuron.aws.com/reserved" reserved_tainted
check "the stranger waits unscheduled: the scheduler gives it no reserved chip" eventually 60 unschedulable stranger
claim_template chip-three-forced neuron.aws.com "$chip_three" neuron.aws.com/reserved
dra_pod forced chip-three-forced
refused_naming_workload() {
  k get events -n e2e --field-selector involvedObject.name=forced -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' |
    grep -m1 "is reserved for NeuronUltraServerWorkload e2e/$first"
}
check "a claim that tolerates the taint is refused at prepare, naming e2e/$first" eventually 90 refused_naming_workload
not_running() { [[ "$(pod_phase forced)" == Pending ]]; }
check "...and does not run" not_running
k delete pod -n e2e stranger forced --wait=false > /dev/null
