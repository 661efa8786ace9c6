#!/usr/bin/env bash
# The DRA driver on Kubernetes 1.34, the oldest release EKS runs it on: the same local cluster as
# dra_test.sh (upstream's components, containerd with CDI, a simulated trn2.48xlarge labelled for
# DRA) at v1.34.4, where partitionable devices, device taints and extended-resource mapping are
# alpha and off. The driver must notice what the API server drops and fall back: whole chips only
# (no core partitions, whose counters would be dropped) and unhealthy chips left out of the pool
# (no taints), and still publish AWS's UltraServer node device on a trn2u (without counters).
# Checked: the fallbacks, claims for 1, 4 connected and all chips and LNC 1, a prioritized list
# (each container its request's chip and cores), admin access beside a workload, AWS's UltraServer
# template on a trn2u, a fault that takes a chip out and the recovery that brings it back,
# unprepare, and helm test where every node is in DRA mode.
#
# Usage: tests/e2e/cluster/dra_134_test.sh [--keep]   (--keep leaves the cluster running)
# Needs root. Prints 'N passed, N failed'; exits non-zero on any failure. Every wait is bounded.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
source "$REPO/tests/e2e/cluster/lib.sh"
source "$REPO/tests/e2e/cluster/dra_lib.sh"
K8S_134=v1.34.4

cluster_test_setup torus-dra-134 "${1:-}"

started=$SECONDS
echo "== local cluster in DRA mode on Kubernetes $K8S_134 (state: $STATE_DIR)"
# The pods below run on the trn2 (NODE_NAME); the trn2u of an UltraServer is for AWS's template.
cluster up --dra --k8s-version="$K8S_134" --nodes=trn2.48xlarge:1,trn2u.48xlarge:1@us0
source "$STATE_DIR/cluster.env"
export KUBECONFIG KUBECTL SIMULATED_NODE_DIR AGENT_METRICS_PORT NODE_IP
PIN_NODE="$NODE_NAME"
read -r -a node_names <<< "$NODE_NAMES"
TRN2U_NODE="${node_names[1]}"
echo "cluster with Torus (DRA) up in $((SECONDS - started)) s"

CORES_PER_DEVICE=4
EXPECTED_LNC=2
export CORES_PER_DEVICE EXPECTED_LNC
k create namespace e2e > /dev/null

server_is_134() { k version -o json | python3 -c '
import json, sys
v = json.load(sys.stdin)["serverVersion"]["gitVersion"]
assert v.startswith("v1.34."), v'; }
check "the API server is 1.34" server_is_134

echo "== the driver registers and falls back to what 1.34 keeps"
check "the DRA agent runs" eventually 120 agent_ready
check "kubelet registered the plugin" eventually 60 plugin_registered
whole_chips_only() {
  pool_devices | python3 -c '
import json, sys
d = json.load(sys.stdin)
chips = [n for n in d if n.startswith("neurondevice")]
cores = [n for n in d if n.startswith("neuroncore")]
assert len(chips) == 16 and not cores, f"{len(chips)} chips, {len(cores)} cores"
assert all("consumesCounters" not in d[n] for n in chips), "a chip still consumes counters"'
}
check "16 whole chips and no core partitions published" eventually 60 whole_chips_only
said_counters_dropped() { agent_log | grep -q "the API server dropped device counters"; }
check "the agent said why (counters dropped)" said_counters_dropped
# Found out by dry run before the first write: no pool with cores but no counters was ever
# written and then corrected (the scheduler could have given a chip and its core to two claims).
never_wrote_what_was_dropped() {
  ! agent_log | grep "dropped fields of a switched-off feature"
}
check "... before its first write: no pool was written and corrected" never_wrote_what_was_dropped

echo "== claims for chips run with the devices and environment they asked for"
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

# Both on by default (beta) in 1.34 already.
prioritized_list_checks
admin_access_checks

echo "== AWS's UltraServer template on the trn2u: the node device without counters"
trn2u_node_device() {
  NODE_NAME="$TRN2U_NODE" pool_devices | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert "neuronnode" in d, "no neuronnode among " + ", ".join(sorted(d)[:5]) + "..."
n = d["neuronnode"]
assert n["attributes"]["resourceType"] == {"string": "neuron_node"}, n["attributes"]
assert "consumesCounters" not in n, "the node device consumes counters the API dropped"
assert len([k for k in d if k.startswith("neurondevice")]) == 16, sorted(d)'
}
check "the trn2u publishes neuronnode beside its 16 chips, without counters" \
  eventually 60 trn2u_node_device
apply_example_template 2-node-inference-us.yaml
NODE_NAME="$TRN2U_NODE" dra_pod dra-us-node ultraserver-node-pair
check "AWS's UltraServer node claim runs on the trn2u" eventually 120 pod_succeeded dra-us-node
check "... with the pair's mode and the server and node ids its node's labels publish" \
  ultraserver_environment dra-us-node "$TRN2U_NODE"
check "... and all 16 chips" saw_any dra-us-node neuron 16

echo "== a hardware fault takes the chip out of the pool; recovered, it comes back"
ECC="$(ecc_counter 9)"
apply_chip_nine_template
in_pool() {
  pool_devices | python3 -c '
import json, sys
name, want = sys.argv[1], sys.argv[2] == "yes"
have = name in json.load(sys.stdin)
assert have == want, f"{name} in the pool: {have}, want {want}"' "$1" "$2"
}
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

echo "== helm test where every Neuron node is in DRA mode"
# Before 1.36 there is no aws.amazon.com/neuroncore on a DRA node: with dra.allNodes the chart's
# test pod asks for a chip by claim.
HELM="$REPO/build/tools/helm"
check "helm upgrade with dra.allNodes=true" "$HELM" --kubeconfig "$KUBECONFIG" upgrade torus \
  "$REPO/helm/torus" -n kube-system --reuse-values --set dra.allNodes=true --wait --timeout 3m
check "helm test" "$HELM" --kubeconfig "$KUBECONFIG" test torus -n kube-system --timeout 3m

uninstall_and_report
