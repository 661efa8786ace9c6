# Sourced by dra_test.sh (its helpers, dra_lib.sh's and the cluster are in scope).
# An opaque config that names one request of a claim.

echo "== a config naming one request of a claim applies to it alone"
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

