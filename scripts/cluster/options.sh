# The command line of scripts/local-cluster.sh, parsed in this one place (sourced by it first).
# Each option's help is the `#:` comment above its branch in parse_options: `--help` prints those
# lines (options_help), and CTest's cluster_scripts_python (local_cluster_options_test.py) checks
# that every branch has one and that every option the help names has a branch.
#
# Reads: TORUS_CACHE and K8S_VERSION (versions.sh; --k8s-version overrides the latter).
# Sets: COMMAND; TARGET, the NAME of restart, stop, start and shell; SHELL_COMMAND, shell's
# command; STATE; and the settings of `up`: NODES, LNC, SIMULATE_FAULTS, RESET_TIME,
# INSTALL_TORUS, FAKE_NODES, DRA_NODES, DRA, HELM_SETS, PLACERS, CONTROL_PLANE_QPS,
# SCHEDULER_GATES, NODE_MONITOR_GRACE, FAKE_NODE_LEASE_SECONDS.

CLUSTER_COMMANDS=(up down status image restart stop start shell)

# options_help: the `#:` lines of this file, without their marker.
options_help() { sed -n 's/^ *#: \{0,1\}//p' "${BASH_SOURCE[0]}"; }

# bad_value OPTION VALUE WHAT: OPTION's VALUE is not WHAT it takes (exit 2).
bad_value() {
  echo "local-cluster: $1 takes $3, not '$2'" >&2
  exit 2
}

# parse_options COMMAND [NAME] [OPTIONS...]: sets the globals above. COMMAND is left empty for
# none and "help" for -h/--help; an unknown COMMAND or option exits 2.
parse_options() {
  COMMAND="${1:-}"
  [[ -n "$COMMAND" ]] && shift
  TARGET=""
  if [[ "$COMMAND" =~ ^(restart|stop|start|shell)$ && $# -gt 0 && "$1" != -* ]]; then
    TARGET="$1"
    shift
  fi
  case "$COMMAND" in -h | --help) COMMAND=help ;; esac
  local commands="${CLUSTER_COMMANDS[*]}"
  if [[ -n "$COMMAND" && "$COMMAND" != help && " $commands " != *" $COMMAND "* ]]; then
    echo "local-cluster: unknown command '$COMMAND' (${commands// /, })" >&2
    exit 2
  fi
  SHELL_COMMAND=()
  STATE="$TORUS_CACHE/local-cluster"
  NODES="trn2.48xlarge:1" LNC="" SIMULATE_FAULTS=() RESET_TIME="300ms" INSTALL_TORUS=1
  FAKE_NODES="" DRA_NODES="" DRA=0 HELM_SETS=() PLACERS="" CONTROL_PLANE_QPS=""
  SCHEDULER_GATES="" NODE_MONITOR_GRACE=20s FAKE_NODE_LEASE_SECONDS=40
  while [[ $# -gt 0 ]]; do
    # shell NODE COMMAND...: once the command began, every argument is its (but --state-dir).
    if ((${#SHELL_COMMAND[@]})) && [[ "$1" != --state-dir=* ]]; then
      SHELL_COMMAND+=("$1")
      shift
      continue
    fi
    case "$1" in
      #: Options of `up`:
      #:   --k8s-version=V       Kubernetes to build and run (default: scripts/cluster/versions.sh)
      --k8s-version=*) K8S_VERSION="${1#*=}" ;;
      #:   --nodes=T:N[@US],...  the real nodes: N of type T, named torus-node-1, -2, ... in order;
      #:                         @US puts trn2u nodes into the simulated UltraServer US (at most four,
      #:                         positions 0-3 in order), e.g. trn2u.48xlarge:4@us0,trn2.48xlarge:2
      #:                         (default trn2.48xlarge:1)
      --nodes=*) NODES="${1#*=}" ;;
      #:   --instance-type=T     shorthand for --nodes=T:1
      --instance-type=*) NODES="${1#*=}:1" ;;
      #:   --lnc=N               the simulated nodes' logical NeuronCore config (default: the type's)
      --lnc=*) LNC="${1#*=}" ;;
      #:   --simulate-fault=F    a fault in the first node's driver files from the start (repeatable;
      #:                         see neuron-ls --help)
      --simulate-fault=*) SIMULATE_FAULTS+=("${1#*=}") ;;
      #:   --reset-time=D        how long a simulated device reset takes (default 300ms; the nodes'
      #:                         neuron-sim-driver)
      --reset-time=*) RESET_TIME="${1#*=}" ;;
      #:   --no-torus            start the cluster only; do not build the image or install the chart
      --no-torus) INSTALL_TORUS=0 ;;
      #:   --fake-nodes=T:N,...  add N fake nodes of type T (kwok), e.g. trn2.48xlarge:1000,inf2.48xlarge:200,
      #:                         carrying what the node agent would publish (needs build/bin/neuron-ls)
      --fake-nodes=*) FAKE_NODES="${1#*=}" ;;
      #:   --dra                 the real nodes run the DRA driver neuron.aws.com instead of the
      #:                         device plugin (labelled torus.dev/neuron-mode=dra; DeviceClasses
      #:                         installed); fake nodes keep the device plugin's resources
      --dra) DRA=1 ;;
      #:   --dra-nodes=T:N,...   add N fake DRA nodes of type T (kwok): labelled torus.dev/neuron-mode=dra,
      #:                         no device-plugin resources, and the ResourceSlices the driver publishes
      #:                         for the type (DeviceClasses installed); with --fake-nodes, a mixed cluster
      --dra-nodes=*) DRA_NODES="${1#*=}" ;;
      #:   --set key=value       passed to `helm install` (repeatable)
      --set) HELM_SETS+=(--set "$2"); shift ;;
      --set=*) HELM_SETS+=(--set "${1#*=}") ;;
      #:   --control-plane-qps=QPS:BURST  the API client rate limit of kube-controller-manager, kube-scheduler
      #:                         and neuron-scheduler (default: each one's own, 20:30 and 50:100); DRA
      #:                         wants 150:300 (docs/install.md, "Control-plane settings for DRA")
      --control-plane-qps=*)
        CONTROL_PLANE_QPS="${1#*=}"
        [[ "$CONTROL_PLANE_QPS" =~ ^[1-9][0-9]*:[1-9][0-9]*$ ]] ||
          bad_value --control-plane-qps "$CONTROL_PLANE_QPS" "QPS:BURST (e.g. 150:300)" ;;
      #:   --node-monitor-grace-period=DUR  how long a node may miss heartbeats before the controller
      #:                         manager marks it NotReady (default 20s, so node-loss tests run quickly;
      #:                         upstream's is 50s; the scheduling benchmark uses 2m with 240 s Leases)
      --node-monitor-grace-period=*)
        NODE_MONITOR_GRACE="${1#*=}"
        [[ "$NODE_MONITOR_GRACE" =~ ^[1-9][0-9]*(s|m)$ ]] ||
          bad_value --node-monitor-grace-period "$NODE_MONITOR_GRACE" "a duration such as 50s or 2m" ;;
      #:   --fake-node-lease-seconds=N  the Lease duration of kwok's fake nodes (default 40, a kubelet's;
      #:                         each renews every N/4 s); the scheduling benchmark uses 240 so that a
      #:                         thousand nodes' heartbeats do not take the CPUs it measures on
      --fake-node-lease-seconds=*)
        FAKE_NODE_LEASE_SECONDS="${1#*=}"
        [[ "$FAKE_NODE_LEASE_SECONDS" =~ ^[1-9][0-9]*$ ]] ||
          bad_value --fake-node-lease-seconds "$FAKE_NODE_LEASE_SECONDS" "whole seconds" ;;
      #:   --scheduler-feature-gates=G=true,...  feature gates for the cluster's kube-scheduler (the DRA
      #:                         path's scheduler), e.g. SchedulerPreQueueingHints=true
      --scheduler-feature-gates=*)
        SCHEDULER_GATES="${1#*=}"
        [[ "$SCHEDULER_GATES" =~ ^[A-Za-z0-9]+=(true|false)(,[A-Za-z0-9]+=(true|false))*$ ]] ||
          bad_value --scheduler-feature-gates "$SCHEDULER_GATES" \
            "Name=true|false,... (e.g. SchedulerPreQueueingHints=true)" ;;
      #:   --placers=LIST        also run these placers on Torus's labels, built from their Go modules
      #:                         (kueue, lws; e.g. --placers=kueue,lws): their webhooks act only in
      #:                         namespaces labelled torus.dev/placers=enabled (docs/gangs.md)
      --placers=*)
        PLACERS="${1#*=}"
        [[ "$PLACERS" =~ ^(kueue|lws)(,(kueue|lws))*$ ]] ||
          bad_value --placers "$PLACERS" "kueue, lws or both (kueue,lws)" ;;
      #: Options of every command:
      #:   --state-dir=DIR       where state, logs, pids and the kubeconfig live
      #:                         (default ~/.cache/torus/local-cluster; tests use a fresh directory)
      --state-dir=*) STATE="${1#*=}" ;;
      #:   -h, --help            this text
      -h | --help) COMMAND=help; return 0 ;;
      *)
        if [[ "$COMMAND" == shell ]]; then
          SHELL_COMMAND=("$1")
          shift
          continue
        fi
        echo "local-cluster: unknown argument '$1' (see --help)" >&2
        exit 2 ;;
    esac
    shift
  done
}
