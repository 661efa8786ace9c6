#!/usr/bin/env bash
# Scheduling throughput on the real local cluster: the chart's neuron-scheduler with Torus's
# extender next to kube-scheduler counting extended resources only, in one run, on kwok nodes
# that carry what the node agent publishes.
#
#   tests/bench/scheduling_throughput.sh [NODES] [PODS]    (defaults: 1000 trn2 + 200 inf2, 2000)
#   RUNS=extender,dra ...        only these runs, in the usual order (default: all of them):
#                                counting, extender (mixed sizes); counting4, extender4, dra,
#                                dra-whole (4 connected chips; dra on slices with core partitions,
#                                dra-whole on slices with whole chips only); counting16, gang
#                                (whole trn2 nodes; gang: jobs of 4 such pods, torus.dev/gang).
#                                Ratios print when both their runs ran.
#   PROFILE_DIR=DIR ...          a 20 s CPU profile of each run's scheduler, from 3 s after it
#                                resumed, as DIR/RUN.pprof (go tool pprof -top DIR/RUN.pprof)
#   CONTROL_PLANE_QPS=150:300 ...  the control plane's client limits as docs/install.md recommends
#                                for DRA (local-cluster.sh --control-plane-qps); default: each
#                                component's own
#   SCHEDULER_GATES=G=true,...   feature gates for kube-scheduler, which runs counting and DRA
#                                (local-cluster.sh --scheduler-feature-gates)
#   NODE_MONITOR_GRACE=2m ...    the controller manager's node-monitor grace period (default 2m)
#   FAKE_NODE_LEASE_SECONDS=240 ...  the fake nodes' Lease duration (default 240: renewed each minute)
#   SAME_CPU_WEIGHT=0 ...        leave neuron-scheduler and the extender in their pods' CPU cgroups
#                                (default 1: moved into kube-scheduler's, see below)
#   (DRA_ONLY=1, with DRA_CORE_DEVICES=false or not, is RUNS=dra-whole or RUNS=dra.)
#
# NODES is local-cluster.sh's --fake-nodes form (trn2.48xlarge:1000,inf2.48xlarge:200). For each
# scheduler, the pods (mixed sizes: 1, 2, 4, 8, 16 cores and 1, 4 devices) are created while that
# scheduler is paused (SIGSTOP), so creating them is not measured; it is then resumed, and pods/s
# is the pod count over the span from the first to the last PodScheduled transition (1 s
# resolution). Beside it, p50 and p99 of the seconds from each pod's creation (or the scheduler's
# resume, for the pods created while it was paused) to its Ready transition: what a team that
# submits the whole batch at once waits for its pods to run; a run in which a bound pod never runs
# fails. Every extender placement is checked: the ids on the pod (AWS_NEURON_IDS) are as many as
# asked, on devices the node's torus.dev/topology says are NeuronLink-connected.
#
# The whole-node runs place pods of aws.amazon.com/neuron: 16 on trn2 nodes: counted one by one
# by kube-scheduler, and through the extender as multi-node jobs, gangs of 4 pods placed all or
# none. They place at most three quarters of the trn2 nodes (PODS or fewer, whole gangs), so the
# last gangs still choose among free nodes. Every gang must be placed whole, each pod on a node
# of its own.
#
# Then the DRA path against the same two on equal pods: every pod asks for 4 connected chips of a
# trn2 node, as `aws.amazon.com/neuron: 4` through kube-scheduler's counting and through the
# extender, and as a ResourceClaim (chip.neuron.aws.com, matchAttribute devicegroup4_id) through
# kube-scheduler's DRA allocator, on the same kwok nodes, which also carry the ResourceSlices the
# driver publishes for their type (`neuron-ls --resource-slices`, the driver's own code). Every
# DRA allocation is checked the same way: 4 chips of the pod's node, NeuronLink-connected. The
# DRA pods' claims (made from the template by the controller manager) exist before the scheduler
# resumes, as the pods themselves do: creating either is not measured.
# For every run it also prints each component's CPU seconds while the pods were being
# scheduled (API server, etcd, controller manager, both schedulers, the extender, kwok): on a
# small host they share the CPUs, and the DRA path costs some of them work the others do not.
# For every run it prints where the API server held requests: the mean time each API Priority and
# Fairness level kept requests queued, and the requests it served (each verb and resource served
# 100 times or more: the pods' own traffic, not the background) with its mean time for each.
# For every run it prints the scheduler's attempts by result (an unschedulable attempt searched
# every node, wrote the pod's status and put it in backoff, so attempts beyond one per pod are a
# cost of their own) and the mean wall time per scheduled pod of its scheduling algorithm (one
# pod at a time, so it bounds the rate), with the extension points kube-scheduler times (the rest
# is Filter and the extender's calls), and of the whole attempt to its bind (the binding runs
# beside the next pods). And how many pods it placed on a hint of its opportunistic
# batching (an alike pod right after another is tried on the previous pod's next-best node alone,
# instead of a search of every node). Upstream turns batching off for profiles with extenders;
# with kube-scheduler's default configuration it does not happen on counting either (0 of 2,000):
# the system's default topology spread makes every pod unsignable, so no two pods count as alike.
# The count shows whether a configuration changes that, which would make the comparison unequal.
# The fake nodes renew their Leases every minute, not every 10 s as kubelets do, and the controller
# manager waits 2 minutes before it marks a node NotReady: 1,200 nodes renewing every 10 s make
# 120 Lease writes a second, which on 2 CPUs shared with the whole control plane slowed the API
# server's Bindings to seconds, where a production control plane has CPUs of its own for them.
# Both schedulers get the same CPU weight. On this one-host cluster kube-scheduler (and the rest
# of the control plane) runs as host processes, each thread weighing as much in the kernel's CPU
# scheduler as the node's whole cgroup, in which neuron-scheduler and the extender run as pods: on
# 2 saturated CPUs the pair got a fraction of what kube-scheduler got (4 chips at 1,200 nodes:
# 0.81x as deployed, 1.04x with equal weight, the same build one after the other). Production
# gives neither that handicap: kube-scheduler runs on control-plane machines, neuron-scheduler on a
# worker node. So unless SAME_CPU_WEIGHT=0, the two processes' CPU accounting (cpu and cpuacct
# cgroups only; memory limits stay their pods') moves into kube-scheduler's cgroup once the
# cluster is up, and the ratio compares the schedulers, not where they sit.
# Needs root; stops everything it started. Prints a table and the ratios, and draws them as
# $PLOT_DIR/scheduling-throughput.png, and the pods placed over time on each path as
# $PLOT_DIR/scheduling-over-time.png (default build/bench-plots; scripts/bench-venv.sh).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$REPO/tests/bench/scheduling_throughput"  # the pods it creates, the figures it prints
NODES="${1:-trn2.48xlarge:1000,inf2.48xlarge:200}"
PODS="${2:-2000}"
ALL_RUNS=counting,extender,counting4,extender4,dra,dra-whole,counting16,gang
if [[ "${DRA_ONLY:-0}" == 1 ]]; then
  RUNS="$([[ "${DRA_CORE_DEVICES:-true}" == false ]] && echo dra-whole || echo dra)"
fi
RUNS="${RUNS:-$ALL_RUNS}"
for run in ${RUNS//,/ }; do
  [[ ",$ALL_RUNS," == *",$run,"* ]] ||
    { echo "scheduling_throughput: RUNS takes some of $ALL_RUNS, not '$run'" >&2; exit 2; }
done
wants() { [[ ",$RUNS," == *",$1,"* ]]; }
# The whole-node runs' pods: three quarters of the trn2 nodes at most, in whole gangs of 4.
trn2_nodes="$(tr ',' '\n' <<< "$NODES" | awk -F: '$1 == "trn2.48xlarge" { n += $2 } END { print n + 0 }')"
WHOLE_NODE_PODS=$(((PODS < trn2_nodes * 3 / 4 ? PODS : trn2_nodes * 3 / 4) / 4 * 4))
if ((WHOLE_NODE_PODS == 0)) && { wants counting16 || wants gang; }; then
  echo "scheduling_throughput: the whole-node runs need trn2.48xlarge nodes in NODES" >&2
  exit 2
fi
STATE_DIR="$(mktemp -d /tmp/torus-bench-XXXXXX)"
cluster() { "$REPO/scripts/local-cluster.sh" "$@" --state-dir="$STATE_DIR"; }
trap 'cluster down > /dev/null 2>&1 || true; rm -f "$STATE_DIR.up.log"' EXIT

cmake --build "$REPO/build" --target neuron-ls kubectl-neuron > /dev/null
echo "== local cluster with Torus and fake nodes ($NODES; control-plane client limits: ${CONTROL_PLANE_QPS:-the defaults}; kube-scheduler gates: ${SCHEDULER_GATES:-the defaults}; node-monitor grace ${NODE_MONITOR_GRACE:-2m}, fake-node Lease ${FAKE_NODE_LEASE_SECONDS:-240} s; same CPU weight: $([[ "${SAME_CPU_WEIGHT:-1}" != 0 ]] && echo yes || echo no); runs: $RUNS)"
# dra.enabled installs the DeviceClasses; no node carries the DRA label, so no agent changes.
if ! cluster up --fake-nodes="$NODES" --set dra.enabled=true \
  ${CONTROL_PLANE_QPS:+--control-plane-qps="$CONTROL_PLANE_QPS"} \
  ${SCHEDULER_GATES:+--scheduler-feature-gates="$SCHEDULER_GATES"} \
  --node-monitor-grace-period="${NODE_MONITOR_GRACE:-2m}" \
  --fake-node-lease-seconds="${FAKE_NODE_LEASE_SECONDS:-240}" > "$STATE_DIR.up.log" 2>&1; then
  tail -n 30 "$STATE_DIR.up.log"
  exit 1
fi
grep '^\[local-cluster' "$STATE_DIR.up.log"
source "$STATE_DIR/cluster.env"
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }

# same_cpu_weight REFERENCE_PID PID...: puts each PID in REFERENCE_PID's cpu and cpuacct cgroups
# (cgroup v1 and hybrid; the one cgroup on v2), its other controllers left as they are. Fails when
# a move fails: the runs would compare the schedulers at unequal weight.
same_cpu_weight() {
  local reference="$1" pid controllers path dir moved
  shift
  for pid in "$@"; do
    moved=0
    while IFS=: read -r _ controllers path; do
      case ",$controllers," in
        *,cpu,* | *,cpuacct,*) dir="/sys/fs/cgroup/$controllers" ;;
        ,,)  # the unified hierarchy: the CPU's only where it is mounted alone (not hybrid)
          [[ "$(stat -fc %T /sys/fs/cgroup)" == cgroup2fs ]] || continue
          dir="/sys/fs/cgroup"
          ;;
        *) continue ;;
      esac
      [[ -d "$dir" ]] || dir="/sys/fs/cgroup/${controllers%%,*}"
      if ! echo "$pid" > "$dir$path/cgroup.procs"; then
        echo "scheduling_throughput: could not move '$pid' into $dir$path" >&2
        exit 1
      fi
      moved=1
    done < "/proc/$reference/cgroup"
    ((moved)) || { echo "scheduling_throughput: $reference is in no CPU cgroup" >&2; exit 1; }
  done
}
if [[ "${SAME_CPU_WEIGHT:-1}" != 0 ]]; then
  same_cpu_weight "$(cat "$STATE_DIR/pids/kube-scheduler.pid")" \
    "$(pgrep -f 'kube-scheduler --config=/etc/kubernetes/neuron-scheduler')" \
    "$(pgrep -f '^/usr/local/bin/neuron-scheduler-extender' | head -1)"
  echo "(neuron-scheduler and the extender weigh as much for the CPUs as kube-scheduler: SAME_CPU_WEIGHT=0 leaves them in their pods' cgroups)"
fi

# pods NAMESPACE SCHEDULER COUNT [KIND]: a List of pods that only fit fake nodes. KIND mixed
# (default): sizes of 1-16 cores and 1 or 4 devices; neuron4: aws.amazon.com/neuron 4 on trn2;
# dra4: a ResourceClaim from the template four-connected-chips on trn2; neuron16 and gang16: a
# whole trn2, alone or in gangs of 4.
pods() {
  python3 "$HERE/workload.py" pods "$1" "$2" "$3" "${4:-mixed}"
}

scheduler_pid() {
  case "$1" in
    default-scheduler) cat "$STATE_DIR/pids/kube-scheduler.pid" ;;
    neuron-scheduler) pgrep -f 'kube-scheduler --config=/etc/kubernetes/neuron-scheduler' ;;
  esac
}

# The controller manager makes each DRA pod's ResourceClaim from its template and records it in
# the pod's status (two API writes per pod, at its client's default 20 QPS): that is part of
# creating the pods, not of scheduling them, so the scheduler resumes only once every pod has its
# claim. How long that took is written to $STATE_DIR/claims-NAMESPACE and printed at the end.
wait_for_claims() {
  local namespace="$1" count="$2" started=$SECONDS made=0
  while ((SECONDS < started + 900)); do
    made="$(k get pods -n "$namespace" -o jsonpath='{range .items[*]}{.status.resourceClaimStatuses[0].resourceClaimName}{"\n"}{end}' | grep -c . || true)"
    ((made >= count)) && break
    sleep 2
  done
  echo "$made $((SECONDS - started))" > "$STATE_DIR/claims-$namespace"
}

# profile_scheduler SCHEDULER FILE: a 20 s CPU profile of SCHEDULER (Go's pprof format), from 3 s
# after it resumed, when PROFILE_DIR asks for one.
profile_scheduler() {
  sleep 3
  curl -sfk --max-time 40 --cert "$STATE_DIR/pki/admin.crt" --key "$STATE_DIR/pki/admin.key" \
    "https://$(scheduler_address "$1")/debug/pprof/profile?seconds=20" -o "$2" ||
    echo "no profile: $1's /debug/pprof did not answer" >&2
}

# cpu_ticks: "component ticks" for each control-plane process and the two schedulers' helpers, the
# CPU time (user + system, in clock ticks) each has used so far (/proc/PID/stat fields 14-15).
cpu_ticks() {
  local name pid
  for name in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do
    pid="$(cat "$STATE_DIR/pids/$name.pid" 2> /dev/null)" || continue
    echo "$name $(awk '{print $14 + $15}' "/proc/$pid/stat" 2> /dev/null || echo 0)"
  done
  pid="$(scheduler_pid neuron-scheduler)"
  [[ -n "$pid" ]] && echo "neuron-scheduler $(awk '{print $14 + $15}' "/proc/$pid/stat")"
  pid="$(pgrep -f '^/usr/local/bin/neuron-scheduler-extender' | head -1)"
  [[ -n "$pid" ]] && echo "extender $(awk '{print $14 + $15}' "/proc/$pid/stat")"
  return 0
}

# cpu_spent BEFORE_FILE: "component seconds" of CPU each used since BEFORE_FILE was written.
cpu_spent() {
  local hz
  hz="$(getconf CLK_TCK)"
  join <(sort "$1") <(cpu_ticks | sort) | awk -v hz="$hz" '{printf "%s %.1f\n", $1, ($3 - $2) / hz}'
}

# api_metrics: the API server's counters this benchmark reads, in Prometheus text form: how long
# API Priority and Fairness kept requests queued (per priority level), and how many requests it
# served and how long it took (per verb and resource). Fails, and with it the benchmark, when the
# API server does not answer or has none of them: its tables would be empty, not zero.
api_metrics() {
  curl -sf --cacert "$STATE_DIR/pki/ca.crt" --cert "$STATE_DIR/pki/admin.crt" \
    --key "$STATE_DIR/pki/admin.key" "https://$APISERVER_HOST:$APISERVER_PORT/metrics" |
    grep -E '^apiserver_flowcontrol_request_wait_duration_seconds_(sum|count)|^apiserver_request_duration_seconds_(sum|count)\{'
}

# api_waits BEFORE AFTER: from two api_metrics snapshots, "name requests mean_ms" lines: each
# priority level's queued requests and mean wait, and the mean time the server took per pod write.
api_waits() {
  python3 "$HERE/report.py" api-waits "$1" "$2"
}

# scheduler_address SCHEDULER: where SCHEDULER serves /metrics and /debug/pprof (neuron-scheduler
# runs in a pod on the host network of the cluster's node).
scheduler_address() {
  case "$1" in
    default-scheduler) echo "127.0.0.1:$SCHEDULER_PORT" ;;
    neuron-scheduler) echo "$NODE_IP:$NEURON_SCHEDULER_PORT" ;;
  esac
}

# scheduler_metrics SCHEDULER: SCHEDULER's /metrics, for report.py scheduler-cycle. Fails when
# they do not answer (a scheduler answers nothing while stopped): no figure is better than a
# made-up one.
scheduler_metrics() {
  curl -sfk --max-time 10 --cert "$STATE_DIR/pki/admin.crt" --key "$STATE_DIR/pki/admin.key" \
    "https://$(scheduler_address "$1")/metrics"
}

# watch_pods NAMESPACE bound|ready COUNT SECONDS: waits on one watch (not a poll, whose lists of
# every pod would take CPU from the control plane being measured) until COUNT pods of NAMESPACE
# are bound or Ready; prints how many were, and fails if SECONDS ran out first.
watch_pods() {
  python3 "$HERE/watch_pods.py" "$KUBECTL" "$KUBECONFIG" "$@"
}

# measure SCHEDULER NAMESPACE KIND COUNT RUN: prints "pods seconds pods_per_second p50 p99 ready", the
# last three the seconds from each pod's creation (or the scheduler's resume, when later) to its
# Ready transition over the `ready` pods, and writes the CPU each component used while the pods
# were being scheduled to $STATE_DIR/cpu-NAMESPACE.
measure() {
  local scheduler="$1" namespace="$2" kind="$3" count="$4" run="$5" pid
  pid="$(scheduler_pid "$scheduler")"
  [[ -n "$pid" ]] || { echo "no $scheduler process" >&2; exit 1; }
  k create namespace "$namespace" > /dev/null
  [[ "$kind" == dra4 ]] && k create -n "$namespace" -f - > /dev/null <<'YAML'
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: four-connected-chips
spec:
  spec:
    devices:
      requests:
        - name: chips
          exactly:
            deviceClassName: chip.neuron.aws.com
            count: 4
      constraints:
        - requests: [chips]
          matchAttribute: resource.aws.com/devicegroup4_id
YAML
  # Its counters so far, before it is stopped (it answers no /metrics while stopped).
  local counted=1
  scheduler_metrics "$scheduler" > "$STATE_DIR/scheduler-before-$run" || counted=0
  kill -STOP "$pid"
  pods "$namespace" "$scheduler" "$count" "$kind" | k create -f - > /dev/null
  [[ "$kind" == dra4 ]] && wait_for_claims "$namespace" "$count"
  cpu_ticks > "$STATE_DIR/cpu-before-$namespace"
  api_metrics > "$STATE_DIR/api-before-$namespace"
  local resumed
  resumed="$(date +%s.%N)"
  kill -CONT "$pid"
  if [[ -n "${PROFILE_DIR:-}" ]]; then
    mkdir -p "$PROFILE_DIR"
    profile_scheduler "$scheduler" "$PROFILE_DIR/$run.pprof" > /dev/null &
  fi
  local deadline=$((SECONDS + 900)) bound
  bound="$(watch_pods "$namespace" bound "$count" $((deadline - SECONDS)))" ||
    echo "only ${bound:-0} of $count pods bound by $scheduler" >&2
  bound="${bound:-0}"
  cpu_spent "$STATE_DIR/cpu-before-$namespace" > "$STATE_DIR/cpu-$namespace"
  # A scheduler restarted mid-run (its liveness probe while it was stopped, a crash) would make
  # the figures its successor's: the run fails instead.
  [[ "$(scheduler_pid "$scheduler")" == "$pid" ]] || echo "$scheduler" > "$STATE_DIR/restarted-$run"
  if ((counted)) && scheduler_metrics "$scheduler" > "$STATE_DIR/scheduler-after-$run"; then
    python3 "$HERE/report.py" scheduler-cycle "$STATE_DIR/scheduler-before-$run" \
      "$STATE_DIR/scheduler-after-$run" > "$STATE_DIR/cycle-$run"
  else
    echo "$run: no scheduling-cycle figures, $scheduler's /metrics did not answer" >&2
  fi
  api_metrics > "$STATE_DIR/api-after-$namespace"
  api_waits "$STATE_DIR/api-before-$namespace" "$STATE_DIR/api-after-$namespace" > "$STATE_DIR/api-$namespace"
  # Then until kwok has run them all (Ready), for the time each pod's owner waited.
  # Not every bound pod Ready by the deadline fails the run in record(), from the pods' states.
  watch_pods "$namespace" ready "$bound" $((deadline > SECONDS ? deadline - SECONDS : 1)) > /dev/null || true
  k get pods -n "$namespace" -o json > "$STATE_DIR/pods-$namespace.json"
  echo "$(python3 "$HERE/report.py" span < "$STATE_DIR/pods-$namespace.json")" \
    "$(python3 "$HERE/report.py" latency "$resumed" < "$STATE_DIR/pods-$namespace.json")"
}

# valid_share NAMESPACE [MODE]: how many placements are right: the count asked, on devices the
# node's torus.dev/topology says are NeuronLink-connected. Extender pods by their AWS_NEURON_IDS
# (with `gang`, only gangs placed whole, a node each); with `dra`, by their ResourceClaim's
# allocation (4 chips of the pod's own node).
valid_share() {
  python3 "$HERE/report.py" valid "$KUBECTL" "$KUBECONFIG" "$1" "${2:-extender}"
}

# publish_fake_slices CORE_DEVICES: the pool the driver would publish, for every fake trn2 node
# (its own code, by neuron-ls), with core partitions (true) or whole chips only (false), in place
# of any the nodes had.
publish_fake_slices() {
  local template
  k delete resourceslices --field-selector spec.driver=neuron.aws.com > /dev/null
  template="$("$REPO/build/bin/neuron-ls" --simulate=trn2.48xlarge --resource-slices=FAKE-NODE-NAME \
    --dra-core-devices="$1")"
  k get nodes -l type=kwok,node.kubernetes.io/instance-type=trn2.48xlarge \
    -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' |
    python3 "$HERE/workload.py" slices "$template" |
    k create -f - > /dev/null
  k get resourceslices --no-headers | wc -l
}

# record RUN SCHEDULER NAMESPACE KIND [extender|gang|dra]: measures one run (KIND as for pods();
# WHOLE_NODE_PODS pods for the whole-node kinds, else PODS) and keeps its pods, span and pods/s
# under RUN; with a check mode, also how many placements are valid.
declare -A run_rate=() run_pods=() run_seconds=() run_valid=() run_p50=() run_p99=()
record() {
  local run="$1" scheduler="$2" namespace="$3" kind="$4" check="${5:-}" pods span pods_per_second
  local count="$PODS" p50 p99 ready
  [[ "$kind" == *16 ]] && count="$WHOLE_NODE_PODS"
  read -r pods span pods_per_second p50 p99 ready < <(measure "$scheduler" "$namespace" "$kind" "$count" "$run")
  [[ ! -f "$STATE_DIR/restarted-$run" ]] ||
    { echo "scheduling_throughput: $scheduler restarted during run $run: no figure" >&2; exit 1; }
  # A bound pod that never ran would leave the slowest out of the percentiles: no figure then.
  ((ready >= pods)) ||
    { echo "scheduling_throughput: only $ready of $pods bound pods of run $run ran (Ready) within 900 s" >&2; exit 1; }
  run_rate[$run]="$pods_per_second" run_pods[$run]="$pods" run_seconds[$run]="$span"
  run_p50[$run]="$p50" run_p99[$run]="$p99"
  run_valid[$run]="-"
  if [[ -n "$check" ]]; then
    local valid total
    read -r valid total < <(valid_share "$namespace" "$check")
    run_valid[$run]="$valid/$total"
  fi
}
# Each run starts on empty nodes, as the runs share the fake nodes' capacity.
clear_run() { k delete namespace "$1" --wait=true --timeout=600s > /dev/null; }

# extender_metrics FILE: the extender's /metrics now, for report.py extender-time.
extender_metrics() {
  curl -sf "http://$EXTENDER_HOST:$EXTENDER_PORT/metrics" > "$1" || : > "$1"
}
# record_extender RUN NAMESPACE KIND [CHECK]: record's extender run (CHECK: extender, or gang),
# and where its time went: the extender's own time per verb, and the binds it refused (each costs
# its pod another scheduling cycle), from its /metrics before and after the run.
declare -A extender_time=()
record_extender() {
  extender_metrics "$STATE_DIR/extender-before"
  record "$1" neuron-scheduler "$2" "$3" "${4:-extender}"
  extender_metrics "$STATE_DIR/extender-after"
  extender_time[$1]=$(python3 "$HERE/report.py" extender-time "$STATE_DIR/extender-before" \
    "$STATE_DIR/extender-after")
}
if wants counting; then
  echo "== $PODS pods through kube-scheduler, counting aws.amazon.com/* only"
  record counting default-scheduler bench-default mixed
  clear_run bench-default
fi
if wants extender; then
  echo "== $PODS pods through neuron-scheduler and the Torus extender"
  record_extender extender bench-extender mixed
  clear_run bench-extender
fi
if wants counting4; then
  echo "== $PODS pods of aws.amazon.com/neuron: 4 through kube-scheduler's counting"
  record counting4 default-scheduler bench-default-4 neuron4
  clear_run bench-default-4
fi
if wants extender4; then
  echo "== $PODS pods of aws.amazon.com/neuron: 4 through neuron-scheduler and the extender"
  record_extender extender4 bench-extender-4 neuron4
  clear_run bench-extender-4
fi
if wants dra; then
  echo "== ResourceSlices with core partitions for the fake trn2 nodes: $(publish_fake_slices true)"
  echo "== $PODS pods with a claim for 4 connected chips through kube-scheduler's DRA allocator"
  record dra default-scheduler bench-dra dra4 dra
  wants dra-whole || wants counting16 || wants gang && clear_run bench-dra
fi
if wants dra-whole; then
  echo "== ResourceSlices with whole chips only for the fake trn2 nodes: $(publish_fake_slices false)"
  echo "== $PODS pods with a claim for 4 connected chips through kube-scheduler's DRA allocator"
  record dra-whole default-scheduler bench-dra-whole dra4 dra
  wants counting16 || wants gang && clear_run bench-dra-whole
fi
if wants counting16; then
  echo "== $WHOLE_NODE_PODS pods of aws.amazon.com/neuron: 16 through kube-scheduler's counting"
  record counting16 default-scheduler bench-default-16 neuron16
  wants gang && clear_run bench-default-16
fi
if wants gang; then
  echo "== $((WHOLE_NODE_PODS / 4)) gangs of 4 pods of aws.amazon.com/neuron: 16 through neuron-scheduler and the extender"
  record_extender gang bench-gang gang16 gang
fi

# ratio A B: "A / B: N.NNx" when both ran.
ratio() {
  [[ -n "${run_rate[$1]:-}" && -n "${run_rate[$2]:-}" ]] || return 0
  python3 "$HERE/report.py" ratio "$1" "$2" "${run_rate[$1]}" "${run_rate[$2]}" "${3:-}"
}
row() {  # row RUN LABEL
  [[ -n "${run_rate[$1]:-}" ]] || return 0
  printf '%-10s %-46s %6d %9.0f %8.1f %8.0f %8.0f %12s\n' "$1" "$2" "${run_pods[$1]}" \
    "${run_seconds[$1]}" "${run_rate[$1]}" "${run_p50[$1]}" "${run_p99[$1]}" "${run_valid[$1]}"
}
# P50 S, P99 S: seconds from a pod's creation (or its scheduler's resume) until it ran (Ready).
printf '\n%-10s %-46s %6s %9s %8s %8s %8s %12s\n' RUN "MIXED SIZES" PODS SECONDS PODS/S "P50 S" \
  "P99 S" VALID
row counting "kube-scheduler (extended resources counted)"
row extender "neuron-scheduler + Torus extender"
printf '%-10s %-46s\n' "" "4 CONNECTED CHIPS ON trn2"
row counting4 "kube-scheduler, aws.amazon.com/neuron: 4"
row extender4 "neuron-scheduler + extender, neuron: 4"
row dra "kube-scheduler DRA, claim, chips + partitions"
row dra-whole "kube-scheduler DRA, claim, whole chips"
printf '%-10s %-46s\n' "" "WHOLE trn2 NODES"
row counting16 "kube-scheduler, aws.amazon.com/neuron: 16"
row gang "neuron-scheduler + extender, gangs of 4"
echo
ratio extender counting "(target >= 0.8x)"
ratio extender4 counting4 "(target >= 0.9x)"
ratio gang counting16
for run in extender extender4 gang; do
  [[ -n "${extender_time[$run]:-}" ]] && echo "$run: extender time per call (mean): ${extender_time[$run]}"
done
ratio dra extender4 "(target >= 0.5x, 100 % valid)"
ratio dra-whole extender4 "(target >= 0.5x, 100 % valid)"
ratio dra counting4
ratio dra-whole counting4
for run in ${ALL_RUNS//,/ }; do
  if [[ -s "$STATE_DIR/cycle-$run" ]]; then
    echo "$run: scheduling attempts: $(< "$STATE_DIR/cycle-$run")"
  fi
done
for namespace in bench-dra bench-dra-whole; do
  [[ -f "$STATE_DIR/claims-$namespace" ]] || continue
  read -r claims_made claims_seconds < "$STATE_DIR/claims-$namespace"
  echo "($namespace: with the scheduler paused, the controller manager made $claims_made claims from the template in $claims_seconds s)"
done
echo "nodes: $NODES; Kubernetes $K8S_VERSION; $(nproc) CPUs; control-plane client limits: ${CONTROL_PLANE_QPS:-the defaults}; kube-scheduler gates: ${SCHEDULER_GATES:-the defaults}; node-monitor grace ${NODE_MONITOR_GRACE:-2m}, fake-node Lease ${FAKE_NODE_LEASE_SECONDS:-240} s; same CPU weight: $([[ "${SAME_CPU_WEIGHT:-1}" != 0 ]] && echo yes || echo no)"

# Where the host's CPU time went in each run: each component's CPU seconds from the scheduler's
# resume until the watch saw every pod bound (the run's wall time is the span above, plus up to
# 1 s of the transitions' resolution); and where the API server held requests in the same span.
python3 "$HERE/report.py" tables "$STATE_DIR"

plot_dir="${PLOT_DIR:-$REPO/build/bench-plots}"
mkdir -p "$plot_dir"
if py="$("$REPO/scripts/bench-venv.sh")"; then
  python3 "$HERE/report.py" plot-spec "$plot_dir/scheduling-throughput.png" "$NODES" "$PODS" \
    "$K8S_VERSION" "${run_rate[counting]:-nan}" "${run_rate[extender]:-nan}" \
    "${run_rate[counting4]:-nan}" "${run_rate[extender4]:-nan}" "${run_rate[dra]:-nan}" \
    "${run_rate[dra-whole]:-nan}" "${run_rate[counting16]:-nan}" "${run_rate[gang]:-nan}" |
    "$py" "$REPO/tests/bench/plot.py"
  python3 "$HERE/report.py" placed-over-time "$plot_dir/scheduling-over-time.png" "$NODES" \
    "$PODS" "$K8S_VERSION" "$STATE_DIR" | "$py" "$REPO/tests/bench/plot.py"
fi
