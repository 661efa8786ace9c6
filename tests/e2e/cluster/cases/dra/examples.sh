# Sourced by dra_test.sh (its helpers, dra_lib.sh's and the cluster are in scope), after
# cases/dra_common/chip_examples.sh. The claims of deploy/examples/dra for cores of a chip and for
# a driver version run with the devices and environment they asked for.

echo "== claims for cores and for a driver version from the examples"
for example in 4-cores-one-chip specific-driver-version; do
  apply_example_template "$example.yaml"
done
check "four cores of one chip: pod succeeds" run_claim dra-cores four-cores-one-chip
# check_pod_saw derives the chips from the cores; one device is counted here.
saw_four_cores_of_one_chip() {
  check_pod_saw dra-cores neuroncore 4 || return 1
  [[ "$(pod_report dra-cores | sed -n 's/^DEVICES=//p' | wc -w)" == 1 ]]
}
check "four cores of one chip: one device, its 4 cores" saw_four_cores_of_one_chip
check "a driver-version selector: pod succeeds" run_claim dra-version driver-version
check "every claim was unprepared once its pod finished" eventually 60 claims_prepared 0
check "unprepare removed every CDI spec" no_cdi_specs
# Counted per batch: releases close together may share one.
check "unprepare reset the chips (in the background)" eventually 15 resets_at_least 4
