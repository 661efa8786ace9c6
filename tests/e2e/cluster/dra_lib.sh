# Helpers of the DRA end-to-end tests (dra_test.sh on the default Kubernetes, dra_134_test.sh on
# 1.34): the agent, its metrics, the pool as the API holds it, claim pods and their examples.
# Sourced after lib.sh, with cluster.env loaded.

# The DRA agent's pod on NODE_NAME, the node the checks are about (a cluster may have more).
agent_pods() {
  k get pods -n kube-system -l app.kubernetes.io/component=node-agent-dra \
    --field-selector "spec.nodeName=$NODE_NAME" "$@"
}

agent_pod() { agent_pods -o jsonpath='{.items[0].metadata.name}'; }

agent_ready() {
  [[ "$(agent_pods -o jsonpath='{.items[0].status.conditions[?(@.type=="Ready")].status}')" == True ]]
}

# pinned: a manifest on stdin with every Pod in it pinned to NODE_NAME (nodeSelector).
pinned() { sed "/^kind: Pod\$/,/^spec:/ s|^spec:\$|spec:\n  nodeSelector: {kubernetes.io/hostname: $NODE_NAME}|"; }

allocations() { curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/allocations"; }

claims_prepared() {
  local count
  count="$(allocations | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["claims"]))')"
  [[ "$count" == "$1" ]] || { echo "the agent has $count prepared claims, want $1"; return 1; }
}

metric() {
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" |
    awk -v series="$1" '$1 == series { print $2; found = 1 } END { if (!found) print 0 }'
}

# The pool as the API holds it: one JSON object per device, by name.
pool_devices() {
  k get resourceslices -o json | python3 -c '
import json, sys
node = sys.argv[1]
devices = {}
for s in json.load(sys.stdin)["items"]:
    if s["spec"]["driver"] == "neuron.aws.com" and s["spec"].get("nodeName") == node:
        for d in s["spec"].get("devices", []):
            devices[d["name"]] = d
json.dump(devices, sys.stdout)' "$NODE_NAME"
}

# dra_pod NAME TEMPLATE [STAY]: a pod on NODE_NAME with one claim from TEMPLATE that reports
# what it got (cores, LNC, device nodes, and the UltraServer variables when it has them).
dra_pod() {
  local name="$1" template="$2" stay="${3:-0}"
  pinned <<YAML | k apply -f - > /dev/null
apiVersion: v1
kind: Pod
metadata:
  name: $name
  namespace: e2e
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: public.ecr.aws/docker/library/debian:bookworm-slim
      command: [sh, -c, '{ echo "CORES=\$NEURON_RT_VISIBLE_CORES"; echo "LNC=\$NEURON_LOGICAL_NC_CONFIG"; echo "DEVICES=\$(cd /dev && ls -d neuron[0-9]* | tr "\n" " ")"; env | grep "^NEURON_RT_ULTRASERVER_" | sort; } | tee /dev/termination-log; sleep $stay']
      resources:
        claims:
          - name: neurons
  resourceClaims:
    - name: neurons
      resourceClaimTemplateName: $template
YAML
}

# The ResourceClaimTemplate of an example file (its first document), in namespace e2e.
apply_example_template() {
  awk '/^---$/ { exit } { print }' "$REPO/deploy/examples/dra/$1" | k apply -n e2e -f - > /dev/null
}

# The agent's log as kubelet keeps it (`kubectl logs` needs a kubelet address, and a kubelet on
# loopback only publishes none).
# Every container of the agent pod so far, from the node's /var/log/pods.
agent_log() { cat "$NODES_DIR/$NODE_NAME"/pod-logs/kube-system_"$(agent_pod)"_*/node-agent/*.log; }

plugin_registered() { agent_log | grep -q "kubelet registered the DRA plugin"; }

run_claim() {
  local name="$1" template="$2"
  dra_pod "$name" "$template"
  eventually 120 pod_succeeded "$name"
}

no_cdi_specs() {
  local left
  left="$(find "$CDI_DIR" -name 'neuron.aws.com-*.json' | wc -l)"
  [[ "$left" == 0 ]] || { echo "$left CDI specs left in $CDI_DIR"; return 1; }
}

# Recoveries the agent counted as the reset alone: on a node installed from the chart, /sys is
# read-only, so the memory self-test cannot write the BAR and is not run (docs/security.md).
recoveries_reset_only() {
  local have
  have="$(metric 'torus_device_recoveries_total{result="reset_only"}' | cut -d. -f1)"
  echo "${have:-0}"
}

recoveries_at_least() {
  local have
  have="$(recoveries_reset_only)"
  ((have >= $1)) || { echo "torus_device_recoveries_total{result=\"reset_only\"} is $have, want >= $1 (all: $(curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" | grep '^torus_device_recoveries_total' | tr '\n' ' '))"; return 1; }
}

# The scheduler has looked at POD and found no node for it (PodScheduled: Unschedulable), and it
# is unbound: from then on it waits.
unschedulable() {
  local reason node
  reason="$(k get pod -n e2e "$1" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}')"
  node="$(k get pod -n e2e "$1" -o jsonpath='{.spec.nodeName}')"
  [[ "$reason" == Unschedulable ]] || { echo "$1 not marked Unschedulable yet (${reason:-no reason})"; return 1; }
  [[ -z "$node" ]] || { echo "$1 was placed on $node"; return 1; }
}

# Unschedulable, and the scheduler's message is about claims (DRA's "cannot allocate all claims").
unschedulable_with_reason() {
  local reason message
  reason="$(k get pod -n e2e "$1" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}')"
  message="$(k get pod -n e2e "$1" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}')"
  echo "$reason: $message"
  [[ "$reason" == Unschedulable && "$message" == *claim* ]]
}

# check_pod_saw without the NeuronLink check (devices the claim did not ask to be connected).
saw_any() { E2E_ANY_DEVICES=1 check_pod_saw "$@"; }

# claim_devices POD: the devices allocated to the pod's (first) claim, space-separated.
claim_devices() {
  local claim
  claim="$(k get pod -n e2e "$1" -o jsonpath='{.status.resourceClaimStatuses[0].resourceClaimName}')"
  [[ -n "$claim" ]] || return 0
  k get resourceclaim -n e2e "$claim" -o jsonpath='{.status.allocation.devices.results[*].device}'
}

# ultraserver_environment POD NODE: the pod reported the UltraServer variables of a pair (mode 2
# of a 4-node election: X2V, 3) with the server and node ids NODE's labels publish.
ultraserver_environment() {
  local report labels
  report="$(pod_report "$1" | grep '^NEURON_RT_ULTRASERVER_')"
  labels="$(k get node "$2" -o json | python3 -c '
import json, sys
l = json.load(sys.stdin)["metadata"]["labels"]
p = "neuron.amazonaws.com/ultraserver-"
print("NEURON_RT_ULTRASERVER_MODE=3 NEURON_RT_ULTRASERVER_NODE_ID=%s NEURON_RT_ULTRASERVER_SERVER_ID=%s"
      % (l.get(p + "node-id-2"), l.get(p + "server-id-2")))')"
  echo "container: $(echo $report)"
  echo "labels:    $labels"
  [[ "$(echo $report)" == "$labels" ]]
}

phase_is() { [[ "$(pod_phase "$1")" == "$2" ]] || { echo "phase $(pod_phase "$1"), want $2"; return 1; }; }

# The simulated node's uncorrected-ECC counter of chip N: writing it injects (or clears) a fault.
ecc_counter() {
  echo "$SIMULATED_NODE_DIR/sys/devices/virtual/neuron_device/neuron$1/stats/hardware/mem_ecc_uncorrected"
}

# apply_chip_nine_template [NAME CLASS]: ResourceClaimTemplate NAME (chip-nine) in namespace
# e2e: one device of CLASS (chip.neuron.aws.com), and it must be chip 9 or one of its cores.
apply_chip_nine_template() {
  k apply -n e2e -f - > /dev/null <<YAML
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: ${1:-chip-nine}
spec:
  spec:
    devices:
      requests:
        - name: neurons
          exactly:
            deviceClassName: ${2:-chip.neuron.aws.com}
            selectors:
              - cel:
                  expression: device.attributes["neuron.aws.com"].deviceId == 9
YAML
}

# The end of every DRA e2e: helm uninstall must take the node's pool with it (fake nodes' pools,
# which no driver of ours publishes, stay); then the tally (the script's exit status).
uninstall_and_report() {
  echo "== uninstall removes the pool"
  k delete pods -n e2e --all --wait=true > /dev/null
  "$REPO/build/tools/helm" --kubeconfig "$KUBECONFIG" uninstall torus -n kube-system --wait \
    > /dev/null
  no_slices() {
    local left
    left="$(k get resourceslices -o name --field-selector "spec.nodeName=$NODE_NAME" | wc -l)"
    [[ "$left" == 0 ]] || { echo "$left ResourceSlices left"; return 1; }
  }
  check "helm uninstall: the node's ResourceSlices are gone" eventually 180 no_slices
  echo
  echo "$PASSED passed, $FAILED failed ($((SECONDS - started)) s)"
  ((FAILED == 0))
}

# The checks both DRA tests make of features on by default from 1.34 (their sections, as
# functions: dra_test.sh on the newest Kubernetes, dra_134_test.sh on 1.34).

# Prioritized lists (firstAvailable): kubelet's answer under the bare request name, and each
# container's NEURON_RT_VISIBLE_CORES naming the cores of exactly the devices it gets.
prioritized_list_checks() {
echo "== a prioritized list: each container gets the chip of the request it names, and its cores"
# The first subrequest (chip 99, which no node has) cannot be met, so "first" is allocated as
# "first/one" (not 17 chips of 16: 1.34's allocator searched that until it timed out). Kubelet
# gives a container the devices whose request names include the request it names: the driver
# must answer "first", not "first/one", or container a starts with no /dev/neuron at all. Each
# device's CDI edit names the cores of what the containers given it get (the runtime keeps the
# last edit's value): a and b see their own chip's cores, a container naming the claim both
# chips', and containers that overlap (one request, and the whole claim) are refused by name.
pinned <<'YAML' | k apply -n e2e -f - > /dev/null
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: listed}
spec:
  spec:
    devices:
      requests:
        - name: first
          firstAvailable:
            - name: ninety-nine
              deviceClassName: chip.neuron.aws.com
              selectors: [{cel: {expression: 'device.attributes["neuron.aws.com"].deviceId == 99'}}]
            - {name: one, deviceClassName: chip.neuron.aws.com}
        - name: second
          exactly: {deviceClassName: chip.neuron.aws.com}
YAML
# listed_pod NAME CONTAINER[:REQUEST]...: a pod of the listed template whose containers report
# what they got; a container without a request names the whole claim.
listed_pod() {
  local name="$1" spec request
  shift
  {
    cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $name}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
YAML
    for spec in "$@"; do
      request=""
      [[ "$spec" == *:* ]] && request=", request: ${spec#*:}"
      cat <<YAML
    - name: ${spec%%:*}
      image: public.ecr.aws/docker/library/debian:bookworm-slim
      command: [sh, -c, 'echo "DEVICES=\$(cd /dev && ls -d neuron[0-9]* 2> /dev/null | tr "\\n" " ")"; echo "CORES=\$NEURON_RT_VISIBLE_CORES"']
      resources: {claims: [{name: neurons$request}]}
YAML
    done
    cat <<YAML
  resourceClaims:
    - {name: neurons, resourceClaimTemplateName: listed}
YAML
  } | pinned | k apply -n e2e -f - > /dev/null
}
listed_pod dra-listed a:first b:second
listed_pod dra-listed-whole c
listed_pod dra-listed-overlap a:first c
check "a pod with a firstAvailable request and two containers succeeds" eventually 120 pod_succeeded dra-listed
check "a pod naming that claim whole succeeds" eventually 120 pod_succeeded dra-listed-whole
container_saw() { k logs -n e2e "$1" -c "$2" | sed -n "s/^$3=//p" | xargs; }
# core_ids TEXT: the ids NEURON_RT_VISIBLE_CORES names ("16-19" or "16,17,18,19,40"), one line.
core_ids() {
  python3 -c '
import sys
ids = []
for part in filter(None, sys.argv[1].split(",")):
    low, _, high = part.partition("-")
    ids += range(int(low), int(high or low) + 1)
print(*sorted(ids))' "$1"
}
# chip_core_ids neuronA [neuronB ...]: the ids of those chips' cores at LNC 2, one line.
chip_core_ids() {
  python3 -c '
import sys
print(*sorted(4 * int(n[len("neuron"):]) + k for n in sys.argv[1:] for k in range(4)))' "$@"
}
# saw_own_cores POD CONTAINER CHIPS: the container got CHIPS' device nodes and only their cores.
saw_own_cores() {
  local devices cores
  devices="$(container_saw "$1" "$2" DEVICES)" cores="$(container_saw "$1" "$2" CORES)"
  echo "$1/$2: devices ${devices:-none}, cores ${cores:-none}"
  [[ "$(printf '%s\n' $devices | sort -V | xargs)" == "$3" ]] || return 1
  [[ "$(core_ids "$cores")" == "$(chip_core_ids $3)" ]]
}
each_saw_their_own() {
  local a b
  a="$(container_saw dra-listed a DEVICES)" b="$(container_saw dra-listed b DEVICES)"
  [[ "$a" =~ ^neuron[0-9]+$ && "$b" =~ ^neuron[0-9]+$ && "$a" != "$b" ]] ||
    { echo "a: ${a:-no device}, b: ${b:-no device}"; return 1; }
  saw_own_cores dra-listed a "$a" && saw_own_cores dra-listed b "$b"
}
check "a and b each saw their own request's chip and only its cores" each_saw_their_own
whole_saw_both() {
  local devices
  devices="$(container_saw dra-listed-whole c DEVICES)"
  [[ "$(wc -w <<< "$devices")" == 2 ]] || { echo "devices: ${devices:-none}"; return 1; }
  saw_own_cores dra-listed-whole c "$(printf '%s\n' $devices | sort -V | xargs)"
}
check "the container naming the claim saw both chips and both chips' cores" whole_saw_both
overlap_event() {
  k get events -n e2e --field-selector "involvedObject.name=dra-listed-overlap" -o jsonpath='{.items[*].message}' |
    grep -o 'containers dra-listed-overlap/a (requests first) and dra-listed-overlap/c (the whole claim) both get device' |
    head -n 1 | grep .
}
check "containers seeing overlapping parts of a claim: refused, the event names both" \
  eventually 90 overlap_event
check "... and the pod does not start" phase_is dra-listed-overlap Pending
k delete pod -n e2e dra-listed dra-listed-whole dra-listed-overlap --wait=false > /dev/null
}

# Admin access: a monitor's claim beside a workload's on the same chip, owning nothing.
admin_access_checks() {
echo "== admin access: a monitor sees every chip beside the workloads, owning none"
# adminAccess needs a namespace labelled for it. The monitor's claim takes all 16 chips first:
# kube-scheduler checks a chip's counters even for an admin-access request, so with core devices
# on it cannot give a monitor a chip a workload already holds (docs/dra.md). A workload then gets
# one of the monitor's chips, and the monitor going away resets nothing under it.
pinned <<'YAML' | k apply -f - > /dev/null
apiVersion: v1
kind: Namespace
metadata:
  name: e2e-admin
  labels: {resource.kubernetes.io/admin-access: "true"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: monitor-all, namespace: e2e-admin}
spec:
  devices:
    requests:
      - name: chips
        exactly: {deviceClassName: chip.neuron.aws.com, allocationMode: All, adminAccess: true}
---
apiVersion: v1
kind: Pod
metadata: {name: monitor, namespace: e2e-admin}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
    - name: monitor
      image: public.ecr.aws/docker/library/debian:bookworm-slim
      command: [sh, -c, 'echo "DEVICES=$(cd /dev && ls -d neuron[0-9]* | tr "\n" " ")"; sleep 600']
      resources: {claims: [{name: chips}]}
  resourceClaims:
    - {name: chips, resourceClaimName: monitor-all}
YAML
monitor_running() {
  [[ "$(k get pod -n e2e-admin monitor -o jsonpath='{.status.phase}')" == Running ]] || {
    k get pod -n e2e-admin monitor -o jsonpath='{.status.conditions[*].message}'; echo; return 1; }
}
check "an admin-access monitor of all 16 chips runs" eventually 120 monitor_running
monitor_saw_sixteen() {
  local seen
  seen="$(k logs -n e2e-admin monitor | sed -n 's/^DEVICES=//p' | wc -w)"
  [[ "$seen" == 16 ]] || { echo "the monitor saw $seen device nodes"; return 1; }
}
check "... and sees all 16 chips" eventually 15 monitor_saw_sixteen
monitor_owns_nothing() {
  allocations | python3 -c '
import json, sys
claims = {c["claim"]: c for c in json.load(sys.stdin)["claims"]}
monitor = claims.get("e2e-admin/monitor-all")
assert monitor, "no prepared claim e2e-admin/monitor-all: %s" % sorted(claims)
print("monitor: %d devices, owns chips %s" % (len(monitor["deviceNames"]), monitor["devices"]))
assert len(monitor["deviceNames"]) == 16 and monitor["devices"] == [] and monitor["cores"] == []'
}
check "the agent counts the monitor's claim as owning no chip" monitor_owns_nothing
dra_pod dra-work one-chip 600
check "a workload on one of the monitor's chips runs (prepared beside it)" eventually 120 phase_is dra-work Running
k delete pod -n e2e-admin monitor --wait=true > /dev/null
check "the workload still runs after the monitor is gone" phase_is dra-work Running
workload_still_prepared() {
  allocations | python3 -c '
import json, sys
claims = json.load(sys.stdin)["claims"]
assert len(claims) == 1 and len(claims[0]["devices"]) == 1, claims'
}
check "... its claim alone is prepared, its chip still its own" eventually 30 workload_still_prepared
k delete namespace e2e-admin --wait=false > /dev/null
k delete pod -n e2e dra-work --wait=true > /dev/null
check "every claim is unprepared afterwards" eventually 60 claims_prepared 0
}
