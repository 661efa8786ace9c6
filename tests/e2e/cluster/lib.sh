# Helpers of every real-cluster end-to-end suite (sourced by each *_test.sh here):
# the cluster's setup and teardown, checks with deadlines, pods built from one template, and what
# a pod's container saw.

PASSED=0
FAILED=0
FAILURES=()
FAILURE_TAILS=()

# cluster_test_setup PREFIX [--keep]: a fresh state directory for scripts/local-cluster.sh and,
# on exit, the component logs when anything failed, then the cluster stopped (unless --keep).
cluster_test_setup() {
  keep=0
  [[ "${2:-}" == --keep ]] && keep=1
  STATE_DIR="$(mktemp -d "/tmp/$1-XXXXXX")"
  trap finish EXIT
}

cluster() { "$REPO/scripts/local-cluster.sh" "$@" --state-dir="$STATE_DIR"; }

# cluster_up_for_test TITLE UP_ARGUMENT...: the suite's cluster (scripts/local-cluster.sh up with
# those arguments), what it wrote loaded (cluster.env: the kubeconfig, the checked node's name,
# address, ports and simulated tree) and the namespace e2e the checks use. Sets `started` and
# the arrays `names` and `ips` (every node, in the order given).
cluster_up_for_test() {
  local title="$1"
  shift
  started=$SECONDS
  echo "== $title (state: $STATE_DIR)"
  cluster up "$@"
  source "$STATE_DIR/cluster.env"
  export KUBECONFIG KUBECTL NODE_NAME NODE_IP SIMULATED_NODE_DIR AGENT_METRICS_PORT EXTENDER_PORT \
    EXTENDER_HOST
  read -r -a names <<< "$NODE_NAMES"
  read -r -a ips <<< "$NODE_IPS"
  echo "cluster with Torus up in $((SECONDS - started)) s"
  k create namespace e2e > /dev/null
}

# driver_function_of N: the PCI function the checked node's simulated driver numbered neuronN,
# from its load line ("** BDF: bb:ss.f => nd[N] (routing id: R)", kept beside its tree) and the
# functions bound to it (which carry the node's PCI domain).
driver_function_of() {
  local bus_slot_function
  bus_slot_function="$(grep -o "BDF: [0-9a-f:.]* => nd\[$1\] " "$SIMULATED_NODE_DIR/driver-load.kmsg" |
    cut -d' ' -f2)"
  [[ -n "$bus_slot_function" ]] || { echo "no load line for neuron$1" >&2; return 1; }
  ls "$SIMULATED_NODE_DIR/sys/bus/pci/drivers/neuron-driver" | grep -x "[0-9a-f]*:$bus_slot_function"
}

# Pod logs are read from each node's /var/log/pods (kubelet's files), which keep the containers
# that already exited too.
print_logs() {
  echo "--- component logs (last lines) ---"
  local log
  for log in "$STATE_DIR"/logs/*.log; do
    [[ "$log" == */audit.log ]] && continue
    echo "=== $log"
    tail -n 25 "$log"
  done
  k get pods -A -o wide 2> /dev/null || true
  local pod
  for pod in $(k get pods -n kube-system -o name 2> /dev/null); do
    echo "=== logs of $pod"
    tail -n 40 "$STATE_DIR"/nodes/*/pod-logs/kube-system_"${pod#pod/}"_*/*/*.log 2> /dev/null || true
  done
}

# The failed checks again, after the long logs: what a reader of the output's end sees first.
print_failures() {
  ((FAILED > 0)) || return 0
  echo "--- $FAILED failed checks (the end of each one's output) ---"
  local i
  for i in "${!FAILURES[@]}"; do
    printf 'FAIL  %s\n%s\n' "${FAILURES[$i]}" "${FAILURE_TAILS[$i]}"
  done
}

finish() {
  local status=$?
  # A log that cannot be printed must not stop the teardown: without this, errexit ended the
  # trap at the first failing command of print_logs and left the cluster running.
  set +e
  if ((FAILED > 0 || status != 0)); then
    print_logs
    print_failures
  fi
  if ((keep)); then
    echo "cluster left running: export KUBECONFIG=$KUBECONFIG; scripts/local-cluster.sh down --state-dir=$STATE_DIR"
  else
    cluster down > /dev/null 2>&1 || true
  fi
}

# check NAME COMMAND...: one named check; a failure is counted and the run goes on.
check() {
  local name="$1"
  shift
  local output
  if output="$("$@" 2>&1)"; then
    PASSED=$((PASSED + 1))
    printf 'PASS  %s\n' "$name"
  else
    FAILED=$((FAILED + 1))
    FAILURES+=("$name")
    FAILURE_TAILS+=("$(printf '%s\n' "$output" | tail -n 12 | sed 's/^/      /')")
    printf 'FAIL  %s\n%s\n' "$name" "$(printf '%s\n' "$output" | tail -n 40 | sed 's/^/      /')"
  fi
}

# eventually SECONDS COMMAND...: COMMAND succeeds within SECONDS (its last output otherwise).
eventually() {
  local seconds="$1"
  shift
  local deadline=$((SECONDS + seconds)) output
  while true; do
    if output="$("$@" 2>&1)"; then return 0; fi
    if ((SECONDS >= deadline)); then
      printf 'not true after %ss: %s\n%s\n' "$seconds" "$*" "$output"
      return 1
    fi
    sleep 1
  done
}

# holds SECONDS COMMAND...: COMMAND succeeds at every check (once a second) for SECONDS, for a
# check that nothing happened; each caller says why SECONDS is long enough to have seen it.
holds() {
  local seconds="$1"
  shift
  local deadline=$((SECONDS + seconds)) output
  while ((SECONDS < deadline)); do
    if ! output="$("$@" 2>&1)"; then
      printf 'stopped holding within %ss: %s\n%s\n' "$seconds" "$*" "$output"
      return 1
    fi
    sleep 1
  done
}

k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }

# neuron_device_probe: a shell script (for sh in any container) that prints DEVICES= (its
# /dev/neuronN) and its own test of the device rules. For minors 0-31 of the Neuron devices' major
# (read from a node it was given) it makes a node with mknod (CAP_MKNOD is in every container's
# default set) and opens it: "No such device" means the rules let it through to a driver that is
# not there (the simulated devices have none), "Operation not permitted" that they refused it.
# ALLOWED= and DENIED= list the minors; checks/pods.py wants ALLOWED to be exactly the devices.
neuron_device_probe() {
  cat <<'SH'
echo "DEVICES=$(cd /dev && ls -d neuron[0-9]* 2> /dev/null | tr '\n' ' ')"
major=""
for node in /dev/neuron[0-9]*; do
  if [ -c "$node" ]; then major="$(stat -c %t "$node")"; break; fi
done
allowed=""; denied=""; unexpected=""
if [ -n "$major" ]; then
  for minor in $(seq 0 31); do
    if ! mknod /tmp/neuron-probe c "0x$major" "$minor" 2> /dev/null; then
      unexpected="mknod refused"; break
    fi
    if answer="$( (exec 3< /tmp/neuron-probe) 2>&1)"; then
      allowed="$allowed $minor"
    else
      case "$answer" in
        *"No such device"*) allowed="$allowed $minor" ;;
        *"not permitted"*) denied="$denied $minor" ;;
        *) unexpected="$unexpected $minor: $answer" ;;
      esac
    fi
    rm -f /tmp/neuron-probe
  done
fi
echo "ALLOWED=${allowed# }"
echo "DENIED=${denied# }"
[ -z "$unexpected" ] || echo "PROBE_UNEXPECTED=${unexpected# }"
SH
}

# device_rules_in NAMESPACE POD: runs neuron_device_probe in the running pod's first container
# and checks that its device rules open exactly its /dev/neuronN and refuse every other minor.
device_rules_in() {
  local report
  report="$(k exec -n "$1" "$2" -- sh -c "$(neuron_device_probe)")" || return 1
  echo "$report"
  checks_py device-rules <<< "$report"
}

# neuron_report_command SECONDS: the YAML `command` of an e2e pod's container (indented for a
# container) that reports what it was given in its termination message, then stays SECONDS:
# CORES=, LNC=, the UltraServer variables when it has them, and neuron_device_probe's DEVICES=,
# ALLOWED= and DENIED=.
neuron_report_command() {
  {
    echo '{'
    echo '  echo "CORES=$NEURON_RT_VISIBLE_CORES"'
    echo '  echo "LNC=$NEURON_LOGICAL_NC_CONFIG"'
    echo "  env | grep '^NEURON_RT_ULTRASERVER_' | sort"
    neuron_device_probe | sed 's/^/  /'
    echo '} | tee /dev/termination-log'
  } | sed 's/^/          /'
  echo "          sleep $1"
}

# pod_manifest NAME RESOURCE COUNT [SCHEDULER [SECONDS [PRIORITY_CLASS]]]: a pod that reports what
# Neuron gave it, stays SECONDS (default 0) and exits; on PIN_NODE when that is set.
# It reports in its termination message, which the API keeps with the pod's status (its logs go
# with the node's /var/log/pods).
pod_manifest() {
  local name="$1" resource="$2" count="$3" scheduler="${4:-default-scheduler}" stay="${5:-0}"
  local priority_class="${6:+priorityClassName: $6}" pin=""
  [[ -z "${PIN_NODE:-}" ]] || pin="nodeSelector: {kubernetes.io/hostname: $PIN_NODE}"
  cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $name
  namespace: e2e
  labels: {e2e: neuron}
spec:
  schedulerName: $scheduler
  $priority_class
  $pin
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
        limits:
          aws.amazon.com/$resource: $count
YAML
}

pod_report() {
  k get pod -n e2e "$1" -o jsonpath='{.status.containerStatuses[0].state.terminated.message}'
}

pod_phase() { k get pod -n e2e "$1" -o jsonpath='{.status.phase}'; }

pod_succeeded() {
  local phase
  phase="$(pod_phase "$1")"
  [[ "$phase" == Succeeded ]] || {
    echo "phase: ${phase:-none} $(k get pod -n e2e "$1" -o jsonpath='{.status.reason}: {.status.message}')"
    k describe pod -n e2e "$1" | sed -n '/^Events:/,$p' | tail -n 8
    return 1
  }
}

# The named JSON, metrics and log checks of every suite (checks/, run by e2e_checks.py; their
# own tests run in CTest).
checks_py() { python3 "$REPO/tests/e2e/cluster/e2e_checks.py" "$@"; }

# expand_ids "0-3,8": one id per line.
expand_ids() { checks_py expand-ids "$1"; }

# check_pod_saw NAME RESOURCE COUNT: the container's env and device nodes match what was asked:
# COUNT cores or devices, every /dev/neuronN of those cores and no other, and devices that the
# driver's connected_devices (the simulated sysfs) says are NeuronLink-connected (unless
# E2E_ANY_DEVICES=1: a request that asked for no connectivity).
check_pod_saw() {
  local name="$1" resource="$2" count="$3" report
  report="$STATE_DIR/report-$name.txt"
  pod_report "$name" > "$report" || return 1
  cat "$report"
  checks_py pod-saw "$report" "$resource" "$count" "$CORES_PER_DEVICE" "$SIMULATED_NODE_DIR" \
    "$EXPECTED_LNC"
}

annotation_of() {
  k get pod -n e2e "$1" -o "jsonpath={.metadata.annotations.$2}"
}

# The container's cores are the ids the extender wrote on the pod (the hand-off).
check_handoff_honoured() {
  local name="$1" annotated seen
  annotated="$(annotation_of "$name" AWS_NEURON_IDS)"
  seen="$(pod_report "$name" | sed -n 's/^CORES=//p')"
  [[ -n "$annotated" ]] || { echo "no AWS_NEURON_IDS on $name"; return 1; }
  if [[ "$(annotation_of "$name" NEURON_RESOURCE_TYPE)" == aws.amazon.com/neuron ]]; then
    # Device ids on the pod; the container sees their cores.
    local cores=()
    local device
    for device in $(expand_ids "$annotated"); do
      cores+=("$(seq -s, $((device * CORES_PER_DEVICE)) $(((device + 1) * CORES_PER_DEVICE - 1)))")
    done
    annotated="$(IFS=,; echo "${cores[*]}")"
  fi
  [[ "$(expand_ids "$annotated" | sort -n)" == "$(expand_ids "$seen" | sort -n)" ]] ||
    { echo "annotated $annotated, container saw $seen"; return 1; }
}

pod_running() { [[ "$(pod_phase "$1")" == Running ]]; }

# cores_held_by POD: the cores kubelet gave the pod's containers, as the agent reports them
# (from kubelet's pod-resources), one per line.
cores_held_by() {
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/allocations" | checks_py cores-held-by "e2e/$1"
}

# klog_seconds LINE: the time of day of a klog line ("I1124 05:01:42.123456 ..."), in seconds.
klog_seconds() {
  awk '{split($2, t, ":"); printf "%.6f\n", t[1] * 3600 + t[2] * 60 + t[3]}' <<< "$1"
}

# ids_of POD: the pod's AWS_NEURON_IDS, one id per line (empty when it has none or is gone).
ids_of() {
  local ids
  ids="$(k get pod -n e2e "$1" -o 'jsonpath={.metadata.annotations.AWS_NEURON_IDS}' 2> /dev/null)"
  [[ -z "$ids" ]] || expand_ids "$ids"
}

# pod_on_device DEVICE: the running e2e pod whose AWS_NEURON_IDS start at DEVICE's first core.
pod_on_device() {
  k get pods -n e2e -o json | checks_py pod-on-device "$1" "$CORES_PER_DEVICE"
}
