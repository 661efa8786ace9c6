# Sourced by dra_test.sh and dra_134_test.sh (lib.sh's and dra_lib.sh's helpers and the cluster
# are in scope). The whole-chip claims of deploy/examples/dra run with the devices and environment
# they asked for, on every version the driver supports.

echo "== claims for chips from the examples run with the devices and environment they asked for"
for example in 1-device 1x4-connected-devices all-devices lnc1; do
  apply_example_template "$example.yaml"
done
check "one chip: pod succeeds" run_claim dra-one one-chip
check "one chip: 1 device, its 4 cores, LNC 2" check_pod_saw dra-one neuron 1
check "four connected chips: pod succeeds" run_claim dra-four four-connected-chips
check "four connected chips: NeuronLink-connected" check_pod_saw dra-four neuron 4
check "all chips: pod succeeds" run_claim dra-all all-chips
check "all chips: 16 devices, 64 cores" check_pod_saw dra-all neuron 16
check "LNC 1 by NeuronConfig: pod succeeds" run_claim dra-lnc1 one-chip-lnc1
saw_lnc1_chip() { CORES_PER_DEVICE=8 EXPECTED_LNC=1 check_pod_saw "$1" neuron 1; }
check "LNC 1 by NeuronConfig: 8 cores numbered at LNC 1" saw_lnc1_chip dra-lnc1
check "every claim was unprepared once its pod finished" eventually 60 claims_prepared 0
check "unprepare removed every CDI spec" no_cdi_specs
