#!/usr/bin/env bash
# End-to-end of the DRA driver neuron.aws.com on a real Kubernetes: scripts/local-cluster.sh --dra
# brings up upstream's API server, scheduler, controller manager and a kubelet with containerd (CDI
# on) on each of three simulated nodes labelled for DRA (a trn2.48xlarge the checks are about, a
# trn2u.48xlarge of an UltraServer and an inf2.xlarge beside it), and installs Torus with
# dra.enabled.
# This script checks what Kubernetes and the containers see: ResourceSlices with AWS's attributes,
# claims for 1, 4 connected and all chips, 4 cores of one chip and LNC 1 (the examples in
# deploy/examples/dra), an unsatisfiable claim, a bad opaque config, a health taint that comes and
# goes, old `aws.amazon.com/neuron` pods, unprepare, agent and kubelet restarts, and uninstall.
#
# Usage: tests/e2e/cluster/dra_test.sh [--keep]   (--keep leaves the cluster running)
# Needs root. Prints 'N passed, N failed'; exits non-zero on any failure. Every wait is bounded.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
source "$REPO/tests/e2e/cluster/lib.sh"
source "$REPO/tests/e2e/cluster/dra_lib.sh"

cluster_test_setup torus-dra "${1:-}"

started=$SECONDS
echo "== local cluster in DRA mode (state: $STATE_DIR)"
# Three real DRA nodes; the pods below run on the first (NODE_NAME), whose driver they check. Plus
# two kwok nodes, one that advertises the device plugin's resources and one in DRA mode with the
# slices the driver publishes for a trn2: a mixed cluster.
cluster up --dra --nodes=trn2.48xlarge:1,trn2u.48xlarge:1@us0,inf2.xlarge:1 \
  --fake-nodes=trn2.48xlarge:1 --dra-nodes=trn2.48xlarge:1
source "$STATE_DIR/cluster.env"
export KUBECONFIG KUBECTL SIMULATED_NODE_DIR AGENT_METRICS_PORT NODE_IP
PIN_NODE="$NODE_NAME"  # pod_manifest's pods too
read -r -a node_names <<< "$NODE_NAMES"
TRN2U_NODE="${node_names[1]}"
echo "cluster with Torus (DRA) up in $((SECONDS - started)) s"

# trn2.48xlarge: 16 chips of 8 physical cores; LNC 2 makes 4 logical cores per chip.
CORES_PER_DEVICE=4
EXPECTED_LNC=2
export CORES_PER_DEVICE EXPECTED_LNC
k create namespace e2e > /dev/null





echo "== the driver registers and publishes the pool"
check "the DRA agent runs on the node labelled for DRA" eventually 120 agent_ready
no_plugin_agent() {
  [[ -z "$(k get pods -n kube-system -l app.kubernetes.io/component=node-agent -o name)" ]]
}
check "no device-plugin agent on that node" no_plugin_agent
check "kubelet registered the plugin" eventually 60 plugin_registered
check "DeviceClasses neuron.aws.com, chip. and core. are installed" \
  k get deviceclass neuron.aws.com chip.neuron.aws.com core.neuron.aws.com
pool_is_complete() {
  pool_devices | python3 -c '
import json, sys
d = json.load(sys.stdin)
chips = [n for n in d if n.startswith("neurondevice")]
cores = [n for n in d if n.startswith("neuroncore")]
assert len(chips) == 16 and len(cores) == 64, f"{len(chips)} chips, {len(cores)} cores"'
}
check "16 chips and 64 cores published" eventually 60 pool_is_complete
chip_attributes_are_aws() {
  pool_devices | python3 -c '
import json, sys
d = json.load(sys.stdin)["neurondevice5"]
a = d["attributes"]
assert a["deviceId"] == {"int": 5}, a
assert a["resourceType"] == {"string": "neuron_device"}, a
assert a["instanceType"] == {"string": "trn2.48xlarge"}, a
assert a["topology_x"] == {"int": 1} and a["topology8_id"] == {"int": 0}, a
assert a["neuronDriverVersion"] == {"version": "2.24.7"}, a
assert "resource.aws.com/devicegroup4_id" in a, a
assert d["capacity"]["memory"] == {"value": "96Gi"}, d["capacity"]
assert d["consumesCounters"][0]["counters"] == {"device5": {"value": "4"}}, d'
}
check "chip attributes use AWS names and carry capacity" chip_attributes_are_aws

echo "== a slice someone else edits is written back"
# kubectl patch as an operator (or an old controller) might: the agent's watch sees the slice
# differ from what it published and writes it back within one write (audit L2).
edit_a_slice() {
  local slice index
  read -r slice index < <(k get resourceslices -o json | python3 -c '
import json, sys
for s in json.load(sys.stdin)["items"]:
    if s["spec"].get("nodeName") == sys.argv[1] and s["spec"]["driver"] == "neuron.aws.com":
        for i, d in enumerate(s["spec"].get("devices", [])):
            if d["name"] == "neurondevice5":
                print(s["metadata"]["name"], i)
                sys.exit()' "$NODE_NAME")
  k patch resourceslice "$slice" --type=json -p "[{\"op\": \"replace\", \"path\": \"/spec/devices/$index/attributes/instanceType/string\", \"value\": \"edited-by-hand\"}]"
}
instance_type_is() {
  pool_devices | python3 -c '
import json, sys
have = json.load(sys.stdin)["neurondevice5"]["attributes"]["instanceType"]
assert have == {"string": sys.argv[1]}, have' "$1"
}
check "kubectl patch changes neurondevice5's instanceType" edit_a_slice
check "... the agent writes it back" eventually 30 instance_type_is trn2.48xlarge
said_written_back() { agent_log | grep -q "differs from what was published; writing it back"; }
check "... and says why" said_written_back

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
release_resets() { metric 'torus_device_release_resets_total{result="ok"}' | cut -d. -f1; }
resets_at_least() {
  local have
  have="$(release_resets)"
  ((have >= $1)) || { echo "torus_device_release_resets_total{result=\"ok\"} is $have, want >= $1"; return 1; }
}
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

echo "== partitions: a chip and one of its own cores are never allocated at once"
# kube-scheduler keeps them apart with the neuron-chips counters; its message names no counter
# ("cannot allocate all claims"), so the proof is that the same waiting pod is placed as soon as
# the chip is given back, nothing else changed.
apply_chip_nine_template
apply_chip_nine_template core-of-nine core.neuron.aws.com
dra_pod part-chip chip-nine 3600
check "a pod holding chip 9 runs" eventually 120 phase_is part-chip Running
dra_pod part-core-a core-of-nine 3600
check "a claim for a core of chip 9 waits (Unschedulable: cannot allocate all claims)" \
  eventually 60 unschedulable_with_reason part-core-a
k delete pod -n e2e part-chip --wait=false > /dev/null
check "chip 9 given back: that same pod runs on one of its cores" \
  eventually 120 phase_is part-core-a Running
dra_pod part-core-b core-of-nine 3600
check "a second core of chip 9 runs beside the first" eventually 120 phase_is part-core-b Running
two_cores_of_nine() {
  local a b
  a="$(claim_devices part-core-a)" b="$(claim_devices part-core-b)"
  echo "part-core-a: $a, part-core-b: $b"
  [[ "$a" =~ ^neuroncore3[6-9]$ && "$b" =~ ^neuroncore3[6-9]$ && "$a" != "$b" ]]
}
check "... each on its own core of chip 9 (36-39)" two_cores_of_nine
dra_pod part-chip-again chip-nine
check "while its cores are held, a claim for chip 9 waits (Unschedulable)" \
  eventually 60 unschedulable_with_reason part-chip-again
k delete pod -n e2e part-core-a part-core-b part-chip-again --wait=false > /dev/null

echo "== a hardware fault taints the chip; cleared, the taint goes"
ECC="$(ecc_counter 9)"
taint_on() {
  pool_devices | python3 -c '
import json, sys
name, want = sys.argv[1], sys.argv[2]
taints = json.load(sys.stdin)[name].get("taints", [])
have = ",".join(t["key"] + "=" + t.get("value", "") + ":" + t["effect"] for t in taints)
assert have == want, f"{name} taints: {have!r}, want {want!r}"' "$1" "$2"
}
apply_chip_nine_template
# What kubelet shows in the pod's status from the driver's resource-health stream.
resource_health_is() {
  local health
  health="$(k get pod -n e2e "$1" -o jsonpath='{.status.containerStatuses[0].allocatedResourcesStatus[*].resources[*].health}')"
  [[ "$health" == "$2" ]] || { echo "allocatedResourcesStatus health: '${health}', want '$2'"; return 1; }
}
dra_pod dra-nine-held chip-nine 3600
check "a pod holding chip 9 runs" eventually 120 phase_is dra-nine-held Running
check "its status shows chip 9 Healthy (resource health)" eventually 60 resource_health_is dra-nine-held Healthy
faulted=$SECONDS
echo 2 > "$ECC"
check "uncorrected ECC on chip 9: NoSchedule taint on it" eventually 10 taint_on neurondevice9 "neuron.aws.com/unhealthy=UncorrectedECC:NoSchedule"
echo "      tainted $((SECONDS - faulted)) s after the fault"
check "... and on its cores" taint_on neuroncore37 "neuron.aws.com/unhealthy=UncorrectedECC:NoSchedule"
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

echo "== old pod specs: aws.amazon.com/neuron runs on the DRA node"
pod_manifest dra-extended neuron 4 | k apply -f - > /dev/null
check "aws.amazon.com/neuron: 4 runs on the DRA node" eventually 120 pod_succeeded dra-extended
check "... with 4 chips and their cores" saw_any dra-extended neuron 4
pod_manifest dra-extended-cores neuroncore 2 | k apply -f - > /dev/null
check "aws.amazon.com/neuroncore: 2 runs on the DRA node" eventually 120 pod_succeeded dra-extended-cores
check "... with 2 cores" saw_any dra-extended-cores neuroncore 2

echo "== the UltraServer node device on the trn2u: never beside one of its chips; the environment"
# deploy/examples/dra/2-node-inference-us.yaml's claim (the whole node, UltraServerConfig mode 2)
# on the trn2u node. While a pod holds one chip there, the node device (which consumes every
# chip's counter) cannot be allocated; given back, the same pod runs, and its container gets the
# pair's mode (X2V, 3), server id and node id, the ones the node's own labels publish.
NODE_NAME="$TRN2U_NODE" dra_pod part-us-chip one-chip 3600
check "a pod holding one chip of the trn2u runs" eventually 120 phase_is part-us-chip Running
apply_example_template 2-node-inference-us.yaml
NODE_NAME="$TRN2U_NODE" dra_pod dra-us-node ultraserver-node-pair
check "AWS's UltraServer node claim waits meanwhile (Unschedulable: cannot allocate all claims)" \
  eventually 60 unschedulable_with_reason dra-us-node
k delete pod -n e2e part-us-chip --wait=false > /dev/null
check "the chip given back: that claim runs on the trn2u" eventually 120 pod_succeeded dra-us-node
check "... with the pair's mode and the server and node ids its node's labels publish" \
  ultraserver_environment dra-us-node "$TRN2U_NODE"
k delete pod -n e2e dra-us-node --wait=false > /dev/null

echo "== restarts keep every prepared claim"
dra_pod dra-held four-connected-chips 3600
check "a long-running claim pod runs" eventually 120 phase_is dra-held Running
check "its claim is prepared" eventually 30 claims_prepared 1
# The claim's cores carry the pod kubelet's pod-resources lists for it (dynamic resources).
claim_cores_name_the_pod() {
  local claim_cores
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" > "$STATE_DIR/metrics.txt" || return 1
  claim_cores="$(allocations | python3 -c '
import json, sys
print(" ".join(str(c) for claim in json.load(sys.stdin)["claims"] for c in claim["cores"]))')"
  [[ -n "$claim_cores" ]] || { echo "no prepared claim"; return 1; }
  # Who the agent sees using the claim, should this fail.
  allocations
  python3 - "$claim_cores" "$STATE_DIR/metrics.txt" "$(claim_name_of dra-held)" "$NODE_NAME" <<'PY'
import re, sys
cores = {int(c) for c in sys.argv[1].split()}
claim, node = sys.argv[3], sys.argv[4]
named, per_core = {}, {}
for line in open(sys.argv[2]):
    labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
    if line.startswith("torus_allocation_info{"):
        assert labels["resource"] == "neuron.aws.com", labels
        named[int(labels["neuroncore"])] = labels["pod"]
    if line.startswith("neuroncore_memory_usage_tensors{"):
        per_core[int(labels["neuroncore"])] = labels
print("claim cores", sorted(cores), "named", named)
assert set(named) == cores and set(named.values()) == {"dra-held"}
# NVIDIA's DRA labels, on a per-core family too: the claim, and each core's own chip.
for core in cores:
    got = {k: v for k, v in per_core[core].items() if k.startswith("dra_")}
    want = {"dra_claim_name": claim, "dra_claim_namespace": "e2e",
            "dra_device_name": f"neurondevice{core // 4}", "dra_pool_name": node,
            "dra_driver_name": "neuron.aws.com"}
    assert got == want, f"core {core}: {got}, want {want}"
free = [c for c in per_core if c not in cores]
assert free and all(per_core[c]["dra_claim_name"] == "" for c in free), "a free core names a claim"
PY
}
claim_name_of() {
  k get pod -n e2e "$1" -o jsonpath='{.status.resourceClaimStatuses[0].resourceClaimName}'
}
check "/metrics names dra-held on exactly its claim's 16 cores, with the claim's dra_* labels" \
  eventually 15 claim_cores_name_the_pod
old_agent="$(agent_pod)"
k delete pod -n kube-system "$old_agent" --wait=true > /dev/null
check "the agent comes back" eventually 120 agent_ready
check "the restarted agent still holds the claim (checkpoint)" eventually 30 claims_prepared 1
dra_pod dra-during-restart four-connected-chips
check "a claim after the agent restart runs" eventually 120 pod_succeeded dra-during-restart
disjoint_from_held() {
  local held got
  held="$(allocations | python3 -c 'import json, sys; print(json.load(sys.stdin)["claims"][0]["devices"])')"
  got="$(pod_report dra-during-restart | sed -n 's/^DEVICES=//p')"
  echo "held $held, got $got"
  python3 -c 'import json, sys; held = set(json.loads(sys.argv[1])); got = {int(d[6:]) for d in sys.argv[2].split()}; assert len(got) == 4 and not held & got' "$held" "$got"
}
check "it did not get the held pod's chips" disjoint_from_held
cluster restart "kubelet-$NODE_NAME" > /dev/null
node_ready() {
  [[ "$(k get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]
}
check "after a kubelet restart the node is Ready" eventually 120 node_ready
check "after a kubelet restart a claim runs (registered again)" run_claim dra-after-kubelet one-chip
resets_before="$(release_resets)"
k delete pod -n e2e dra-held --wait=true > /dev/null
check "deleting the held pod unprepares its claim" eventually 60 claims_prepared 0
check "... and resets its chips" eventually 15 resets_at_least $((resets_before + 1))
check "... and removes its CDI spec" no_cdi_specs

echo "== dra.taintEffect=NoExecute: a fault evicts the pod using the chip"
check "helm upgrade with dra.taintEffect=NoExecute" "$REPO/build/tools/helm" --kubeconfig "$KUBECONFIG" \
  upgrade torus "$REPO/helm/torus" -n kube-system --reuse-values --set dra.taintEffect=NoExecute \
  --wait --timeout 3m
check "the DRA agent runs again" eventually 120 agent_ready
dra_pod dra-evicted chip-nine 3600
check "a pod holding chip 9 runs" eventually 120 phase_is dra-evicted Running
echo 2 > "$ECC"
check "uncorrected ECC on chip 9: a NoExecute taint on it" eventually 30 taint_on neurondevice9 \
  "neuron.aws.com/unhealthy=UncorrectedECC:NoExecute"
# kube-controller-manager's device taint eviction marks the pod and deletes it; its event stays.
evicted_by_device_taint() {
  local reasons
  reasons="$(k get events -n e2e --field-selector involvedObject.name=dra-evicted -o jsonpath='{.items[*].reason}')"
  grep -qw DeviceTaintManagerEviction <<< "$reasons" ||
    { echo "no DeviceTaintManagerEviction event yet (events: $reasons)"; return 1; }
  [[ -z "$(k get pod -n e2e dra-evicted -o name 2> /dev/null)" ]] ||
    [[ -n "$(k get pod -n e2e dra-evicted -o jsonpath='{.metadata.deletionTimestamp}')" ]] ||
    { echo "dra-evicted is not being deleted"; return 1; }
}
check "the device taint eviction deletes the pod using chip 9" eventually 60 evicted_by_device_taint
echo 0 > "$ECC"
check "fault cleared: the taint is gone" eventually 30 taint_on neurondevice9 ""

echo "== a mixed cluster: device-plugin and DRA nodes schedule the same old pod spec"
FAKE_NODE="$(k get nodes -l type=kwok,'!torus.dev/neuron-mode' -o jsonpath='{.items[0].metadata.name}')"
FAKE_DRA_NODE="$(k get nodes -l type=kwok,torus.dev/neuron-mode=dra -o jsonpath='{.items[0].metadata.name}')"
fake_dra_pool() {
  local devices
  devices="$(k get resourceslices --field-selector "spec.nodeName=$FAKE_DRA_NODE" -o json |
    python3 -c 'import json, sys; print(sum(len(s["spec"].get("devices", [])) for s in json.load(sys.stdin)["items"]))')"
  echo "$devices devices in $FAKE_DRA_NODE's pool"
  [[ -n "$FAKE_DRA_NODE" && "$devices" == 80 ]]  # 16 chips and 64 single-core partitions
}
check "--dra-nodes: a kwok node in DRA mode with the driver's pool for a trn2" fake_dra_pool
whole_node_pod() {
  k apply -f - > /dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: e2e
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  tolerations:
    - {key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}
  containers:
    - name: app
      image: public.ecr.aws/docker/library/debian:bookworm-slim
      command: [sh, -c, 'echo "DEVICES=\$(cd /dev && ls -d neuron[0-9]* | tr "\n" " ")" | tee /dev/termination-log; sleep 3600']
      resources:
        limits:
          aws.amazon.com/neuron: 16
YAML
}
node_of() { k get pod -n e2e "$1" -o jsonpath='{.spec.nodeName}'; }
# Four nodes have 16 chips: the kwok device-plugin node, the kwok DRA node, and the real trn2 and
# trn2u (the inf2.xlarge has one).
MIXED=(mixed-a mixed-b mixed-c mixed-d)
for pod in "${MIXED[@]}"; do whole_node_pod "$pod"; done
one_per_node() {
  local pod placed=()
  for pod in "${MIXED[@]}"; do placed+=("$(node_of "$pod")"); done
  echo "placed on: ${placed[*]}"
  [[ "$(printf '%s\n' "${placed[@]}" | sort | tr '\n' ' ')" == \
    "$(printf '%s\n' "$FAKE_DRA_NODE" "$FAKE_NODE" "$NODE_NAME" "$TRN2U_NODE" | sort | tr '\n' ' ')" ]]
}
check "aws.amazon.com/neuron: 16 four times: one pod on each of the device-plugin node, the two real DRA nodes and the fake DRA node" \
  eventually 120 one_per_node
pod_on() {
  local pod
  for pod in "${MIXED[@]}"; do [[ "$(node_of "$pod")" == "$1" ]] && echo "$pod"; done
}
on_dra_node="$(pod_on "$NODE_NAME")"
check "the pod on the DRA node runs with all 16 chips" eventually 120 phase_is "$on_dra_node" Running
check "... and the one on the trn2u DRA node too" eventually 120 phase_is "$(pod_on "$TRN2U_NODE")" Running
# kube-scheduler's DRA allocator made the fake DRA node's pod a claim for all 16 of its chips.
fake_node_claim() {
  local pod chips
  pod="$(pod_on "$FAKE_DRA_NODE")"
  chips="$(k get resourceclaims -n e2e -o json | python3 -c '
import json, sys
pod, node = sys.argv[1], sys.argv[2]
for claim in json.load(sys.stdin)["items"]:
    owners = [o["name"] for o in claim["metadata"].get("ownerReferences", [])]
    results = (claim.get("status", {}).get("allocation") or {}).get("devices", {}).get("results", [])
    if pod in owners:
        print(sorted({r["device"] for r in results if r["pool"] == node}))' "$pod" "$FAKE_DRA_NODE")"
  echo "${pod:-no pod}'s claim on $FAKE_DRA_NODE: $chips"
  [[ "$chips" == *neurondevice15* && "$(grep -o neurondevice <<< "$chips" | wc -l)" == 16 ]]
}
check "... and the fake DRA node's pod holds a claim for its 16 chips" eventually 60 fake_node_claim
whole_node_pod mixed-e
check "a fifth such pod stays Pending: every node is full" eventually 60 unschedulable mixed-e
k delete pod -n e2e "${MIXED[@]}" mixed-e --wait=true > /dev/null
check "the DRA node's claim is unprepared after the mixed pods" eventually 60 claims_prepared 0

echo "== a corrupt checkpoint stops the driver and the Node says what to do"
# Starting without its record of prepared claims would hand out chips running pods hold: the
# driver refuses, and a Warning Event on the Node names the file and the way out (audit L6).
CHECKPOINT="$KUBELET_ROOT/plugins/neuron.aws.com/checkpoint.json"
cp "$CHECKPOINT" "$STATE_DIR/checkpoint.saved"
echo '{"version": 1, "claims": [' > "$CHECKPOINT"
k delete pod -n kube-system "$(agent_pod)" --wait=true > /dev/null
node_event_says_what_to_do() {
  k get events -n default --field-selector "involvedObject.name=$NODE_NAME,reason=DRADriverNotStarted" \
    -o jsonpath='{.items[*].message}' |
    grep -o 'neuron.aws.com/checkpoint.json[^;]*; the driver cannot tell which chips.*Drain the node' |
    head -n 1 | grep .
}
check "the Node's DRADriverNotStarted event names the file and says to drain and delete it" \
  eventually 90 node_event_says_what_to_do
agent_not_ready() { ! agent_ready; }
check "... and the agent is not Ready" agent_not_ready
cp "$STATE_DIR/checkpoint.saved" "$CHECKPOINT"
k delete pod -n kube-system "$(agent_pod)" --wait=true > /dev/null
check "with the checkpoint back, a new agent starts and is Ready" eventually 120 agent_ready

uninstall_and_report
