# Sourced by dra_test.sh (its helpers, dra_lib.sh's and the cluster are in scope).
# What cannot be given stays Pending or fails with a reason.

echo "== what cannot be given stays Pending or fails with a reason"
k apply -n e2e -f - > /dev/null <<'YAML'
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: seventeen-chips
spec:
  spec:
    devices:
      requests:
        - name: neurons
          exactly:
            deviceClassName: chip.neuron.aws.com
            count: 17
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: lnc3
spec:
  spec:
    devices:
      requests:
        - name: neurons
          exactly:
            deviceClassName: chip.neuron.aws.com
      config:
        - requests: [neurons]
          opaque:
            driver: neuron.aws.com
            parameters: {apiVersion: neuron.aws.com/v1, kind: NeuronConfig, logicalNeuronCore: 3}
YAML
dra_pod dra-seventeen seventeen-chips
check "17 chips: Pending, Unschedulable with the scheduler's reason" eventually 60 unschedulable_with_reason dra-seventeen
dra_pod dra-lnc3 lnc3
event_names_field() {
  k get events -n e2e --field-selector "involvedObject.name=$1" -o jsonpath='{.items[*].message}' |
    grep -o "NeuronConfig.logicalNeuronCore is 3[^\"]*" | head -n 1 | grep .
}
check "logicalNeuronCore 3: the pod's event names the field" eventually 90 event_names_field dra-lnc3
check "logicalNeuronCore 3: the pod does not start" phase_is dra-lnc3 Pending
k delete pod -n e2e dra-seventeen dra-lnc3 --wait=false > /dev/null
check "the driver keeps serving after the bad config" run_claim dra-after-bad one-chip
