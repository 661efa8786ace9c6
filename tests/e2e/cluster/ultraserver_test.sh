#!/usr/bin/env bash
# End-to-end of neuron-ultraserver-operator (AWS's NeuronUltraServerWorkload API) on the four real
# trn2u.48xlarge nodes of one simulated UltraServer, each a kubelet in its own namespaces running
# the DRA driver from the chart's production values (dra.enabled, ultraserverOperator.enabled).
# Checked: the NeuronUltraServer object the operator builds from the agents' labels; a 4-node
# workload reserved whole, its devices tagged, its ResourceClaimTemplate written, and
# deploy/examples/ultraserver-workload.yaml's AllReduce across the four nodes with the
# UltraServer environment as rank; a second workload waiting with a status naming why and holding
# no device, then running once the first is deleted; a claim of nobody's workload kept off the
# reserved chips by their taint, and refused at prepare naming the workload when it tolerates the
# taint; and the failure strategies when a node's kubelet
# stops: RestartAll (all pods restart once the UltraServer is whole again), MigrateAffected (only
# the affected pod moves) and NoOp (reported, nothing moved); leader election between two
# replicas; and no 403 for Torus's identities in the API server's audit log.
#
# Usage: tests/e2e/cluster/ultraserver_test.sh [--keep]   (--keep leaves the cluster running)
# Needs root. Prints 'N passed, N failed'; exits non-zero on any failure. Every wait is bounded.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
source "$REPO/tests/e2e/cluster/lib.sh"
source "$REPO/tests/e2e/cluster/dra_lib.sh"

cluster_test_setup torus-ultraserver "${1:-}"

started=$SECONDS
echo "== an UltraServer of four trn2u nodes, DRA and the UltraServer operator (state: $STATE_DIR)"
# The operator stays on the node no check stops (torus-node-4: node id 3): a controller on a lost
# node stops with it, as it would in production (docs/ultraserver.md says where to run it).
cluster up --dra --nodes=trn2u.48xlarge:4@us0 --set ultraserverOperator.enabled=true \
  --set 'ultraserverOperator.nodeSelector.kubernetes\.io/hostname=torus-node-4'
source "$STATE_DIR/cluster.env"
export KUBECONFIG KUBECTL NODE_NAME
read -r -a names <<< "$NODE_NAMES"
read -r -a ips <<< "$NODE_IPS"
echo "cluster with Torus up in $((SECONDS - started)) s"
k create namespace e2e > /dev/null

ready_replicas() {
  [[ "$(k get deploy -n kube-system torus-torus-ultraserver-operator -o jsonpath='{.status.readyReplicas}')" == 1 ]]
}
check "the operator's Deployment is ready" eventually 120 ready_replicas
us_json() { k get neuronultraservers -n kube-system -o json; }
ultraserver_built() {
  us_json | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
assert len(items) == 1, f"{len(items)} NeuronUltraServer objects"
us = items[0]
nodes = sorted((t["nodeId"], t["nodeName"]) for t in us["spec"]["topology"])
want = list(enumerate(sys.argv[1:]))
assert nodes == want, f"topology {nodes}, want {want}"
assert us["spec"]["instanceType"] == "trn2u.48xlarge", us["spec"]
assert us.get("status", {}).get("state") == "Ready", us.get("status")
assert all(t["linkStatusHorizontal"] == "up" for t in us["spec"]["topology"])' "${names[@]}"
}
check "one NeuronUltraServer lists the four nodes by their UltraServer node id" eventually 60 ultraserver_built

# workload NAME SIZE STRATEGY: a NeuronUltraServerWorkload in e2e, AWS's fields.
workload() {
  k apply -f - > /dev/null <<YAML
apiVersion: neuron.aws.com/v1beta1
kind: NeuronUltraServerWorkload
metadata: {name: $1, namespace: e2e}
spec:
  instanceType: trn2u.48xlarge
  topologySize: $2
  serverCount: 1
  allocationPolicy: {failureStrategy: $3}
  resourceClaimTemplate: {name: $1}
YAML
}
state_of() { k get nusw -n e2e "$1" -o jsonpath='{.status.state}'; }
state_is() { [[ "$(state_of "$1")" == "$2" ]] || { echo "$1 is '$(state_of "$1")', want $2"; k get nusw -n e2e "$1" -o jsonpath='{.status.conditions}'; return 1; }; }
# Nodes whose devices are all tagged for workload e2e/NAME (every device of the node).
tagged_nodes() {
  k get resourceslices -o json | python3 -c '
import json, sys
want = "e2e/" + sys.argv[1]
nodes = {}
for s in json.load(sys.stdin)["items"]:
    if s["spec"]["driver"] != "neuron.aws.com":
        continue
    for d in s["spec"].get("devices", []):
        tag = d.get("attributes", {}).get("workloadId", {}).get("string")
        nodes.setdefault(s["spec"]["nodeName"], set()).add(tag == want)
print(" ".join(sorted(n for n, tags in nodes.items() if tags == {True})))' "$1"
}
tagged_is() { local got; got="$(tagged_nodes "$1")"; [[ "$got" == "$2" ]] || { echo "tagged for $1: '$got', want '$2'"; return 1; }; }
all_nodes="$(printf '%s\n' "${names[@]}" | sort | xargs)"

echo "== a 4-node workload takes the UltraServer whole; the example's AllReduce runs across it"
# deploy/examples/ultraserver-workload.yaml as its header says: the workload, then the Job with
# the leader's address.
example="$REPO/deploy/examples/ultraserver-workload.yaml"
sed '/^# --- job/,$d' "$example" | k apply -n e2e -f - > /dev/null
first=allreduce-us
check "workload $first is Allocated" eventually 60 state_is "$first" Allocated
template_owned() {
  [[ "$(k get resourceclaimtemplate -n e2e "$first" -o jsonpath='{.metadata.ownerReferences[0].kind}')" == NeuronUltraServerWorkload ]]
}
check "its ResourceClaimTemplate is written, owned by the workload" template_owned
check "every device of the four nodes carries workloadId e2e/$first" eventually 60 tagged_is "$first" "$all_nodes"
leader="$(us_json | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["status"]["allocations"][0]["leaderNodeName"])')"
check "the allocation's leader is node id 0" test "$leader" == "${names[0]}"
k create secret generic neuron-allreduce-us -n e2e \
  --from-literal=job-secret="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" > /dev/null
agent_image="$(k get ds -n kube-system -l app.kubernetes.io/component=node-agent -o 'jsonpath={.items[0].spec.template.spec.containers[0].image}')"
leader_ip="$(k get node "$leader" -o 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}')"
sed -n '/^# --- job/,$p' "$example" |
  ROOT_ADDRESS="$leader_ip:29500" IMAGE="$agent_image" IFACE=eth0 \
    envsubst '$ROOT_ADDRESS $IMAGE $IFACE' | k apply -n e2e -f - > /dev/null
job_pods() { k get pods -n e2e -l "job-name=$first" -o json; }
allreduce_passed() {
  [[ "$(k get job -n e2e "$first" -o jsonpath='{.status.succeeded}')" == 4 ]] ||
    { echo "job: $(k get job -n e2e "$first" -o jsonpath='{.status}')"; return 1; }
}
check "the Job's 4 ranks complete" eventually 240 allreduce_passed
one_rank_per_node_as_its_node_id() {
  job_pods | python3 -c '
import json, sys
pods = json.load(sys.stdin)["items"]
nodes = sorted(p["spec"]["nodeName"] for p in pods)
assert nodes == sorted(sys.argv[1:]), f"pods on {nodes}"
' "${names[@]}"
  local pod node rank
  for pod in $(k get pods -n e2e -l "job-name=$first" -o name); do
    node="$(k get -n e2e "$pod" -o jsonpath='{.spec.nodeName}')"
    rank="$(k logs -n e2e "$pod" | sed -n 's/^rank \([0-9-]*\) of UltraServer.*(mode 1).*/\1/p')"
    [[ "$rank" == "$(k get node "$node" -o jsonpath='{.metadata.labels.neuron\.amazonaws\.com/ultraserver-node-id-4}')" ]] ||
      { echo "$pod on $node: rank '$rank' ($(k logs -n e2e "$pod" | head -1))"; return 1; }
  done
}
check "one rank per node; each rank is its node's UltraServer node id (mode 1: 4 nodes)" one_rank_per_node_as_its_node_id
rows_ok() {
  local log rows
  log="$(k logs -n e2e "$(job_pods | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    if p["spec"]["nodeName"] == sys.argv[1]:
        print(p["metadata"]["name"])' "$leader")")"
  echo "$log" > "$STATE_DIR/allreduce.log"
  rows="$(grep -E '^ +[0-9]+ ' <<< "$log")"
  [[ -n "$rows" ]] && ! grep -qvE ' ok$' <<< "$rows"
}
check "rank 0's AllReduce sweep passes its data check at every size" rows_ok
echo "      $(grep -E '^ +4194304 ' "$STATE_DIR/allreduce.log" || true)"
k delete resourceclaimtemplate -n e2e "$first" --wait=true > /dev/null
check "a deleted ResourceClaimTemplate is written again (within a resync)" eventually 90 template_owned

echo "== a second 4-node workload waits, holding nothing"
workload second 4 RestartAll
waits_naming_first() {
  state_is second Pending || return 1
  local message
  message="$(k get nusw -n e2e second -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')"
  echo "$message"
  [[ "$message" == *"held by e2e/$first"* ]]
}
check "workload second is Pending and its status names e2e/$first" eventually 60 waits_naming_first
dra_pod second-0 second 3600  # on the first node (dra_lib.sh), which the workload will hold
check "its pod waits unscheduled" eventually 60 unschedulable second-0
holds_nothing() {
  local allocated
  allocated="$(k get resourceclaims -n e2e -o json | python3 -c '
import json, sys
print(sum(1 for c in json.load(sys.stdin)["items"]
          if c["metadata"].get("annotations", {}).get("neuron.aws.com/workload") == "e2e/second"
          and c.get("status", {}).get("allocation")))')"
  [[ "$allocated" == 0 ]] || { echo "$allocated claims of e2e/second are allocated"; return 1; }
  tagged_is second ""
}
check "...and holds no device: no claim of it allocated, no device tagged for it" holds_nothing

echo "== a claim of no workload on a reserved chip waits unscheduled; one that forces its way is refused at prepare"
# chip_claim NAME [TOLERATE]: a template for chip 3 (of the first node: dra_pod pins its pods);
# with TOLERATE it also tolerates the reservation's taint, as a claim written to get past the
# scheduler would.
chip_claim() {
  local tolerations=""
  [[ -n "${2:-}" ]] && tolerations="
            tolerations: [{key: neuron.aws.com/reserved, operator: Exists, effect: NoSchedule}]"
  k apply -n e2e -f - > /dev/null <<YAML
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: $1}
spec:
  spec:
    devices:
      requests:
        - name: neurons
          exactly:
            deviceClassName: neuron.aws.com
            selectors:
              - cel: {expression: 'device.attributes["neuron.aws.com"].resourceType == "neuron_device" && device.attributes["neuron.aws.com"].deviceId == 3'}$tolerations
YAML
}
chip_claim chip-three
dra_pod stranger chip-three
reserved_tainted() {
  k get resourceslices -o json | python3 -c '
import json, sys
for s in json.load(sys.stdin)["items"]:
    for d in s["spec"].get("devices", []):
        keys = [t["key"] for t in d.get("taints", [])]
        assert "neuron.aws.com/reserved" in keys, (s["spec"]["nodeName"], d["name"], keys)'
}
check "every reserved device carries the NoSchedule taint neuron.aws.com/reserved" reserved_tainted
check "the stranger waits unscheduled: the scheduler gives it no reserved chip" eventually 60 unschedulable stranger
chip_claim chip-three-forced tolerate
dra_pod forced chip-three-forced
refused_naming_workload() {
  k get events -n e2e --field-selector involvedObject.name=forced -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' |
    grep -m1 "is reserved for NeuronUltraServerWorkload e2e/$first"
}
check "a claim that tolerates the taint is refused at prepare, naming e2e/$first" eventually 90 refused_naming_workload
not_running() { [[ "$(pod_phase forced)" == Pending ]]; }
check "...and does not run" not_running
k delete pod -n e2e stranger forced --wait=false > /dev/null

echo "== deleting the first workload releases the UltraServer to the second"
k delete nusw -n e2e "$first" --wait=false > /dev/null
first_gone() {
  ! k get nusw -n e2e "$first" > /dev/null 2>&1 || { echo "$first: $(state_of "$first")"; return 1; }
  [[ -z "$(k get pods -n e2e -l "job-name=$first" -o name)" ]] || { echo "its pods remain"; return 1; }
  ! k get resourceclaimtemplate -n e2e "$first" > /dev/null 2>&1 || { echo "its template remains"; return 1; }
}
check "$first, its pods and its template are gone" eventually 90 first_gone
check "second is Allocated" eventually 60 state_is second Allocated
check "its pod runs" eventually 120 pod_running second-0
env_is_the_nodes() {
  local node report
  node="$(k get pod -n e2e second-0 -o jsonpath='{.spec.nodeName}')"
  report="$(k logs -n e2e second-0)"
  echo "$node: $report"
  grep -qx "NEURON_RT_ULTRASERVER_MODE=1" <<< "$report" &&
    grep -qx "NEURON_RT_ULTRASERVER_NODE_ID=$(k get node "$node" -o jsonpath='{.metadata.labels.neuron\.amazonaws\.com/ultraserver-node-id-4}')" <<< "$report" &&
    grep -qx "NEURON_RT_ULTRASERVER_SERVER_ID=$(k get node "$node" -o jsonpath='{.metadata.labels.neuron\.amazonaws\.com/ultraserver-server-id-4}')" <<< "$report"
}
check "...with its node's UltraServer environment" env_is_the_nodes
k delete pod -n e2e second-0 --wait=true > /dev/null

stop_node() { cluster stop "kubelet-$1" > /dev/null; cluster stop "containerd-$1" > /dev/null; }
start_node() { cluster start "containerd-$1" > /dev/null; cluster start "kubelet-$1" > /dev/null; }
node_ready() { [[ "$(k get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]; }
node_not_ready() { ! node_ready "$1"; }
# deployment NAME TEMPLATE REPLICAS: long-running pods of a workload, as users run them.
deployment() {
  k apply -n e2e -f - > /dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: $3
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: app
          image: public.ecr.aws/docker/library/debian:bookworm-slim
          command: [sleep, infinity]
          resources: {claims: [{name: neurons}]}
      resourceClaims:
        - {name: neurons, resourceClaimTemplateName: $2}
YAML
}
# running_pods APP: "uid@node" of its Running pods, sorted.
running_pods() {
  k get pods -n e2e -l "app=$1" -o json | python3 -c '
import json, sys
print(" ".join(sorted(p["metadata"]["uid"] + "@" + p["spec"]["nodeName"]
                      for p in json.load(sys.stdin)["items"]
                      if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp"))))'
}
count_running() { local n; n="$(running_pods "$1" | wc -w)"; [[ "$n" == "$2" ]] || { echo "$n of $1's pods Running, want $2"; return 1; }; }

echo "== RestartAll: a node lost, all four pods restart once the UltraServer is whole again"
deployment trainer second 4
check "four pods of workload second run, one per node" eventually 180 count_running trainer 4
before="$(running_pods trainer)"
lost="${names[2]}"
stop_node "$lost"
check "$lost goes NotReady" eventually 60 node_not_ready "$lost"
# The lost node's agent is down with it, so its slices keep the old tag until it is back.
released() {
  state_is second Pending || return 1
  local tagged
  tagged="$(tagged_nodes second)"
  [[ "$tagged" == "" || "$tagged" == "$lost" ]] || { echo "still tagged: $tagged"; return 1; }
}
check "second is released (Pending, no healthy node's device tagged)" eventually 60 released
others_deleted() {
  local pod node
  for entry in $before; do
    node="${entry#*@}"
    [[ "$node" == "$lost" ]] && continue
    pod="${entry%@*}"
    ! running_pods trainer | grep -q "$pod" || { echo "pod $pod on $node still runs"; return 1; }
  done
}
check "the pods on the three healthy nodes are deleted too" eventually 60 others_deleted
start_node "$lost"
check "$lost is Ready again" eventually 90 node_ready "$lost"
all_new() {
  count_running trainer 4 || return 1
  local now entry
  now="$(running_pods trainer)"
  for entry in $before; do
    ! grep -q "${entry%@*}" <<< "$now" || { echo "old pod ${entry%@*} is still one of them"; return 1; }
  done
}
check "second is Allocated again and four new pods run" eventually 240 all_new
k delete deploy -n e2e trainer --wait=false > /dev/null
k delete nusw -n e2e second --wait=false > /dev/null
gone() { ! k get nusw -n e2e "$1" > /dev/null 2>&1; }
check "second is deleted" eventually 90 gone second

echo "== MigrateAffected moves only the affected pod; NoOp reports and moves nothing"
workload mover 1 MigrateAffected
workload stayer 1 NoOp
check "mover is Allocated" eventually 60 state_is mover Allocated
check "stayer is Allocated" eventually 60 state_is stayer Allocated
deployment mover mover 1
deployment stayer stayer 1
check "mover's pod runs" eventually 120 count_running mover 1
check "stayer's pod runs" eventually 120 count_running stayer 1
mover_before="$(running_pods mover)"
stayer_before="$(running_pods stayer)"
mover_node="${mover_before#*@}"
stayer_node="${stayer_before#*@}"
echo "      mover on $mover_node, stayer on $stayer_node"
stop_node "$mover_node"
stop_node "$stayer_node"
both_not_ready() { node_not_ready "$mover_node" && node_not_ready "$stayer_node"; }
check "both nodes go NotReady" eventually 60 both_not_ready
moved() {
  local now
  now="$(running_pods mover)"
  [[ -n "$now" && "${now#*@}" != "$mover_node" && "${now#*@}" != "$stayer_node" ]] ||
    { echo "mover's running pod: '$now'"; return 1; }
}
check "mover's pod runs again on a healthy node" eventually 180 moved
stayer_degraded() {
  state_is stayer Allocated || return 1
  local degraded
  degraded="$(k get nusw -n e2e stayer -o jsonpath='{.status.conditions[?(@.type=="Degraded")].status}/{.status.conditions[?(@.type=="Degraded")].reason}')"
  [[ "$degraded" == "True/NodeNotReady" ]] || { echo "Degraded: $degraded"; return 1; }
  k get pods -n e2e -l app=stayer -o jsonpath='{.items[*].metadata.uid}' | grep -q "${stayer_before%@*}" ||
    { echo "stayer's pod was deleted"; return 1; }
}
check "stayer stays Allocated, reported Degraded (NodeNotReady), its pod left alone" eventually 60 stayer_degraded
start_node "$mover_node"
start_node "$stayer_node"
both_ready() { node_ready "$mover_node" && node_ready "$stayer_node"; }
check "both nodes are Ready again" eventually 90 both_ready
stayer_runs_where_it_was() { [[ "$(running_pods stayer)" == "$stayer_before" ]]; }
check "stayer's pod runs on where it was" eventually 120 stayer_runs_where_it_was

echo "== a second replica waits for the lease, and acts once the first stops"
# A standby on this machine (the same binary, the admin kubeconfig): it must not act while the
# chart's replica holds the lease, and must take over when that one stops and releases it.
standby_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$REPO/build/bin/neuron-ultraserver-operator" --kubeconfig="$KUBECONFIG" --namespace=kube-system \
  --health-probe-bind-address=127.0.0.1:0 --metrics-bind-address="127.0.0.1:$standby_port" \
  > "$STATE_DIR/logs/standby-operator.log" 2>&1 &
standby_pid=$!
stop_standby() { kill "$standby_pid" 2> /dev/null && wait "$standby_pid" 2> /dev/null || true; }
on_exit() { local status=$?; stop_standby; (exit "$status"); finish; }
trap on_exit EXIT
holder() { k get lease -n kube-system neuron-ultraserver-operator -o jsonpath='{.spec.holderIdentity}'; }
standby_leads() { curl -sf "http://127.0.0.1:$standby_port/metrics" | grep -qx "torus_ultraserver_leader $1"; }
standby_waits() {
  standby_leads 0 || { echo "standby: $(curl -sf "http://127.0.0.1:$standby_port/metrics" | grep leader)"; return 1; }
  [[ "$(holder)" == torus-torus-ultraserver-operator-* ]] || { echo "holder: $(holder)"; return 1; }
}
check "the standby is up and does not lead; the chart's replica holds the lease" eventually 30 standby_waits
k scale deploy -n kube-system torus-torus-ultraserver-operator --replicas=0 > /dev/null
check "once that replica stops, the standby leads" eventually 30 standby_leads 1
workload late 1 NoOp  # one node: mover and stayer still hold two
check "...and acts: a new workload is Allocated" eventually 60 state_is late Allocated
stop_standby
k scale deploy -n kube-system torus-torus-ultraserver-operator --replicas=1 > /dev/null
chart_leads() { [[ "$(holder)" == torus-torus-ultraserver-operator-* ]] || { echo "holder: '$(holder)'"; return 1; }; }
check "the chart's replica takes the released lease back" eventually 60 chart_leads

echo "== least privilege held: no Torus identity was refused by the API server"
refusals() {
  python3 - "$STATE_DIR/logs/audit.log" <<'PY'
import json, sys
refused = set()
for line in open(sys.argv[1]):
    event = json.loads(line)
    user = event.get("user", {}).get("username", "")
    if event.get("responseStatus", {}).get("code", 0) == 403 and \
            user.startswith("system:serviceaccount:kube-system:torus"):
        refused.add(f'{user} {event["verb"]} {event["requestURI"]}')
for r in sorted(refused):
    print("403:", r)
sys.exit(1 if refused else 0)
PY
}
check "no 403 for the operator's or the agents' ServiceAccounts in the audit log" refusals

echo
echo "$PASSED passed, $FAILED failed ($((SECONDS - started)) s)"
((FAILED == 0))
