#!/usr/bin/env bash
# End-to-end on a real Kubernetes: scripts/local-cluster.sh brings up upstream's API server,
# controller manager, scheduler and kubelet (built from their Go modules) with containerd and a
# simulated trn2.48xlarge node, installs Torus with `helm install`, and this script checks what
# Kubernetes and the workloads see: registration with the real kubelet, pods of every size through
# the default scheduler and through the chart's second scheduler and extender, the hand-off, helm
# test and upgrade, and that no Torus identity was ever refused by the API server.
#
# Usage: tests/e2e/cluster/real_cluster_test.sh [--keep]   (--keep leaves the cluster running)
# Needs root (kubelet, containerd). Prints 'N passed, N failed'; exits non-zero on any failure,
# printing the component logs that explain it. Bounded: every wait has a deadline.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
source "$REPO/tests/e2e/cluster/lib.sh"

cluster_test_setup torus-e2e "${1:-}"

started=$SECONDS
# Three real nodes, as a cluster has: the trn2 the checks below count on (torus-node-1, NODE_NAME),
# a trn2u of a simulated UltraServer and an inf2.xlarge, each with its own agent. The pods here are
# pinned to the first node (PIN_NODE), since what they check is per node (ids, counts, kubelet's
# view); the others run beside it all along (multinode_test.sh checks what happens between nodes).
echo "== local cluster: trn2, trn2u and inf2 nodes (state: $STATE_DIR)"
cluster up --nodes=trn2.48xlarge:1,trn2u.48xlarge:1@us0,inf2.xlarge:1
source "$STATE_DIR/cluster.env"
export KUBECONFIG KUBECTL SIMULATED_NODE_DIR AGENT_METRICS_PORT EXTENDER_PORT EXTENDER_HOST NODE_IP
PIN_NODE="$NODE_NAME"
echo "cluster with Torus up in $((SECONDS - started)) s"
# The node agent's pod on NODE_NAME.
agent_pods() {
  k get pods -n kube-system -l app.kubernetes.io/component=node-agent \
    --field-selector "spec.nodeName=$NODE_NAME" "$@"
}

node_is_ready() {
  [[ "$(k get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]
}

# trn2.48xlarge: 16 devices of 8 physical cores; LNC 2 makes 4 logical cores per device.
CORES_PER_DEVICE=4
EXPECTED_LNC=2
export CORES_PER_DEVICE EXPECTED_LNC

allocatable_is() {
  local have
  have="$(k get node "$NODE_NAME" -o "jsonpath={.status.allocatable.aws\.amazon\.com/$1}")"
  [[ "$have" == "$2" ]] || { echo "allocatable aws.amazon.com/$1: ${have:-none}"; return 1; }
}
# The agent serves kubelet: its pod is Ready, the restarting taint is gone and kubelet counts every
# id of both resources.
agent_serving() {
  [[ "$(agent_pods -o jsonpath='{.items[*].status.containerStatuses[0].ready}')" == true ]] || return 1
  ! k get node "$NODE_NAME" -o jsonpath='{.spec.taints[*].key}' | grep -q device-plugin-restarting ||
    { echo "the node still carries the restarting taint"; return 1; }
  allocatable_is neuroncore 64 && allocatable_is neuron 16
}
lnc_label_is() {
  [[ "$(k get node "$NODE_NAME" -o 'jsonpath={.metadata.labels.torus\.dev/lnc}')" == "$1" ]]
}
check "kubelet advertises aws.amazon.com/neuroncore: 64" eventually 30 allocatable_is neuroncore 64
check "kubelet advertises aws.amazon.com/neuron: 16" eventually 30 allocatable_is neuron 16
check "the agent labels its node torus.dev/lnc=2" eventually 30 lnc_label_is 2

k create namespace e2e > /dev/null

# run_pods SCHEDULER SUFFIX: pods of every size, one after the other (they exit after printing).
run_pods() {
  local scheduler="$1" suffix="$2" resource count name
  for spec in neuroncore:1 neuroncore:4 neuroncore:16 neuron:1 neuron:4 neuron:16; do
    resource="${spec%%:*}" count="${spec##*:}"
    name="$resource-$count-$suffix"
    pod_manifest "$name" "$resource" "$count" "$scheduler" | k apply -f - > /dev/null
    check "$name runs ($scheduler)" eventually 90 pod_succeeded "$name"
    check "$name saw $count $resource as one NeuronLink-connected set" check_pod_saw "$name" "$resource" "$count"
    if [[ "$scheduler" != default-scheduler ]]; then
      check "$name got the ids the extender wrote on it" check_handoff_honoured "$name"
    fi
    # No wait for the agent to see the pod gone: the next pod, of either resource, must run.
    k delete pod -n e2e "$name" --wait=false > /dev/null
  done
}

echo "== pods through the default scheduler (device plugin alone)"
run_pods default-scheduler plain
echo "== pods through the chart's second scheduler and the extender (nodeCacheCapable: true)"
run_pods neuron-scheduler extender

echo "== the same with whole Node objects in every extender call (nodeCacheCapable: false)"
HELM="$REPO/build/tools/helm"
scheduler_config_has() {
  k get configmap -n kube-system neuron-scheduler-config -o jsonpath='{.data.config\.yaml}' | grep -q "$1"
}
check "helm upgrade to nodeCacheCapable: false" "$HELM" --kubeconfig "$KUBECONFIG" upgrade torus \
  "$REPO/helm/torus" -n kube-system --reuse-values --set scheduler.nodeCacheCapable=false --wait --timeout 3m
check "the scheduler's config says so" scheduler_config_has "nodeCacheCapable: false"
run_pods neuron-scheduler full-nodes

echo "== admission under churn: 200 short pods in bursts (issue 31)"
# stress_run SCHEDULER RUN MIX: the pods of admission_stress.py, then gone. Sets kubelet itself
# chose badly under this churn (shared, disconnected) are printed as findings, not failed: see the
# script's --help and issue 31's note.
stress_run() {
  python3 "$REPO/tests/e2e/cluster/admission_stress.py" --kubectl "$KUBECTL" \
    --kubeconfig "$KUBECONFIG" --scheduler "$1" --run "$2" --mix "$3" --pods 200 \
    --node-dir "$SIMULATED_NODE_DIR" --node "$NODE_NAME" \
    --cores-per-device "$CORES_PER_DEVICE" --timeout 600 --placement-as-findings \
    > "$STATE_DIR/$2.log" 2>&1
  local status=$?
  cat "$STATE_DIR/$2.log"
  k delete pods -n e2e -l "stress=$2" --wait=false > /dev/null
  return $status
}
# The run's figures, passed or not.
stress_summary() {
  grep -E 'pods in|placement findings|FINDING|given back' "$STATE_DIR/$1.log" | sed 's/^ */      /'
}
check "no pod placed by neuron-scheduler fails admission (1, 4 cores; 1, 4, 16 devices)" \
  stress_run neuron-scheduler stress-extender \
  neuroncore:1,neuroncore:4,neuron:1,neuron:4,neuron:16
stress_summary stress-extender
check "the node agent still serves kubelet after the churn" eventually 90 agent_serving
# Its container ran the whole churn: a restart here was once its memory limit (OOMKilled).
agent_never_restarted() {
  local restarts reason
  restarts="$(agent_pods -o jsonpath='{.items[0].status.containerStatuses[0].restartCount}')"
  reason="$(agent_pods -o jsonpath='{.items[0].status.containerStatuses[0].lastState.terminated.reason}')"
  [[ "$restarts" == 0 ]] || { echo "restarted $restarts times (last: ${reason:-unknown})"; return 1; }
}
check "the node agent's container was never restarted during the churn" agent_never_restarted
# Not run here yet: the same with the agent restarted twice mid-run (--restart-agent-after
# 70,140). Through neuron-scheduler the last runs lost 1 and 6 of 200 pods, 16-device pods bound
# around the second restart; through the default scheduler (neuroncore:4) 25 of 200. The
# restarting taint and the drain do not yet close that path (issue 31's note). By hand:
#   admission_stress.py --scheduler neuron-scheduler --restart-agent-after 70,140 ...

echo "== a pod that fits no node"
pod_manifest too-big neuroncore 65 neuron-scheduler | k apply -f - > /dev/null
pending_with_reason() {
  [[ "$(pod_phase too-big)" == Pending ]] || return 1
  k get pod -n e2e too-big -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}' |
    grep -q 'aws.amazon.com/neuroncore'
}
check "a 65-core pod stays Pending and says why" eventually 30 pending_with_reason
k delete pod -n e2e too-big --wait=false > /dev/null

echo "== a full node: a Pending pod runs after deletions; preemption frees a valid shape"
all_running() {
  local n
  for n in "$@"; do pod_running "$n" || { echo "$n: $(pod_phase "$n")"; return 1; }; done
}
# fill_node PREFIX: 16 pods of 4 cores, one per device, at the default priority.
fill_node() {
  local n
  for n in $(seq 1 16); do
    pod_manifest "$1-$n" neuroncore 4 neuron-scheduler 600 | k apply -f - > /dev/null
  done
  check "16 pods of 4 cores fill the node ($1)" eventually 120 all_running $(printf "$1-%s " $(seq 1 16))
}
fill_node low

echo "== per-pod metrics: each core's series names the pod kubelet says holds it"
# metrics_name_holders [GONE...]: every holder in /allocations (kubelet's pod-resources) has its
# cores in torus_allocation_info and its name on those cores' series; the GONE pods appear nowhere.
metrics_name_holders() {
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" > "$STATE_DIR/metrics.txt" || return 1
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/allocations" > "$STATE_DIR/allocations.json" || return 1
  python3 - "$STATE_DIR/metrics.txt" "$STATE_DIR/allocations.json" "$@" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
holders = json.load(open(sys.argv[2]))["holders"]
def labels(line):
    return dict(re.findall(r'(\w+)="([^"]*)"', line))
info, tensors = {}, {}
for line in text.splitlines():
    if line.startswith("torus_allocation_info{"):
        l = labels(line)
        info.setdefault(l["pod"], set()).add(int(l["neuroncore"]))
    elif line.startswith("neuroncore_memory_usage_tensors{"):
        l = labels(line)
        tensors[int(l["neuroncore"])] = l["pod"]
pods = {}
for h in holders:  # kubelet lists a container's ids in one entry per NUMA node
    pods.setdefault(h["pod"].split("/", 1)[1], set()).update(h["cores"])
assert len(pods) >= 2, f"want several pods, kubelet lists {sorted(pods)}"
for pod, cores in pods.items():
    assert info.get(pod) == cores, f"{pod}: kubelet lists cores {sorted(cores)}, metrics {sorted(info.get(pod, []))}"
    wrong = [c for c in cores if tensors.get(c) != pod]
    assert not wrong, f"{pod}: cores {wrong} are labelled {[tensors.get(c) for c in wrong]}"
for gone in sys.argv[3:]:
    assert f'pod="{gone}"' not in text, f"{gone} is deleted but still named in /metrics"
print(f"{len(pods)} pods named on their cores")
PY
}
check "/metrics names all 16 pods on exactly the cores kubelet lists for them" eventually 10 metrics_name_holders
promtool_passes() {
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" | promtool check metrics
}
check "...and passes promtool check metrics" promtool_passes
deleted_pods=("$(pod_on_device 0)" "$(pod_on_device 1)")

pod_manifest waiter neuroncore 8 neuron-scheduler 600 | k apply -f - > /dev/null
waits() {
  [[ "$(pod_phase waiter)" == Pending ]] &&
    k get pod -n e2e waiter -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}' |
    grep -q Unschedulable
}
check "an 8-core pod waits on the full node" eventually 30 waits
k delete pod -n e2e "${deleted_pods[@]}" --wait=false > /dev/null
check "...and runs once the pods on devices 0 and 1 are deleted" eventually 90 pod_running waiter
check "the deleted pods' names are gone from /metrics" eventually 10 metrics_name_holders "${deleted_pods[@]}"
# Pods newer than the rest on scattered devices: kube-scheduler's count-based victims are the
# newest pods, and evicting them alone opens no 16-core set (review row 3).
for device in 5 10 15; do
  old="$(pod_on_device "$device")"
  k delete pod -n e2e "$old" --wait=false > /dev/null
  pod_manifest "newer-$device" neuroncore 4 neuron-scheduler 600 | k apply -f - > /dev/null
  check "newer-$device replaces $old on device $device" eventually 90 pod_running "newer-$device"
done
k get pods -n e2e -o json > "$STATE_DIR/pods-before-preemption.json"
k create priorityclass e2e-high --value=1000 --description="e2e preemptor" > /dev/null
pod_manifest high neuroncore 16 neuron-scheduler 0 e2e-high | k apply -f - > /dev/null
check "a priority-1000 16-core pod preempts its way onto the full node" eventually 120 pod_succeeded high
check "...on one NeuronLink-connected set" check_pod_saw high neuroncore 16
# victims_freed_exactly CORES: the pods gone since pods-before-preemption.json held exactly CORES (the
# node was full, so a minimal choice evicts the pods on the new pod's cores and no other).
victims_freed_exactly() {
  python3 - "$1" "$KUBECTL" "$KUBECONFIG" "$STATE_DIR/pods-before-preemption.json" \
    "$CORES_PER_DEVICE" <<'PY'
import json, subprocess, sys
def ids(text):
    out = set()
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        out |= set(range(int(low), int(high or low) + 1))
    return out
def cores_of(pod):
    annotations = pod["metadata"].get("annotations", {})
    held = ids(annotations.get("AWS_NEURON_IDS", ""))
    if annotations.get("NEURON_RESOURCE_TYPE") == "aws.amazon.com/neuron":
        per = int(sys.argv[5])
        held = {d * per + c for d in held for c in range(per)}
    return held
new = ids(sys.argv[1])
before = {p["metadata"]["name"]: cores_of(p)
          for p in json.load(open(sys.argv[4]))["items"] if p["status"].get("phase") == "Running"}
now = json.loads(subprocess.check_output([sys.argv[2], "--kubeconfig", sys.argv[3], "get", "pods",
                                          "-n", "e2e", "-o", "json"]))
alive = {p["metadata"]["name"] for p in now["items"] if "deletionTimestamp" not in p["metadata"]}
victims = {name: held for name, held in before.items() if name not in alive}
print("new pod got", sorted(new), "victims:", {n: sorted(h) for n, h in victims.items()})
assert victims, "no pod was preempted"
assert set().union(*victims.values()) == new, "the victims' cores differ from the new pod's"
PY
}
only_overlapping_victims() {
  victims_freed_exactly "$(pod_report high | sed -n 's/^CORES=//p')"
}
check "...evicting only the pods on that set" only_overlapping_victims
k delete pods -n e2e -l e2e=neuron --wait=false > /dev/null

# Core pods leave no device free, and kube-scheduler counts the two resources apart: it never
# preempts for a device pod here (review row 4). The extender does, through the Eviction API.
fill_node core
k get pods -n e2e -o json > "$STATE_DIR/pods-before-preemption.json"
pod_manifest high-devices neuron 4 neuron-scheduler 0 e2e-high | k apply -f - > /dev/null
check "a priority-1000 pod of 4 devices preempts 4-core pods" eventually 150 pod_succeeded high-devices
check "...and gets one NeuronLink-connected set" check_pod_saw high-devices neuron 4
only_overlapping_victims_of_devices() {
  local cores
  cores="$(pod_report high-devices | sed -n 's/^CORES=//p')"
  victims_freed_exactly "$cores"
}
check "...evicting only the pods on those devices" only_overlapping_victims_of_devices
preempting_event() {
  k get events -n e2e --field-selector involvedObject.name=high-devices -o jsonpath='{.items[*].reason}' |
    grep -q NeuronPreempting
}
check "...with a NeuronPreempting event on the pod" preempting_event
preemptions_counted() {
  curl -sf "http://$EXTENDER_HOST:$EXTENDER_PORT/metrics" |
    grep -q '^torus_extender_cross_resource_evictions_total{result="evicted"} 4$'
}
check "...counted in the extender's /metrics" preemptions_counted
k delete pods -n e2e -l e2e=neuron --wait=false > /dev/null
k delete priorityclass e2e-high > /dev/null

echo "== faults: kubelet restart, agent and extender restarts with pods running"
for n in 1 2; do
  pod_manifest "hold-$n" neuroncore 4 neuron-scheduler 600 | k apply -f - > /dev/null
  check "hold-$n runs" eventually 90 pod_running "hold-$n"
done
held_before="$( (cores_held_by hold-1; cores_held_by hold-2) | sort -n | tr '\n' ' ')"
check "the agent reports what hold-1 and hold-2 hold" test "$(wc -w <<< "$held_before")" = 8

kubelet_log="$STATE_DIR/logs/kubelet-$NODE_NAME.log"
lines_before="$(wc -l < "$kubelet_log")"
cluster restart "kubelet-$NODE_NAME" > /dev/null
registered_again() {
  local log registered
  log="$(tail -n +"$((lines_before + 1))" "$kubelet_log")"
  for resource in neuroncore neuron; do
    grep -q "Got registration request from device plugin with resource.*aws.amazon.com/$resource\"" <<< "$log" || return 1
  done
}
check "both resources register again after a kubelet restart" eventually 60 registered_again
registration_delay() {
  local log socket_at last_at
  log="$(tail -n +"$((lines_before + 1))" "$kubelet_log")"
  socket_at="$(klog_seconds "$(grep -m1 'Creating device plugin registration server' <<< "$log")")"
  last_at="$(klog_seconds "$(grep 'Got registration request from device plugin' <<< "$log" | tail -1)")"
  python3 -c "import sys; d = $last_at - $socket_at; print(f'registered {d:.2f} s after the kubelet made its socket'); sys.exit(d > 2)"
}
check "...within 2 s of the kubelet's plugin socket appearing" registration_delay
check "the node is Ready again" eventually 60 node_is_ready

k delete pod -n kube-system "$(agent_pods -o jsonpath='{.items[0].metadata.name}')" --wait=false > /dev/null
agent_ready() {
  [[ "$(agent_pods -o jsonpath='{.items[*].status.containerStatuses[0].ready}')" == true ]]
}
check "a deleted agent pod is replaced and Ready" eventually 90 agent_ready
held_again() {
  [[ "$( (cores_held_by hold-1; cores_held_by hold-2) | sort -n | tr '\n' ' ')" == "$held_before" ]]
}
check "the new agent recovers what the running pods hold" eventually 30 held_again
# kubelet counts a re-registered plugin's devices only after its first ListAndWatch, and a pod it
# admits before that fails for good. The stopping agent tainted the node, so the default scheduler
# too holds the pod until the new agent serves: no wait here.
pod_manifest after-restart neuroncore 4 | k apply -f - > /dev/null
check "a pod after the agent restart runs" eventually 90 pod_succeeded after-restart
disjoint_from_running() {
  local got
  got="$(pod_report after-restart | sed -n 's/^CORES=//p')"
  for core in $(expand_ids "$got"); do
    if grep -qw "$core" <<< "$held_before"; then
      echo "core $core given to after-restart is held by a running pod ($held_before)"
      return 1
    fi
  done
}
check "...on cores no running pod holds" disjoint_from_running

k delete pod -n kube-system -l app.kubernetes.io/component=scheduler-extender --wait=false > /dev/null
state_matches_pods() {
  python3 - "$EXTENDER_HOST:$EXTENDER_PORT" "$KUBECTL" "$KUBECONFIG" <<'PY'
import json, subprocess, sys, urllib.request
extender, kubectl, kubeconfig = sys.argv[1:4]
state = json.load(urllib.request.urlopen(f"http://{extender}/state", timeout=5))
held = {a["pod"]: a["ids"] for a in state["allocations"]}
pods = json.loads(subprocess.check_output([kubectl, "--kubeconfig", kubeconfig, "get", "pods", "-A", "-o", "json"]))
def ranges(text):
    ids = sorted({int(x) for x in text.split(",") if x})
    out, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out)
want = {}
for pod in pods["items"]:
    ids = pod["metadata"].get("annotations", {}).get("AWS_NEURON_IDS")
    if ids and pod["status"].get("phase") in ("Pending", "Running"):
        want[pod["metadata"]["namespace"] + "/" + pod["metadata"]["name"]] = ranges(ids)
print("extender:", held, "pods:", want)
sys.exit(0 if held == want else 1)
PY
}
check "a restarted extender rebuilds /state equal to the pods' AWS_NEURON_IDS" eventually 90 state_matches_pods

resets_counted() {
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" |
    grep -q '^torus_device_release_resets_total{result="ok"} [1-9]'
}
k delete pod -n e2e hold-1 hold-2 --wait=false > /dev/null
check "deleting pods resets their devices (counted in /metrics)" eventually 60 resets_counted

echo "== kubectl neuron against the real API"
pod_manifest shown neuroncore 8 neuron-scheduler 600 | k apply -f - > /dev/null
check "a pod for kubectl neuron runs" eventually 90 pod_running shown
neuron_cli() { KUBECONFIG="$KUBECONFIG" "$REPO/build/bin/kubectl-neuron" "$@"; }
shows_pod() {
  local ids
  ids="$(annotation_of shown AWS_NEURON_IDS)"
  neuron_cli nodes | grep -E "$NODE_NAME .*trn2.48xlarge.* 8/64 " &&
    neuron_cli node "$NODE_NAME" | grep "e2e/shown" &&
    neuron_cli pods --json | python3 -c '
import json, sys
pods = {p["namespace"] + "/" + p["name"]: p for p in json.load(sys.stdin)}
shown = pods["e2e/shown"]
want = sorted(int(i) for i in sys.argv[1].split(","))
print(shown)
sys.exit(0 if shown["ids"] == want and shown["phase"] == "Running" and shown["allocated"] == "true" else 1)' "$ids"
}
check "kubectl neuron nodes, node and pods show what the pod holds" eventually 30 shows_pod

# kubectl neuron top in a real terminal (tmux): both pods with their cores, refreshed in place,
# read from the agent at its node's address as on any cluster (no --agent-host).
pod_manifest shown-too neuron 1 neuron-scheduler 600 | k apply -f - > /dev/null
check "a second pod for kubectl neuron top runs" eventually 90 pod_running shown-too
TMUX_SERVER="torus-e2e-top-$$"
top_shows_both_pods_and_refreshes() {
  local screen first second clock1 clock2 cores
  tmux -L "$TMUX_SERVER" new-session -d -s top -x 200 -y 50 \
    "KUBECONFIG='$KUBECONFIG' '$REPO/build/bin/kubectl-neuron' top --interval=1s" ||
    return 1
  local deadline=$((SECONDS + 30))
  while ((SECONDS < deadline)); do
    screen="$(tmux -L "$TMUX_SERVER" capture-pane -p -t top)"
    if grep -q "shown-too" <<< "$screen" && grep -q " shown " <<< "$screen"; then break; fi
    sleep 0.5
  done
  first="$screen"
  sleep 2.5
  second="$(tmux -L "$TMUX_SERVER" capture-pane -p -t top)"
  tmux -L "$TMUX_SERVER" send-keys -t top C-c
  sleep 0.5
  tmux -L "$TMUX_SERVER" kill-server 2> /dev/null || true
  printf '%s\n' "$second" > "$STATE_DIR/kubectl-neuron-top.txt"
  echo "$second"
  cores="$(annotation_of shown AWS_NEURON_IDS | python3 -c '
import sys
ids, runs = set(), []
for part in filter(None, sys.stdin.read().strip().split(",")):
    low, _, high = part.partition("-")
    ids |= set(range(int(low), int(high or low) + 1))
ids = sorted(ids)
for i in ids:
    if runs and i == runs[-1][1] + 1: runs[-1][1] = i
    else: runs.append([i, i])
print(",".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs))')"
  grep -Eq " shown +\| .* $cores " <<< "$first" || { echo "shown's cores $cores not on screen"; return 1; }
  grep -q "shown-too" <<< "$first" || { echo "shown-too not on screen"; return 1; }
  clock1="$(head -n 1 <<< "$first")" clock2="$(head -n 1 <<< "$second")"
  [[ "$clock1" == *"Ctrl-C to quit"* && "$clock1" != "$clock2" ]] ||
    { echo "the view did not refresh: '$clock1' then '$clock2'"; return 1; }
}
check "kubectl neuron top shows both pods' cores and refreshes (tmux)" top_shows_both_pods_and_refreshes
top_once_json_names_the_pods() {
  neuron_cli top "$NODE_NAME" --json | python3 -c '
import json, sys
node = json.load(sys.stdin)["nodes"][0]
pods = {p["pod"]: p for p in node["pods"]}
print(sorted(pods), node["health"])
assert len(pods["shown"]["cores"]) == 8 and len(pods["shown-too"]["devices"]) == 1, pods
assert len(node["devices"]) == 16'
}
check "kubectl neuron top NODE --json names both pods and all 16 devices" top_once_json_names_the_pods
k delete pod -n e2e shown shown-too --wait=false > /dev/null

echo "== helm test and upgrade"
check "helm test" "$HELM" --kubeconfig "$KUBECONFIG" test torus -n kube-system --timeout 2m
check "helm upgrade with a changed value" "$HELM" --kubeconfig "$KUBECONFIG" upgrade torus \
  "$REPO/helm/torus" -n kube-system --reuse-values --set nodeAgent.logLevel=debug --wait --timeout 3m
check "the upgraded agent runs with the new value" eventually 60 sh -c \
  "'$KUBECTL' --kubeconfig '$KUBECONFIG' get ds -n kube-system -o jsonpath='{.items[0].spec.template.spec.containers[0].args}' | grep -q -- --log-level=debug"

echo "== no Torus identity was refused by the API server"
refusals() {
  python3 - "$STATE_DIR/logs/audit.log" <<'PY'
import json, sys
refused = set()
for line in open(sys.argv[1]):
    event = json.loads(line)
    user = event.get("user", {}).get("username", "")
    code = event.get("responseStatus", {}).get("code", 0)
    if code == 403 and (user.startswith("system:serviceaccount:kube-system:torus") or
                        user == "system:serviceaccount:kube-system:neuron-scheduler"):
        refused.add(f'{user} {event["verb"]} {event["requestURI"]}')
for r in sorted(refused):
    print("403:", r)
sys.exit(1 if refused else 0)
PY
}
check "no 403 for the chart's ServiceAccounts in the audit log" refusals

echo "== the node agent writes only its own Node and the pods bound to it"
# Node B is the second real node, with a pod of its own. The agent's token is one bound to its
# pod, as kubelet mounts it, so the API server names the agent's node in it.
read -r -a node_names <<< "$NODE_NAMES"
node_b="${node_names[1]}"
pod_manifest on-node-a neuroncore 4 neuron-scheduler 600 | k apply -f - > /dev/null
PIN_NODE="$node_b" pod_manifest on-node-b neuroncore 1 neuron-scheduler 600 | k apply -f - > /dev/null
check "a pod on the agent's node and one on node B run" eventually 90 all_running on-node-a on-node-b
agent_pod="$(agent_pods -o jsonpath='{.items[0].metadata.name}')"
agent_sa="$(k get pod -n kube-system "$agent_pod" -o jsonpath='{.spec.serviceAccountName}')"
agent_token="$(k create token -n kube-system "$agent_sa" --duration 10m --bound-object-kind Pod \
  --bound-object-name "$agent_pod" \
  --bound-object-uid "$(k get pod -n kube-system "$agent_pod" -o jsonpath='{.metadata.uid}')")"
unbound_token="$(k create token -n kube-system "$agent_sa" --duration 10m)"
CA_FILE="$(k config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority}')"
# as_agent TOKEN WANT_CODE PATCH_TYPE PATH BODY [WANT_MESSAGE]: a PATCH with the token gets WANT_CODE.
as_agent() {
  local token="$1" want="$2" type="$3" path="$4" body="$5" message="${6:-}" code
  code="$(curl -s -o "$STATE_DIR/patch-reply.json" -w '%{http_code}' --max-time 10 \
    --cacert "$CA_FILE" -H "Authorization: Bearer $token" -X PATCH \
    -H "Content-Type: application/$type-patch+json" "https://$APISERVER_HOST:$APISERVER_PORT$path" -d "$body")"
  cat "$STATE_DIR/patch-reply.json"
  [[ "$code" == "$want" ]] || { echo "HTTP $code, want $want"; return 1; }
  [[ -z "$message" ]] || grep -q "$message" "$STATE_DIR/patch-reply.json"
}
check "the agent of node A may label its own Node (torus.dev/*)" as_agent "$agent_token" 200 merge \
  "/api/v1/nodes/$NODE_NAME" '{"metadata":{"labels":{"torus.dev/e2e-probe":"a"}}}'
check "...and mark a pod on node A allocated" as_agent "$agent_token" 200 merge \
  /api/v1/namespaces/e2e/pods/on-node-a '{"metadata":{"annotations":{"NEURON_ALLOCATED":"true"}}}'
check "...is refused a patch of node B" as_agent "$agent_token" 403 merge "/api/v1/nodes/$node_b" \
  '{"metadata":{"labels":{"torus.dev/lnc":"1"}}}' "may change only its own Node, not $node_b"
check "...and of a pod on node B" as_agent "$agent_token" 403 merge \
  /api/v1/namespaces/e2e/pods/on-node-b '{"metadata":{"annotations":{"AWS_NEURON_IDS":"0"}}}' \
  "may change only pods bound to its node"
check "...and any label of its Node it does not own" as_agent "$agent_token" 403 merge \
  "/api/v1/nodes/$NODE_NAME" '{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}' \
  "may not change the labels node-role.kubernetes.io/control-plane"
check "...and cordoning its Node" as_agent "$agent_token" 403 merge "/api/v1/nodes/$NODE_NAME" \
  '{"spec":{"unschedulable":true}}' "may not change a spec"
check "...and tainting its Node with any taint but its own" as_agent "$agent_token" 403 merge \
  "/api/v1/nodes/$NODE_NAME" '{"spec":{"taints":[{"key":"evil","effect":"NoSchedule"}]}}' \
  "may not change a spec"
check "...but may set and remove its restarting taint" as_agent "$agent_token" 200 merge \
  "/api/v1/nodes/$NODE_NAME" \
  '{"spec":{"taints":[{"key":"torus.dev/device-plugin-restarting","effect":"NoSchedule"}]}}'
check "...(removed)" as_agent "$agent_token" 200 merge "/api/v1/nodes/$NODE_NAME" '{"spec":{"taints":null}}'
check "...and any condition but NeuronHealthy and AWS's NeuronHealth" as_agent "$agent_token" 403 \
  strategic-merge "/api/v1/nodes/$NODE_NAME/status" \
  '{"status":{"conditions":[{"type":"Ready","status":"False"}]}}' \
  "only its Node's NeuronHealthy, NeuronHealth conditions"
check "...and the image of a pod on its own node" as_agent "$agent_token" 403 strategic-merge \
  /api/v1/namespaces/e2e/pods/on-node-a '{"spec":{"containers":[{"name":"app","image":"evil"}]}}' \
  "may not change a spec"
check "...and an annotation of that pod it does not own" as_agent "$agent_token" 403 merge \
  /api/v1/namespaces/e2e/pods/on-node-a '{"metadata":{"annotations":{"owner":"me"}}}' \
  "may not change the annotations owner"
check "a token of the agent's account not bound to its pod may write nothing" as_agent \
  "$unbound_token" 403 merge "/api/v1/nodes/$NODE_NAME" \
  '{"metadata":{"labels":{"torus.dev/e2e-probe":"b"}}}' "token names no node"
k label node "$NODE_NAME" torus.dev/e2e-probe- > /dev/null
k delete pod -n e2e on-node-a on-node-b --wait=false > /dev/null

echo "== AWS's health condition from the kernel log; HyperPod's label untouched"
k label node "$NODE_NAME" sagemaker.amazonaws.com/node-health-status=Schedulable --overwrite > /dev/null
neuron_health_reason() {
  k get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="NeuronHealth")].reason}'
}
neuron_health_is() { [[ "$(neuron_health_reason)" == "$1" ]]; }
check "NeuronHealth says NeuronHasNoError" eventually 30 neuron_health_is NeuronHasNoError
neuron_health_within_2s() {
  local started=$SECONDS reason
  echo "6,9001,1000,-;neuron: nd7: NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR" >> "$SIMULATED_NODE_DIR/dev/kmsg"
  local deadline=$(($(date +%s%N) + 2000000000))
  while (($(date +%s%N) < deadline)); do
    reason="$(neuron_health_reason)"
    if [[ "$reason" == NeuronHasError_HBM_UNCORRECTABLE_ERROR ]]; then
      echo "set within $((SECONDS - started)) s"
      return 0
    fi
    sleep 0.1
  done
  echo "NeuronHealth reason after 2 s: ${reason:-none}"
  return 1
}
check "an HBM uncorrectable error sets NeuronHealth NeuronHasError_HBM_UNCORRECTABLE_ERROR within 2 s" \
  neuron_health_within_2s
hyperpod_label_kept() {
  [[ "$(k get node "$NODE_NAME" -o 'jsonpath={.metadata.labels.sagemaker\.amazonaws\.com/node-health-status}')" == Schedulable ]]
}
check "...and leaves HyperPod's node-health-status label as it was" hyperpod_label_kept
k label node "$NODE_NAME" sagemaker.amazonaws.com/node-health-status- > /dev/null

echo "== helm uninstall"
check "helm uninstall" "$HELM" --kubeconfig "$KUBECONFIG" uninstall torus -n kube-system --wait --timeout 2m
leftover() {
  local left
  left="$(k get all,sa,role,rolebinding,configmap -n kube-system -l app.kubernetes.io/instance=torus -o name 2> /dev/null)"
  left+="$(k get clusterrole,clusterrolebinding -l app.kubernetes.io/instance=torus -o name 2> /dev/null)"
  [[ -z "$left" ]] || { echo "left behind: $left"; return 1; }
}
check "uninstall leaves none of the chart's objects" eventually 30 leftover
node_forgotten() {
  k get node "$NODE_NAME" -o json | python3 -c '
import json, sys
node = json.load(sys.stdin)
meta = node["metadata"]
left = [k for k in list(meta.get("labels", {})) + list(meta.get("annotations", {}))
        if k.startswith("torus.dev/") or k.startswith("neuron.amazonaws.com/ultraserver")]
left += [c["type"] for c in node["status"].get("conditions", []) if c["type"] == "NeuronHealthy"]
print("left on the node:", left)
sys.exit(1 if left else 0)'
}
check "uninstall leaves no torus.dev label, annotation or NeuronHealthy condition" eventually 30 node_forgotten

echo "== LNC 1: the counts double"
check "helm install with nodeAgent.lnc=1" "$HELM" --kubeconfig "$KUBECONFIG" install torus \
  "$REPO/helm/torus" -n kube-system -f "$STATE_DIR/values-local.yaml" --set nodeAgent.lnc=1 \
  --wait --timeout 3m
check "kubelet advertises 128 cores at LNC 1" eventually 60 allocatable_is neuroncore 128
check "and still 16 devices" eventually 30 allocatable_is neuron 16
CORES_PER_DEVICE=8
EXPECTED_LNC=1
pod_manifest lnc1-cores neuroncore 16 | k apply -f - > /dev/null
check "a 16-core pod runs at LNC 1" eventually 90 pod_succeeded lnc1-cores
check "...on two NeuronLink-connected devices, with NEURON_LOGICAL_NC_CONFIG=1" \
  check_pod_saw lnc1-cores neuroncore 16
k delete pod -n e2e lnc1-cores --wait=false > /dev/null
check "helm uninstall (LNC 1)" "$HELM" --kubeconfig "$KUBECONFIG" uninstall torus -n kube-system \
  --wait --timeout 2m

echo "took $((SECONDS - started)) s"
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
