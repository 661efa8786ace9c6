# Sourced by ultraserver_test.sh (its helpers, lib.sh's and dra_lib.sh's and the cluster are in scope).
# The reservation's taint keeps a claim of no workload off the reserved chips; admission refuses a
# claim or template that tolerates it (by key, or every taint at once) unless the operator wrote
# it; one that gets past admission anyway is refused at prepare, naming the workload; and the
# owner's pods, started after all of these, all run.

echo "== a claim of no workload on a reserved chip waits unscheduled; one that tolerates the taint is refused"
# Chip 3 of the first node (dra_pod pins its pods there).
chip_three='device.attributes["neuron.aws.com"].resourceType == "neuron_device" && '"$(chip_id_is 3)"
claim_template chip-three neuron.aws.com "$chip_three"
dra_pod stranger chip-three
reserved_tainted() { k get resourceslices -o json | checks_py every-device-reserved; }
check "every reserved device carries the NoSchedule taint neuron.aws.com/reserved" reserved_tainted
check "the stranger waits unscheduled: the scheduler gives it no reserved chip" eventually 60 unschedulable stranger

template_tolerating_the_key() {
  refused "toleration of neuron.aws.com/reserved" \
    claim_template chip-three-forced neuron.aws.com "$chip_three" neuron.aws.com/reserved
}
template_tolerating_everything() {
  refused "toleration of every taint" claim_template any-chip-anywhere neuron.aws.com "" "*"
}
claim_tolerating_everything_in_a_subrequest() {
  refused_at_admission "toleration of every taint" <<'YAML'
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: any-chip-anywhere}
spec:
  devices:
    requests:
      - name: neurons
        firstAvailable:
          - {name: gpu, deviceClassName: gpu.example.com}
          - name: chip
            deviceClassName: gpu.example.com
            selectors: [{cel: {expression: 'device.driver == "neuron.aws.com"'}}]
            tolerations: [{operator: Exists, effect: NoSchedule}]
YAML
}
another_drivers_claim_may_tolerate_everything() {
  k apply -n e2e -f - > /dev/null <<'YAML' || return 1
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: another-driver}
spec:
  devices:
    requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
          tolerations: [{operator: Exists}]
YAML
  k delete resourceclaim -n e2e another-driver --wait=false > /dev/null
}
check "a template tolerating neuron.aws.com/reserved is refused at admission, naming the taint" \
  template_tolerating_the_key
check "...and so is one tolerating every taint (operator Exists, no key)" template_tolerating_everything
check "...and a claim doing so in a firstAvailable subrequest that selects neuron.aws.com" \
  claim_tolerating_everything_in_a_subrequest
check "...while another driver's claim may still tolerate every taint" \
  another_drivers_claim_may_tolerate_everything

# Past admission only as the operator: the driver is the second line and refuses it at prepare.
operator_user="system:serviceaccount:kube-system:$(k get deploy -n kube-system torus-torus-ultraserver-operator \
  -o jsonpath='{.spec.template.spec.serviceAccountName}')"
AS_USER="$operator_user" claim_template chip-three-forced neuron.aws.com "$chip_three" neuron.aws.com/reserved
dra_pod forced chip-three-forced
refused_naming_workload() {
  k get events -n e2e --field-selector involvedObject.name=forced -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' |
    grep -m1 "is reserved for NeuronUltraServerWorkload e2e/$first"
}
check "a claim that tolerates the taint past admission is refused at prepare, naming e2e/$first" \
  eventually 90 refused_naming_workload
not_running() { [[ "$(pod_phase forced)" == Pending ]]; }
check "...and does not run" not_running
# What it was allocated it keeps while it exists (the reason admission refuses such claims).
k delete pod -n e2e forced --wait=true > /dev/null

echo "== the owner's pods, started after every stranger, all run"
deployment owner "$first" 4
check "the workload's 4 pods run, one per node, with the stranger still waiting" eventually 120 count_running owner 4
check "...and the stranger is still unscheduled" unschedulable stranger
k delete deploy -n e2e owner --wait=false > /dev/null
k delete pod -n e2e stranger --wait=false > /dev/null
owner_gone() { [[ -z "$(k get pods -n e2e -l app=owner -o name)" ]]; }
check "the owner's pods are gone before the workload is handed over" eventually 60 owner_gone
