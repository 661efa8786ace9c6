# Sourced by dra_test.sh (its helpers, dra_lib.sh's and the cluster are in scope).
# The claims of deploy/examples/dra run with the devices and environment they asked for.

echo "== claims from the examples run with the devices and environment they asked for"
for example in 1-device 1x4-connected-devices all-devices 4-cores-one-chip lnc1 specific-driver-version; do
  apply_example_template "$example.yaml"
done
check "one chip: pod succeeds" run_claim dra-one one-chip
check "one chip: 1 device, its 4 cores, LNC 2" check_pod_saw dra-one neuron 1
check "four connected chips: pod succeeds" run_claim dra-four four-connected-chips
check "four connected chips: NeuronLink-connected" check_pod_saw dra-four neuron 4
check "all chips: pod succeeds" run_claim dra-all all-chips
check "all chips: 16 devices, 64 cores" check_pod_saw dra-all neuron 16
check "four cores of one chip: pod succeeds" run_claim dra-cores four-cores-one-chip
# check_pod_saw derives the chips from the cores; one device is counted here.
saw_four_cores_of_one_chip() {
  check_pod_saw dra-cores neuroncore 4 || return 1
  [[ "$(pod_report dra-cores | sed -n 's/^DEVICES=//p' | wc -w)" == 1 ]]
}
check "four cores of one chip: one device, its 4 cores" saw_four_cores_of_one_chip
check "LNC 1 by NeuronConfig: pod succeeds" run_claim dra-lnc1 one-chip-lnc1
saw_lnc1_chip() { CORES_PER_DEVICE=8 EXPECTED_LNC=1 check_pod_saw "$1" neuron 1; }
check "LNC 1 by NeuronConfig: 8 cores numbered at LNC 1" saw_lnc1_chip dra-lnc1
check "a driver-version selector: pod succeeds" run_claim dra-version driver-version
check "every claim was unprepared once its pod finished" eventually 60 claims_prepared 0
check "unprepare removed every CDI spec" no_cdi_specs
# Counted per batch: releases close together may share one.
check "unprepare reset the chips (in the background)" eventually 15 resets_at_least 4

prioritized_list_checks

# A config naming one request applies to it alone; LNC 1 for one request and the node's LNC 2 for
# the other cannot share a claim, and the pod's event says so.
pinned <<'YAML' | k apply -n e2e -f - > /dev/null
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: mixed-lnc}
spec:
  spec:
    devices:
      requests:
        - {name: small, exactly: {deviceClassName: chip.neuron.aws.com}}
        - {name: large, exactly: {deviceClassName: chip.neuron.aws.com}}
      config:
        - requests: [small]
          opaque:
            driver: neuron.aws.com
            parameters: {apiVersion: neuron.aws.com/v1, kind: NeuronConfig, logicalNeuronCore: 1}
YAML
dra_pod dra-mixed-lnc mixed-lnc
mixed_lnc_event() {
  k get events -n e2e --field-selector "involvedObject.name=dra-mixed-lnc" -o jsonpath='{.items[*].message}' |
    grep -o 'its requests are configured differently ([^)]*)' | head -n 1 | grep .
}
check "LNC 1 for one request only: the pod's event names both requests' LNC" \
  eventually 90 mixed_lnc_event
check "... and the pod does not start" phase_is dra-mixed-lnc Pending
k delete pod -n e2e dra-mixed-lnc --wait=false > /dev/null

admin_access_checks
