#!/usr/bin/env bash
# End-to-end on several real nodes: scripts/local-cluster.sh brings up five kubelets, each in its
# own mount and network namespace — the four trn2u.48xlarge nodes of one simulated UltraServer and
# a trn2.48xlarge — with the simulated driver's files at the real driver's paths (its devices
# served by neuron-sim-driver as the driver serves them), and installs Torus from the chart's
# production values. Checked: each node is seen as its own (devices, UltraServer place, address:
# logs, exec and top), the agent's pod is the production one (args, mounts, capabilities:
# rendered and diffed) and a write production forbids fails, pods land where they are sent, gangs
# start whole on one UltraServer or not at all (holding nothing meanwhile), an
# AllReduce runs between pods on the UltraServer's four nodes over libfabric tcp and a dead rank
# stops the others, a chip whose reset fails holds its pod back until a reset succeeds, and one
# node's loss leaves the others' pods alone and heals when it returns.
#
# Usage: tests/e2e/cluster/multinode_test.sh [--keep]   (--keep leaves the cluster running)
# Needs root. Prints 'N passed, N failed'; exits non-zero on any failure. Bounded: every wait has
# a deadline.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
source "$REPO/tests/e2e/cluster/lib.sh"

cluster_test_setup torus-multinode "${1:-}"

started=$SECONDS
echo "== five real nodes: an UltraServer of four trn2u and a trn2 (state: $STATE_DIR)"
cluster up --nodes=trn2u.48xlarge:4@us0,trn2.48xlarge:1
source "$STATE_DIR/cluster.env"
export KUBECONFIG KUBECTL
read -r -a names <<< "$NODE_NAMES"
read -r -a ips <<< "$NODE_IPS"
echo "cluster with Torus up in $((SECONDS - started)) s"
ULTRASERVER=(0 1 2 3)  # indices of the UltraServer's nodes in names; the trn2 is index 4
TRN2=4
k create namespace e2e > /dev/null
neuron_cli() { "$REPO/build/bin/kubectl-neuron" "$@"; }
agent_pod_on() {
  k get pods -n kube-system -l app.kubernetes.io/component=node-agent \
    --field-selector "spec.nodeName=$1" -o 'jsonpath={.items[0].metadata.name}'
}

echo "== every node is its own"
nodes_ready() {
  local name
  for name in "${names[@]}"; do
    [[ "$(k get node "$name" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]] ||
      { echo "$name is not Ready"; return 1; }
  done
}
check "five real nodes are Ready" eventually 60 nodes_ready
each_node_has_its_address() {
  local index
  for index in "${!names[@]}"; do
    local address
    address="$(k get node "${names[$index]}" -o 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}')"
    [[ "$address" == "${ips[$index]}" ]] || { echo "${names[$index]}: InternalIP '$address', want ${ips[$index]}"; return 1; }
  done
}
check "each node has its own address" each_node_has_its_address
nodes_listed() {
  local listed
  listed="$(neuron_cli nodes)"
  echo "$listed"
  local index
  for index in "${ULTRASERVER[@]}"; do
    grep -qE "${names[$index]} .*trn2u.48xlarge.* 0/64 .*16/16" <<< "$listed" || return 1
  done
  grep -qE "${names[$TRN2]} .*trn2.48xlarge .* 0/64 .*16/16" <<< "$listed"
}
check "kubectl neuron nodes lists the five with their own devices" eventually 90 nodes_listed
ultraserver_places() {
  k get nodes -o json | python3 -c '
import json, sys
labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in json.load(sys.stdin)["items"]}
names = sys.argv[1:]
key = "neuron.amazonaws.com/ultraserver-"
us = [labels[n].get(key + "server-id-4") for n in names[:4]]
positions = [labels[n].get(key + "node-id-4") for n in names[:4]]
print(us, positions, {k: v for k, v in labels[names[4]].items() if k.startswith(key)})
assert us[0] and len(set(us)) == 1, "the UltraServer nodes name different UltraServers"
assert positions == ["0", "1", "2", "3"], "positions are not 0 to 3"
assert not any(k.startswith(key + "server-id") for k in labels[names[4]]), "trn2 claims an UltraServer"
' "${names[@]}"
}
check "the trn2u nodes share one UltraServer at positions 0-3; the trn2 is in none" eventually 30 ultraserver_places

echo "== the node agent is the production one"
no_simulate_argument() {
  local args
  args="$(k get pods -n kube-system -l app.kubernetes.io/component=node-agent -o jsonpath='{..args}')"
  echo "$args"
  [[ -n "$args" && "$args" != *simulate* ]]
}
check "no agent runs with a simulate argument" no_simulate_argument
agent_pod_matches_production() {
  local helm="$REPO/build/tools/helm"
  # Production: the chart's defaults, in the same mode (device plugin or DRA) as here.
  "$helm" template torus "$REPO/helm/torus" -n kube-system --set "dra.enabled=$( ((DRA)) && echo true || echo false)" \
    > "$STATE_DIR/production.yaml"
  "$helm" template torus "$REPO/helm/torus" -n kube-system -f "$STATE_DIR/values-local.yaml" \
    > "$STATE_DIR/local.yaml"
  python3 "$REPO/tests/e2e/cluster/agent_pod_diff.py" "$STATE_DIR/production.yaml" "$STATE_DIR/local.yaml"
}
check "the agent's pod differs from production only in image, API address and host network" \
  agent_pod_matches_production
forbidden_writes_fail() {
  local pod output
  pod="$(agent_pod_on "${names[0]}")"
  # sysfs outside the driver's devices is read-only to the agent, as on a real node...
  output="$(k exec -n kube-system "$pod" -- sh -c \
    'echo 1 > /sys/bus/pci/drivers/neuron/0000:10:1e.0/resource4_wc' 2>&1)" &&
    { echo "a write to the memory BAR succeeded"; return 1; }
  echo "resource4_wc: $output"
  grep -q "Read-only file system" <<< "$output" || return 1
  # ...and so is /dev...
  output="$(k exec -n kube-system "$pod" -- sh -c 'touch /dev/neuron-test' 2>&1)" &&
    { echo "a file was created in /dev"; return 1; }
  echo "/dev: $output"
  # ...and every attribute of the driver's devices (a real node says Permission denied, the
  # local cluster's read-only overlay Read-only file system); the one writable file is
  # neuronN/reset.
  output="$(k exec -n kube-system "$pod" -- sh -c 'echo 4 > /sys/class/neuron_device/neuron0/core_count' 2>&1)" &&
    { echo "a write to neuron0/core_count succeeded"; return 1; }
  echo "core_count: $output"
  grep -qE "Permission denied|Read-only file system" <<< "$output" || return 1
  k exec -n kube-system "$pod" -- sh -c 'echo 1 > /sys/class/neuron_device/neuron0/reset'
}
check "kubectl exec: the agent may write neuronN/reset, not an attribute, the memory BAR or /dev" \
  forbidden_writes_fail
# The whole log, then the search: grep -q would close the pipe early and, with pipefail, fail
# the kubectl still writing.
logs_of_every_agent() {
  local name log
  for name in "${names[@]}"; do
    log="$(k logs -n kube-system "$(agent_pod_on "$name")")" || return 1
    grep -q '"setting" name=node-name value='"$name" <<< "$log" ||
      { echo "no log of $name's agent ($(wc -l <<< "$log") lines)"; return 1; }
  done
}
check "kubectl logs reads every node's agent" eventually 30 logs_of_every_agent
top_reads_every_node() {
  neuron_cli top --json | python3 -c '
import json, sys
nodes = {n["node"]: n for n in json.load(sys.stdin)["nodes"]}
print({name: len(node["devices"]) for name, node in nodes.items()})
assert all(len(nodes[name]["devices"]) == 16 for name in sys.argv[1:]), nodes.keys()' "${names[@]}"
}
check "kubectl neuron top reads every node's agent at its address" eventually 30 top_reads_every_node

echo "== pods land where they are sent and get their node's devices"
# pinned_pod NAME NODE [SECONDS]: four devices (a trn2 shape) through neuron-scheduler, on NODE.
pinned_pod() {
  local name="$1" node="$2"
  pod_manifest "$name" neuron 4 neuron-scheduler "${3:-0}" |
    sed "s|^spec:|spec:\n  nodeSelector: {kubernetes.io/hostname: $node}|"
}
for index in "${!names[@]}"; do
  pinned_pod "on-$index" "${names[$index]}" | k apply -f - > /dev/null
done
ran_where_sent() {
  local index
  for index in "${!names[@]}"; do
    pod_succeeded "on-$index" || return 1
    [[ "$(k get pod -n e2e "on-$index" -o jsonpath='{.spec.nodeName}')" == "${names[$index]}" ]] || return 1
    pod_report "on-$index" | grep -qE 'DEVICES=(neuron[0-9]+ ){4}$' ||
      { echo "on-$index: $(pod_report "on-$index")"; return 1; }
  done
}
check "a pod on each node runs there with 4 devices" eventually 120 ran_where_sent
k delete pods -n e2e --all --wait=true > /dev/null

echo "== gangs through neuron-scheduler: all pods or none, on one UltraServer when they fit"
# gang_pod NAME GANG SIZE: all 16 devices of a node through neuron-scheduler, in gang GANG of SIZE
# pods (docs/gangs.md), running until deleted.
gang_pod() {
  pod_manifest "$1" neuron 16 neuron-scheduler 600 |
    sed "s|^  labels: {e2e: neuron}|  labels: {e2e: neuron, torus.dev/gang: $2, torus.dev/gang-size: \"$3\"}|"
}
node_of() { k get pod -n e2e "$1" -o jsonpath='{.spec.nodeName}'; }
for i in 0 1 2 3; do gang_pod "four-$i" four 4 | k apply -f - > /dev/null; done
ultraserver_nodes="$(printf '%s\n' "${names[@]:0:4}" | sort | xargs)"
# all_running_on PREFIX COUNT NODES: pods PREFIX-0 .. PREFIX-(COUNT-1) run, on exactly NODES
# (sorted, space-separated).
all_running_on() {
  local prefix="$1" count="$2" want="$3" i landed=()
  for ((i = 0; i < count; i++)); do
    pod_running "$prefix-$i" || { echo "$prefix-$i: $(pod_phase "$prefix-$i")"; return 1; }
    landed+=("$(node_of "$prefix-$i")")
  done
  echo "on: ${landed[*]}"
  [[ "$(printf '%s\n' "${landed[@]}" | sort | xargs)" == "$want" ]]
}
check "a gang of 4 whole-node pods runs on the UltraServer's 4 nodes (not on the trn2)" \
  eventually 120 all_running_on four 4 "$ultraserver_nodes"
k delete pods -n e2e --all --wait=true > /dev/null
# Three nodes busy (two of the UltraServer's and the trn2): two whole nodes are free.
for index in 0 1 "$TRN2"; do
  pinned_pod "busy-$index" "${names[$index]}" 600 | sed 's/neuron: 4$/neuron: 16/' | k apply -f - > /dev/null
done
busy_running() { pod_running busy-0 && pod_running busy-1 && pod_running "busy-$TRN2"; }
check "three nodes are busy with whole-node pods" eventually 90 busy_running
for i in 0 1 2; do gang_pod "three-$i" three 3 | k apply -f - > /dev/null; done
gang_of_three_waits() {
  local i events=""
  for i in 0 1 2; do
    [[ -z "$(node_of "three-$i")" ]] || { echo "three-$i was placed on $(node_of "three-$i")"; return 1; }
    events+="$(k get events -n e2e --field-selector "involvedObject.name=three-$i" -o jsonpath='{.items[*].message}')"
  done
  grep -o "gang e2e/three (3 pods) does not fit whole[^;]*; none is placed and nothing is held" <<< "$events" | head -1 | grep . ||
    { echo "no event says why yet: ${events:0:300}"; return 1; }
}
check "a gang of 3 with 2 free nodes starts no pod, and its events say why" eventually 60 gang_of_three_waits
pinned_pod outsider "${names[2]}" | sed 's/neuron: 4$/neuron: 16/' | k apply -f - > /dev/null
check "...holding no device: a pod outside the gang gets a free node's 16 devices meanwhile" \
  eventually 90 pod_succeeded outsider
check "...and still no gang pod has started" gang_of_three_waits
k delete pod -n e2e busy-1 --wait=true > /dev/null
check "...and starts whole, on the UltraServer's 3 free nodes, once a node frees" \
  eventually 120 all_running_on three 3 "$(printf '%s\n' "${names[@]:1:3}" | sort | xargs)"
k delete pods -n e2e --all --wait=true > /dev/null

echo "== upstream's PodGroup (scheduling.k8s.io/v1beta1, GenericWorkload on): its gang placed whole"
k apply -f - > /dev/null <<'YAML'
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: group-of-four, namespace: e2e}
spec:
  schedulingPolicy:
    gang: {minCount: 4}
YAML
for i in 0 1 2 3; do
  pod_manifest "grouped-$i" neuron 16 neuron-scheduler 600 |
    sed "s|^spec:|spec:\n  schedulingGroup: {podGroupName: group-of-four}|" | k apply -f - > /dev/null
done
check "a PodGroup of 4 whole-node pods runs on the UltraServer's 4 nodes" \
  eventually 120 all_running_on grouped 4 "$ultraserver_nodes"
k delete pods -n e2e --all --wait=true > /dev/null
k delete podgroup -n e2e group-of-four --timeout=60s > /dev/null

echo "== an AllReduce between pods on the UltraServer's four nodes (libfabric tcp)"
# The pods are deploy/examples/allreduce-hostnetwork.yaml's, filled in as its header says: the
# example for clusters without DNS runs here as users would run it.
k create secret generic neuron-allreduce-hostnetwork -n e2e \
  --from-literal=job-secret="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" > /dev/null
RANKS=${#ULTRASERVER[@]}
agent_image="$(k get ds -n kube-system -l app.kubernetes.io/component=node-agent -o 'jsonpath={.items[0].spec.template.spec.containers[0].image}')"
# rank_pod RANK NODE [MAX_BYTES ITERS]: the example's pod for one rank of RANKS, on NODE.
rank_pod() {
  RANK="$1" NODE="$2" WORLD_SIZE="$RANKS" ROOT_ADDRESS="${ips[0]}:29500" IMAGE="$agent_image" \
    IFACE=eth0 MAX_BYTES="${3:-}" ITERS="${4:-}" \
    envsubst '$RANK $NODE $WORLD_SIZE $ROOT_ADDRESS $IMAGE $IFACE $MAX_BYTES $ITERS' \
    < "$REPO/deploy/examples/allreduce-hostnetwork.yaml"
}
rank() { echo "neuron-allreduce-rank-$1"; }
for index in "${ULTRASERVER[@]}"; do
  rank_pod "$index" "${names[$index]}" | k apply -n e2e -f - > /dev/null
done
allreduce_passed() {
  local index
  for index in "${ULTRASERVER[@]}"; do pod_succeeded "$(rank "$index")" || return 1; done
  k logs -n e2e "$(rank 0)" | tee "$STATE_DIR/allreduce.log" | tail -4
  # Every size's row ends in its data check's verdict: ok, fail or off.
  local rows
  rows="$(grep -E '^ +[0-9]+ ' "$STATE_DIR/allreduce.log")"
  [[ -n "$rows" ]] && ! grep -qvE ' ok$' <<< "$rows"
}
check "4 ranks on the UltraServer's 4 nodes: AllReduce passes its data check" eventually 180 allreduce_passed
busbw_printed() { k logs -n e2e "$(rank 0)" | grep -E '^ +4194304 '; }
check "...and prints its bus bandwidth for 4 MiB" busbw_printed
echo "      $(head -3 "$STATE_DIR/allreduce.log" | tail -1)"
echo "      $(busbw_printed || true)"
k delete pods -n e2e --all --wait=true > /dev/null

echo "== a rank dies: the others stop at once and name it"
for index in "${ULTRASERVER[@]}"; do
  rank_pod "$index" "${names[$index]}" 256M 50 | k apply -n e2e -f - > /dev/null
done
# The first row needs every rank: the job is running across the four nodes.
running_together() {
  local log
  log="$(k logs -n e2e "$(rank 0)" 2> /dev/null)" && grep -qE '^ +8 ' <<< "$log"
}
check "a long AllReduce runs across the four nodes" eventually 120 running_together
killed_at="$(date +%s.%N)"
cluster shell "${names[3]}" pkill -KILL -f neuron-cc-bench > /dev/null
# finishedAt has whole seconds: it is at most the true end, so "< 2" is the bound it can show.
others_stopped_naming_rank_3() {
  local rank finished
  for rank in 0 1 2; do
    [[ "$(pod_phase "$(rank "$rank")")" == Failed ]] || { echo "rank $rank: $(pod_phase "$(rank "$rank")")"; return 1; }
    grep -q "rank 3" <<< "$(k logs -n e2e "$(rank "$rank")")" ||
      { echo "rank $rank's log does not name rank 3:"; k logs -n e2e "$(rank "$rank")" | tail -3; return 1; }
    finished="$(k get pod -n e2e "$(rank "$rank")" -o jsonpath='{.status.containerStatuses[0].state.terminated.finishedAt}')"
    python3 -c "import sys, datetime as d; f = d.datetime.fromisoformat(sys.argv[1].replace('Z', '+00:00')).timestamp(); s = f - float(sys.argv[2]); print(f'rank {sys.argv[3]} finished {s:.0f} s (whole seconds) after rank 3 was killed'); sys.exit(s >= 2)" \
      "$finished" "$killed_at" "$rank" || return 1
  done
}
check "the other ranks fail within 2 s of rank 3's death, naming it" eventually 60 others_stopped_naming_rank_3
others_stopped_naming_rank_3 2>&1 | grep finished | sed 's/^/      /' || true
k logs -n e2e "$(rank 0)" | grep "rank 3" | tail -1 | sed 's/^/      /'
k delete pods -n e2e --all --wait=true > /dev/null

echo "== a chip whose reset fails is not handed out: its pod waits until a reset succeeds"
# The trn2's driver (neuron-sim-driver) ends every reset of chip 5 INVALID from now on; a pod of
# all 16 chips there must not start on it, and must start once the chip resets again.
trn2_driver="$STATE_DIR/nodes/${names[$TRN2]}/driver"
"$REPO/build/bin/neuron-ls" --simulate=trn2.48xlarge --simulate-dir="$trn2_driver" \
  --simulate-fault=reset-fail:5 > /dev/null
pinned_pod reset-held "${names[$TRN2]}" | sed 's/neuron: 4$/neuron: 16/' | k apply -f - > /dev/null
held_back_naming_the_chip() {
  local events
  [[ "$(pod_phase reset-held)" == Pending ]] || { echo "phase $(pod_phase reset-held)"; return 1; }
  events="$(k get events -n e2e --field-selector involvedObject.name=reset-held -o jsonpath='{.items[*].message}')"
  grep -q "neuron5: the driver reports state INVALID" <<< "$events" ||
    { echo "no event names chip 5's failed reset yet: $events" | cut -c1-300; return 1; }
}
check "the pod does not start on a chip whose reset failed; its events name the chip" \
  eventually 90 held_back_naming_the_chip
rm "$trn2_driver/simulated-driver/neuron5/reset"
check "...and runs once chip 5 resets again (kubelet retries)" eventually 120 pod_succeeded reset-held
saw_all_16_chips() { pod_report reset-held | grep -qE 'DEVICES=(neuron[0-9]+ ){16}$'; }
check "...with all 16 chips" saw_all_16_chips
k delete pods -n e2e --all --wait=true > /dev/null

echo "== one node lost and back"
for index in 0 1; do
  pinned_pod "stay-$index" "${names[$index]}" 600 | k apply -f - > /dev/null
done
both_running() { pod_running stay-0 && pod_running stay-1; }
check "a pod runs on each of the first two nodes" eventually 90 both_running
lost="${names[2]}"
cluster stop "kubelet-$lost" > /dev/null
cluster stop "containerd-$lost" > /dev/null
node_not_ready() {
  [[ "$(k get node "$lost" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" != True ]]
}
check "$lost goes NotReady once its kubelet and containerd stop" eventually 60 node_not_ready
pinned_pod lost-pod "$lost" | k apply -f - > /dev/null
# The scheduler has looked at the pod and found no node for it (the lost node's not-ready taint):
# from then on the pod waits, unbound, until the node is back.
not_placed() {
  [[ "$(k get pod -n e2e lost-pod -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}')" == Unschedulable ]] ||
    { echo "lost-pod not marked Unschedulable yet"; return 1; }
  [[ -z "$(k get pod -n e2e lost-pod -o jsonpath='{.spec.nodeName}')" ]] ||
    { echo "lost-pod bound to $(k get pod -n e2e lost-pod -o jsonpath='{.spec.nodeName}')"; return 1; }
}
check "nothing is placed on the lost node: the scheduler keeps the pod waiting" eventually 30 not_placed
check "the other nodes' pods keep running" both_running
kubelet_log="$STATE_DIR/logs/kubelet-$lost.log"
lines_before="$(wc -l < "$kubelet_log")"
cluster start "containerd-$lost" > /dev/null
cluster start "kubelet-$lost" > /dev/null
node_ready_again() {
  [[ "$(k get node "$lost" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]
}
check "$lost is Ready again once they start" eventually 90 node_ready_again
registered_within_10s() {
  local log socket_at last_at resource
  log="$(tail -n +"$((lines_before + 1))" "$kubelet_log")"
  for resource in neuroncore neuron; do
    grep -q "Got registration request from device plugin with resource.*aws.amazon.com/$resource\"" <<< "$log" ||
      { echo "$resource not registered yet"; return 1; }
  done
  socket_at="$(klog_seconds "$(grep -m1 'Creating device plugin registration server' <<< "$log")")"
  last_at="$(klog_seconds "$(grep 'Got registration request from device plugin' <<< "$log" | tail -1)")"
  python3 -c "import sys; d = $last_at - $socket_at; print(f'registered {d:.2f} s after the kubelet made its socket'); sys.exit(d > 10)"
}
check "its agent registers both resources within 10 s of the kubelet's socket" eventually 60 registered_within_10s
echo "      $(registered_within_10s | tail -1)"
check "the pod sent there runs now" eventually 120 pod_succeeded lost-pod
check "the other nodes' pods ran on throughout" both_running

echo
echo "$PASSED passed, $FAILED failed ($((SECONDS - started)) s)"
((FAILED == 0))
