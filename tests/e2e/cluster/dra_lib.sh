# Helpers of the DRA end-to-end suites (dra_test.sh on the default Kubernetes, dra_134_test.sh on
# 1.34, ultraserver_test.sh): the agent, its metrics, the pool as the API holds it, claim
# templates, claim pods and their examples. Sourced after lib.sh, with cluster.env loaded.

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

# claims_prepared COUNT [CHIPS_EACH]: the agent has COUNT prepared claims (each owning CHIPS_EACH
# chips).
claims_prepared() { allocations | checks_py prepared-claims-are "$@"; }

metric() {
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" |
    awk -v series="$1" '$1 == series { print $2; found = 1 } END { if (!found) print 0 }'
}

# The pool of NODE_NAME as the API holds it: one JSON object per device, by name.
pool_devices() { k get resourceslices -o json | checks_py pool-devices "$NODE_NAME"; }

# claim_template NAME CLASS [CEL [TOLERATED_TAINT [EFFECT]]]: ResourceClaimTemplate NAME in
# namespace e2e whose request "neurons" asks for one device of CLASS, the one CEL selects when
# given, tolerating the taint TOLERATED_TAINT of EFFECT (NoSchedule unless given) when given;
# TOLERATED_TAINT "*" tolerates every taint (operator Exists, no key, no effect).
# Written as AS_USER (kubectl --as) when that is set.
claim_template() {
  local selectors="" tolerations=""
  [[ -z "${3:-}" ]] || selectors="
            selectors: [{cel: {expression: '$3'}}]"
  [[ -z "${4:-}" ]] || tolerations="
            tolerations: [{key: $4, operator: Exists, effect: ${5:-NoSchedule}}]"
  [[ "${4:-}" != "*" ]] || tolerations="
            tolerations: [{operator: Exists}]"
  k ${AS_USER:+--as="$AS_USER"} apply -n e2e -f - > /dev/null <<YAML
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: $1}
spec:
  spec:
    devices:
      requests:
        - name: neurons
          exactly:
            deviceClassName: $2$selectors$tolerations
YAML
}
# A CEL selector of the chip (or of a core of the chip) whose device id is N.
chip_id_is() { echo "device.attributes[\"neuron.aws.com\"].deviceId == $1"; }

# dra_pod NAME TEMPLATE [STAY]: a pod on NODE_NAME with one claim from TEMPLATE that reports
# what it got (lib.sh's neuron_report_command: cores, LNC, device nodes, the UltraServer variables
# when it has them, and what its device rules let it open).
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
      command:
        - sh
        - -c
        - |
$(neuron_report_command "$stay")
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

# ultraserver_environment POD NODE [SIZE]: the pod reported the UltraServer variables of a
# SIZE-node partition (default 2, a pair: mode X2V, 3) with the server and node ids NODE's labels
# publish for that size.
ultraserver_environment() {
  local report="$STATE_DIR/report-$1.txt"
  k logs -n e2e "$1" > "$report"
  k get node "$2" -o json | checks_py ultraserver-environment "$report" "${3:-2}"
}

phase_is() { [[ "$(pod_phase "$1")" == "$2" ]] || { echo "phase $(pod_phase "$1"), want $2"; return 1; }; }

# The simulated node's uncorrected-ECC counter of chip N: writing it injects (or clears) a fault.
ecc_counter() {
  echo "$SIMULATED_NODE_DIR/sys/devices/virtual/neuron_device/neuron$1/stats/hardware/mem_ecc_uncorrected"
}

# evicted_by_device_taint POD: kube-controller-manager's device taint eviction marked the pod and
# deletes it (or did); its event stays.
evicted_by_device_taint() {
  local reasons
  reasons="$(k get events -n e2e --field-selector "involvedObject.name=$1" -o jsonpath='{.items[*].reason}')"
  grep -qw DeviceTaintManagerEviction <<< "$reasons" ||
    { echo "no DeviceTaintManagerEviction event for $1 yet (events: $reasons)"; return 1; }
  [[ -z "$(k get pod -n e2e "$1" -o name 2> /dev/null)" ]] ||
    [[ -n "$(k get pod -n e2e "$1" -o jsonpath='{.metadata.deletionTimestamp}')" ]] ||
    { echo "$1 is not being deleted"; return 1; }
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
