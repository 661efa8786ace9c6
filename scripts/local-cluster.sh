#!/usr/bin/env bash
# A real Kubernetes on the local host, built from upstream's Go modules, with Torus installed by
# its Helm chart on simulated Neuron nodes. Each node is a real kubelet and containerd in its own
# mount, network, UTS and PID namespaces, with the simulated driver's files at the driver's paths,
# so the agent runs from the chart's production values (docs/local-cluster.md). Everything listens
# on 127.0.0.1 or on the bridge torus-nodes (10.87.0.0/24) that only these nodes share.
#
#   scripts/local-cluster.sh up [options]    build (once, cached), start, install Torus
#   scripts/local-cluster.sh status          what runs, where its logs are
#   scripts/local-cluster.sh down            stop every process started, unmount, remove state
#   scripts/local-cluster.sh image           build Torus's image from the Dockerfile (podman)
#   scripts/local-cluster.sh restart NAME    stop and start one component (see status:
#                                            kubelet-torus-node-1, containerd-torus-node-2, ...)
#   scripts/local-cluster.sh stop NAME       stop one component, as when it dies (start NAME
#                                            brings it back)
#   scripts/local-cluster.sh shell NODE [CMD] a shell (or CMD) inside NODE's namespaces
#
# Components: kube-apiserver, kube-controller-manager, kube-scheduler and a kubelet per node at
# the pinned version; etcd, containerd 2 (one per node) and runc from their Go modules; the CNI
# bridge plugin from Debian.
# Torus's image is built from the Dockerfile by podman. The first `up` on a host builds
# Kubernetes (about 10 minutes on 2 cores) and the image (about 10 more); later runs use the cache.
#
# This file is the dispatcher: options (scripts/cluster/options.sh), the paths every helper reads,
# and the commands, each over its helpers in scripts/cluster/: control_plane.sh, nodes.sh (with
# processes.sh, pki.sh, config.sh), images.sh, torus.sh, fake_nodes.sh and placers.sh.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
source "$REPO/scripts/cluster/versions.sh"
source "$REPO/scripts/cluster/options.sh"
# The comment block at the top of this file, without its '#', then the options' help.
usage() {
  awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" | sed '/^This file is/,$d'
  options_help
}

parse_options "$@"
case "$COMMAND" in
  help) usage; exit 0 ;;
  "") usage; exit 1 ;;
esac
# Each node mounts its own /dev and /sys (and /proc) over the host's: state under them is hidden
# from the node (its kubelet then cannot find its own directories). Only `up` refuses: `down`
# still cleans up a cluster someone started there.
[[ "$COMMAND" == up ]] && case "$(realpath -m "$STATE")/" in
  /dev/* | /sys/* | /proc/*)
    echo "local-cluster: --state-dir=$STATE is under /dev, /sys or /proc, which each node" \
      "replaces with its own; choose a directory elsewhere (for example under /var/tmp)" >&2
    exit 2 ;;
esac
mkdir -p "$STATE"
STATE="$(cd "$STATE" && pwd)"

# The paths and names the helpers below read (each helper's header lists what it reads).
K8S_BIN="$TORUS_CACHE/k8s-$K8S_VERSION/bin"
CONTAINERD_BIN="$TORUS_CACHE/containerd-$CONTAINERD_VERSION/bin"
RUNC_BIN="$TORUS_CACHE/runc-$RUNC_VERSION/bin"
PKI="$STATE/pki"
KUBECONFIG_FILE="$STATE/kubeconfig"
SERVICE_IP="10.96.0.1"
# One cgroup per state directory (a node's under it), so two clusters never share one.
CGROUP_NAME="torus-$(printf '%s' "$STATE" | sha256sum | cut -c1-8)"
# The network namespace the nodes' veths come back to: this script's.
HOST_NETNS_PID=$$
source "$REPO/scripts/cluster/processes.sh"
source "$REPO/scripts/cluster/nodes.sh"
source "$REPO/scripts/cluster/control_plane.sh"
source "$REPO/scripts/cluster/pki.sh"
source "$REPO/scripts/cluster/config.sh"
source "$REPO/scripts/cluster/images.sh"
source "$REPO/scripts/cluster/torus.sh"
source "$REPO/scripts/cluster/fake_nodes.sh"
source "$REPO/scripts/cluster/placers.sh"

check_prerequisites() {
  local missing=()
  local tool
  for tool in ip go podman openssl python3 setsid debootstrap gcc curl nsenter unshare; do
    command -v "$tool" > /dev/null || missing+=("$tool")
  done
  [[ -x /usr/lib/cni/bridge ]] || missing+=("/usr/lib/cni/bridge (containernetworking-plugins)")
  ((${#missing[@]} == 0)) || die "missing: ${missing[*]} — run scripts/install-deps.sh"
  [[ "$(id -u)" == 0 ]] || die "the kubelet and containerd need root"
}

# One cluster at a time: the nodes' bridge and addresses are fixed.
check_free() {
  if ip link show "$NODES_BRIDGE" > /dev/null 2>&1; then
    die "the bridge $NODES_BRIDGE exists: another local cluster runs (scripts/local-cluster.sh status --state-dir=...), or one was not taken down"
  fi
}

up() {
  check_prerequisites
  if [[ -f "$STATE/pids/order" ]]; then
    die "a cluster already runs from $STATE (scripts/local-cluster.sh down first)"
  fi
  check_free
  parse_nodes "$NODES"
  local started=$SECONDS
  "$REPO/scripts/cluster/build-components.sh" --k8s-version="$K8S_VERSION" --only=k8s,containerd,runc,etcd
  mkdir -p "$STATE/logs"
  APISERVER_PORT="$(free_port)" ETCD_PORT="$(free_port)" ETCD_PEER_PORT="$(free_port)"
  CONTROLLER_MANAGER_PORT="$(free_port)" SCHEDULER_PORT="$(free_port)"
  NEURON_SCHEDULER_PORT="$(free_port)" EXTENDER_PORT="$(free_port)"
  AGENT_METRICS_PORT=9400  # the chart's default: each agent has its node's network to itself
  write_env_file
  make_pki
  write_kubeconfig "$KUBECONFIG_FILE" admin
  # The bridge first: the API server listens on it.
  make_nodes_bridge
  log "starting etcd, kube-apiserver $K8S_VERSION (https://$APISERVER_HOST:$APISERVER_PORT)"
  start_etcd
  start_apiserver
  log "starting kube-controller-manager, kube-scheduler; ${#NODE_NAMES[@]} node(s), each with containerd $CONTAINERD_VERSION and a kubelet"
  start_control_plane
  start_nodes
  local index
  for ((index = 1; index <= ${#NODE_NAMES[@]}; index++)); do
    log "node ${NODE_NAMES[$index - 1]} is Ready at $(node_ip "$index") (${NODE_TYPES[$index - 1]}, simulated${NODE_ULTRASERVERS[$index - 1]:+, UltraServer ${NODE_ULTRASERVERS[$index - 1]} position ${NODE_PLACES[$index - 1]##*:}})"
  done
  if ((INSTALL_TORUS)); then
    install_torus
    log "Torus installed"
  fi
  [[ -z "$FAKE_NODES$DRA_NODES" ]] || add_fake_nodes
  [[ -z "$PLACERS" ]] || start_placers "$PLACERS"
  log "cluster up in $((SECONDS - started)) s"
  echo "export KUBECONFIG=$KUBECONFIG_FILE"
  if ((INSTALL_TORUS)) && [[ -x "$REPO/build/bin/kubectl-neuron" ]]; then
    KUBECONFIG="$KUBECONFIG_FILE" "$REPO/build/bin/kubectl-neuron" nodes || true
  fi
}

unmount_under() {
  local target
  while read -r target; do
    umount -l "$target" 2> /dev/null || true
  done < <(awk -v root="$1" 'index($2, root) == 1 {print $2}' /proc/self/mounts | sort -r)
}

remove_cgroups() {
  local hierarchy
  for hierarchy in /sys/fs/cgroup/*/"$CGROUP_NAME" /sys/fs/cgroup/"$CGROUP_NAME"; do
    [[ -d "$hierarchy" ]] || continue
    find "$hierarchy" -depth -type d -exec rmdir {} + 2> /dev/null || true
  done
}

down() {
  if [[ ! -d "$STATE/pids" ]]; then
    log "nothing runs from $STATE"
  else
    stop_nodes
    local name
    for name in $(tac "$STATE/pids/order" 2> /dev/null); do
      stop_process "$name"
    done
  fi
  ip link delete "$NODES_BRIDGE" 2> /dev/null || true
  unmount_under "$STATE/"
  remove_cgroups
  remove_mount_targets
  # The cache of built components stays; only this cluster's state goes.
  rm -rf "$STATE"
  log "stopped and removed $STATE"
}

status() {
  if [[ ! -f "$STATE/pids/order" ]]; then
    echo "no local cluster in $STATE"
    return 1
  fi
  source "$STATE/cluster.env"
  printf '%-26s %-8s %s\n' COMPONENT PID STATE
  local name pid state
  for name in $(cat "$STATE/pids/order"); do
    pid="$(cat "$STATE/pids/$name.pid" 2> /dev/null || echo -)"
    state="exited (log: $STATE/logs/$name.log)"
    process_alive "$name" && state="running"
    printf '%-26s %-8s %s\n' "$name" "$pid" "$state"
  done
  echo
  echo "Kubernetes $K8S_VERSION, API https://$APISERVER_HOST:$APISERVER_PORT"
  local ips=($NODE_IPS) index=0
  for name in $NODE_NAMES; do
    echo "node $name at ${ips[$index]} (driver files: $NODES_DIR/$name/driver; scripts/local-cluster.sh shell $name)"
    index=$((index + 1))
  done
  echo "export KUBECONFIG=$KUBECONFIG_FILE"
}

# shell NODE [COMMAND...]: inside the node's mount and network namespaces, as its kubelet is.
node_shell() {
  [[ -n "$TARGET" ]] || die "shell needs a node name (see status)"
  [[ -e "$(node_dir "$TARGET")/ns/mnt" ]] || die "no node $TARGET in $STATE (see status)"
  ((${#SHELL_COMMAND[@]})) || SHELL_COMMAND=(bash)
  node_run "$TARGET" "${SHELL_COMMAND[@]}"
}

case "$COMMAND" in
  up) up ;;
  restart)
    [[ -n "$TARGET" ]] || die "restart needs a component name (see status)"
    restart_process "$TARGET"
    log "restarted $TARGET (log: $STATE/logs/$TARGET.log)"
    ;;
  stop)
    [[ -n "$TARGET" ]] || die "stop needs a component name (see status)"
    [[ -f "$STATE/pids/$TARGET.cmd" ]] || die "no process named $TARGET was started from $STATE"
    stop_process "$TARGET"
    log "stopped $TARGET (scripts/local-cluster.sh start $TARGET brings it back)"
    ;;
  start)
    [[ -n "$TARGET" ]] || die "start needs a component name (see status)"
    start_recorded "$TARGET"
    # A kubelet started next must find the runtime serving: it exits if it does not.
    if [[ "$TARGET" == containerd-* ]]; then
      wait_for "$TARGET" 30 "$CONTAINERD_BIN/ctr" \
        --address "$(node_dir "${TARGET#containerd-}")/containerd/containerd.sock" version
    fi
    log "started $TARGET (log: $STATE/logs/$TARGET.log)"
    ;;
  image)
    check_prerequisites
    "$REPO/scripts/cluster/build-components.sh" --only=runc
    mkdir -p "$STATE/logs"
    build_torus_image
    echo "$TORUS_IMAGE"
    ;;
  down) down ;;
  status) status ;;
  shell) node_shell ;;
esac
