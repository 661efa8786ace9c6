#!/usr/bin/env bash
# Scheduling throughput on the real local cluster: the chart's neuron-scheduler with Torus's
# extender next to kube-scheduler counting extended resources only, in one run, on kwok nodes
# that carry what the node agent publishes.
#
#   tests/bench/scheduling_throughput.sh [NODES] [PODS]    (defaults: 1000 trn2 + 200 inf2, 2000)
#
# NODES is local-cluster.sh's --fake-nodes form (trn2.48xlarge:1000,inf2.48xlarge:200). For each
# scheduler, the pods (mixed sizes: 1, 2, 4, 8, 16 cores and 1, 4 devices) are created while that
# scheduler is paused (SIGSTOP), so creating them is not measured; it is then resumed, and pods/s
# is the pod count over the span from the first to the last PodScheduled transition (1 s
# resolution). Every extender placement is checked: the ids on the pod (AWS_NEURON_IDS) are as
# many as asked, on devices the node's torus.dev/topology says are NeuronLink-connected. Needs
# root; stops everything it started. Prints a table and the ratio.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
NODES="${1:-trn2.48xlarge:1000,inf2.48xlarge:200}"
PODS="${2:-2000}"
STATE_DIR="$(mktemp -d /tmp/torus-bench-XXXXXX)"
cluster() { "$REPO/scripts/local-cluster.sh" "$@" --state-dir="$STATE_DIR"; }
trap 'cluster down > /dev/null 2>&1 || true; rm -f "$STATE_DIR.up.log"' EXIT

cmake --build "$REPO/build" --target neuron-ls kubectl-neuron > /dev/null
echo "== local cluster with Torus and fake nodes ($NODES)"
if ! cluster up --fake-nodes="$NODES" > "$STATE_DIR.up.log" 2>&1; then
  tail -n 30 "$STATE_DIR.up.log"
  exit 1
fi
grep '^\[local-cluster' "$STATE_DIR.up.log"
source "$STATE_DIR/cluster.env"
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }

# pods NAMESPACE SCHEDULER COUNT: a List of pods of mixed sizes that only fit fake nodes.
pods() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
namespace, scheduler, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
sizes = [("neuroncore", 1), ("neuroncore", 2), ("neuroncore", 4), ("neuroncore", 8),
         ("neuroncore", 16), ("neuron", 1), ("neuron", 4)]
items = []
for i in range(count):
    resource, n = sizes[i % len(sizes)]
    items.append({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"p{i:05d}", "namespace": namespace},
        "spec": {
            "schedulerName": scheduler,
            "nodeSelector": {"type": "kwok"},
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists",
                             "effect": "NoSchedule"}],
            "containers": [{"name": "app", "image": "fake",
                            "resources": {"limits": {f"aws.amazon.com/{resource}": str(n)}}}],
        }})
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
PY
}

scheduler_pid() {
  case "$1" in
    default-scheduler) cat "$STATE_DIR/pids/kube-scheduler.pid" ;;
    neuron-scheduler) pgrep -f 'kube-scheduler --config=/etc/kubernetes/neuron-scheduler' ;;
  esac
}

# measure SCHEDULER NAMESPACE: prints "pods seconds pods_per_second".
measure() {
  local scheduler="$1" namespace="$2" pid
  pid="$(scheduler_pid "$scheduler")"
  [[ -n "$pid" ]] || { echo "no $scheduler process" >&2; exit 1; }
  k create namespace "$namespace" > /dev/null
  kill -STOP "$pid"
  pods "$namespace" "$scheduler" "$PODS" | k create -f - > /dev/null
  kill -CONT "$pid"
  local deadline=$((SECONDS + 900)) bound=0
  while ((SECONDS < deadline)); do
    bound="$(k get pods -n "$namespace" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true)"
    ((bound >= PODS)) && break
    sleep 2
  done
  ((bound >= PODS)) || echo "only $bound of $PODS pods bound by $scheduler" >&2
  k get pods -n "$namespace" -o json | python3 -c '
import datetime, json, sys
times = []
for pod in json.load(sys.stdin)["items"]:
    for c in pod.get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "True":
            times.append(datetime.datetime.fromisoformat(c["lastTransitionTime"].replace("Z", "+00:00")))
span = (max(times) - min(times)).total_seconds() + 1
print(len(times), span, len(times) / span)'
}

# Every extender placement: the right count of ids, NeuronLink-connected on its node.
valid_share() {
  PYTHONPATH="$REPO/tests/e2e/cluster" python3 - "$KUBECTL" "$KUBECONFIG" "$1" <<'PY'
import json, subprocess, sys
from neuronlink import connected
kubectl, kubeconfig, namespace = sys.argv[1:4]
get = lambda *a: json.loads(subprocess.check_output([kubectl, "--kubeconfig", kubeconfig, *a, "-o", "json"]))
nodes = {n["metadata"]["name"]: json.loads(n["metadata"]["annotations"]["torus.dev/topology"])
         for n in get("get", "nodes", "-l", "type=kwok")["items"]}
valid = total = 0
for pod in get("get", "pods", "-n", namespace)["items"]:
    total += 1
    meta, spec = pod["metadata"], pod["spec"]
    ids = [int(i) for i in meta.get("annotations", {}).get("AWS_NEURON_IDS", "").split(",") if i]
    limits = spec["containers"][0]["resources"]["limits"]
    resource, count = next(iter(limits.items()))
    topo = nodes.get(spec.get("nodeName"))
    if not topo or len(ids) != int(count) or len(set(ids)) != len(ids):
        continue
    devices = sorted(set(ids)) if resource.endswith("/neuron") else \
        sorted({i // topo["coresPerDevice"] for i in ids})
    valid += connected(devices, lambda d: topo["links"][d])
print(valid, total)
PY
}

echo "== $PODS pods through kube-scheduler, counting aws.amazon.com/* only"
read -r default_pods default_seconds default_rate < <(measure default-scheduler bench-default)
echo "== $PODS pods through neuron-scheduler and the Torus extender"
read -r ext_pods ext_seconds ext_rate < <(measure neuron-scheduler bench-extender)
read -r valid total < <(valid_share bench-extender)
# Where the extender path's time goes: the extender's own time per verb, from its /metrics.
extender_time=$(curl -sf "http://127.0.0.1:$EXTENDER_PORT/metrics" | python3 -c '
import re, sys
sums, counts = {}, {}
for line in sys.stdin:
    m = re.match(r"torus_extender_request_duration_seconds_(sum|count)\{verb=\"(\w+)\"\} (\S+)", line)
    if m:
        (sums if m[1] == "sum" else counts)[m[2]] = float(m[3])
print(", ".join(f"{v} {1000 * sums[v] / counts[v]:.1f} ms x {int(counts[v])}" for v in sorted(counts) if counts[v]))')

printf '\n%-44s %6s %9s %8s\n' "SCHEDULER" "PODS" "SECONDS" "PODS/S"
printf '%-44s %6d %9.0f %8.1f\n' "kube-scheduler (extended resources counted)" "$default_pods" "$default_seconds" "$default_rate"
printf '%-44s %6d %9.0f %8.1f\n' "neuron-scheduler + Torus extender" "$ext_pods" "$ext_seconds" "$ext_rate"
python3 -c "print(f'extender / default: {$ext_rate / $default_rate:.2f}x (target >= 0.5x); valid NeuronLink placements: $valid/$total')"
echo "extender time per call (mean): $extender_time"
echo "nodes: $NODES; Kubernetes $K8S_VERSION; $(nproc) CPUs"
