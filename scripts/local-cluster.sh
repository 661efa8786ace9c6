#!/usr/bin/env bash
# A real Kubernetes on this machine, built from upstream's Go modules, with Torus installed by
# its Helm chart on a simulated Neuron node. Everything listens on 127.0.0.1 only.
#
#   scripts/local-cluster.sh up [options]    build (once, cached), start, install Torus
#   scripts/local-cluster.sh status          what runs, where its logs are
#   scripts/local-cluster.sh down            stop every process started, unmount, remove state
#   scripts/local-cluster.sh image           build Torus's image from the Dockerfile (podman)
#   scripts/local-cluster.sh restart NAME    stop and start one component (kubelet, containerd, ...)
#
# Options of `up`:
#   --k8s-version=V       Kubernetes to build and run (default: scripts/cluster/versions.sh)
#   --instance-type=T     the simulated node's instance type (default trn2.48xlarge)
#   --lnc=N               the simulated node's logical NeuronCore config (default: the type's)
#   --node-name=NAME      the node's name (default torus-node-1)
#   --no-torus            start the cluster only; do not build the image or install the chart
#   --fake-nodes=T:N,...  add N fake nodes of type T (kwok), e.g. trn2.48xlarge:1000,inf2.48xlarge:200,
#                         carrying what the node agent would publish (needs build/bin/neuron-ls)
#   --dra                 the simulated node runs the DRA driver neuron.aws.com instead of the
#                         device plugin (labelled torus.dev/neuron-mode=dra; DeviceClasses
#                         installed); fake nodes keep the device plugin's resources
#   --dra-nodes=T:N,...   add N fake DRA nodes of type T (kwok): labelled torus.dev/neuron-mode=dra,
#                         no device-plugin resources, and the ResourceSlices the driver publishes
#                         for the type (DeviceClasses installed); with --fake-nodes, a mixed cluster
#   --set key=value       passed to `helm install` (repeatable)
# Options of all three:
#   --state-dir=DIR       where state, logs, pids and the kubeconfig live
#                         (default ~/.cache/torus/local-cluster; tests use a fresh directory)
#
# Components: kube-apiserver, kube-controller-manager, kube-scheduler and kubelet at the pinned
# version; etcd, containerd 2 and runc from their Go modules; the CNI bridge plugin from Debian.
# Torus's image is built from the Dockerfile by podman. The first `up` on a machine builds
# Kubernetes (about 10 minutes on 2 cores) and the image (about 10 more); later runs use the cache.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
source "$REPO/scripts/cluster/versions.sh"
source "$REPO/scripts/cluster/processes.sh"

command="${1:-}"
[[ -n "$command" ]] && shift
RESTART_NAME=""
if [[ "$command" == restart && $# -gt 0 && "$1" != -* ]]; then
  RESTART_NAME="$1"
  shift
fi
STATE="$TORUS_CACHE/local-cluster"
INSTANCE_TYPE="trn2.48xlarge"
LNC=""
NODE_NAME="torus-node-1"
INSTALL_TORUS=1
FAKE_NODES=""
DRA_NODES=""
DRA=0
HELM_SETS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --k8s-version=*) K8S_VERSION="${1#*=}" ;;
    --instance-type=*) INSTANCE_TYPE="${1#*=}" ;;
    --lnc=*) LNC="${1#*=}" ;;
    --node-name=*) NODE_NAME="${1#*=}" ;;
    --no-torus) INSTALL_TORUS=0 ;;
    --fake-nodes=*) FAKE_NODES="${1#*=}" ;;
    --dra-nodes=*) DRA_NODES="${1#*=}" ;;
    --dra) DRA=1 ;;
    --set) HELM_SETS+=(--set "$2"); shift ;;
    --set=*) HELM_SETS+=(--set "${1#*=}") ;;
    --state-dir=*) STATE="${1#*=}" ;;
    -h | --help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "local-cluster: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$STATE"
STATE="$(cd "$STATE" && pwd)"

K8S_BIN="$TORUS_CACHE/k8s-$K8S_VERSION/bin"
CONTAINERD_BIN="$TORUS_CACHE/containerd-$CONTAINERD_VERSION/bin"
ETCD_BIN="$TORUS_CACHE/etcd-$ETCD_VERSION/bin"
RUNC_BIN="$TORUS_CACHE/runc-$RUNC_VERSION/bin"
PKI="$STATE/pki"
KUBELET_ROOT="$STATE/kubelet"
CONTAINERD_SOCKET="$STATE/containerd/containerd.sock"
KUBECONFIG_FILE="$STATE/kubeconfig"
HELM="$REPO/build/tools/helm"
SERVICE_IP="10.96.0.1"
# One cgroup per state directory, so two clusters (a test's and the demo's) never share one.
CGROUP_NAME="torus-$(printf '%s' "$STATE" | sha256sum | cut -c1-8)"
# The pods' bridge (pods without hostNetwork); one cluster runs at a time (see check_free).
BRIDGE_NAME="torus-br0"
POD_SUBNET="10.88.0.0/16"
source "$REPO/scripts/cluster/pki.sh"
source "$REPO/scripts/cluster/config.sh"
source "$REPO/scripts/cluster/images.sh"

kubectl_() { "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

check_prerequisites() {
  local missing=()
  local tool
  for tool in ip go podman openssl python3 setsid debootstrap gcc curl; do
    command -v "$tool" > /dev/null || missing+=("$tool")
  done
  [[ -x /usr/lib/cni/bridge ]] || missing+=("/usr/lib/cni/bridge (containernetworking-plugins)")
  ((${#missing[@]} == 0)) || die "missing: ${missing[*]} — run scripts/install-deps.sh"
  [[ "$(id -u)" == 0 ]] || die "the kubelet and containerd need root"
}

start_etcd() {
  start_process etcd "$ETCD_BIN/etcd" --name local --data-dir "$STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "local=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync --log-level warn
  wait_for etcd 30 curl -sf "http://127.0.0.1:$ETCD_PORT/health"
}

start_apiserver() {
  write_audit_policy
  # The endpoint reconciler is off: the only address here is loopback, which a Service's
  # endpoints may not hold. Pods reach the API through KUBERNETES_SERVICE_HOST=127.0.0.1.
  start_process kube-apiserver "$K8S_BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range 10.96.0.0/16 --endpoint-reconciler-type none \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --allow-privileged=true \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types InternalIP \
    --audit-policy-file "$STATE/audit-policy.yaml" --audit-log-path "$STATE/logs/audit.log" \
    --audit-log-maxsize 200 --audit-log-maxbackup 1
  wait_for kube-apiserver 90 curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" \
    --key "$PKI/admin.key" "https://127.0.0.1:$APISERVER_PORT/readyz"
}

start_control_plane() {
  write_kubeconfig "$STATE/controller-manager.kubeconfig" controller-manager
  write_kubeconfig "$STATE/scheduler.kubeconfig" scheduler
  start_process kube-controller-manager "$K8S_BIN/kube-controller-manager" \
    --kubeconfig "$STATE/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$STATE/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$STATE/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$CONTROLLER_MANAGER_PORT" --leader-elect=false \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --use-service-account-credentials=true \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key"
  start_process kube-scheduler "$K8S_BIN/kube-scheduler" \
    --kubeconfig "$STATE/scheduler.kubeconfig" \
    --authentication-kubeconfig "$STATE/scheduler.kubeconfig" \
    --authorization-kubeconfig "$STATE/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --leader-elect=false
  wait_for kube-controller-manager 60 curl -sfk "https://127.0.0.1:$CONTROLLER_MANAGER_PORT/healthz"
  wait_for kube-scheduler 60 curl -sfk "https://127.0.0.1:$SCHEDULER_PORT/healthz"
}

start_containerd() {
  write_containerd_config
  start_process containerd "$CONTAINERD_BIN/containerd" --config "$STATE/containerd/config.toml"
  wait_for containerd 30 "$CONTAINERD_BIN/ctr" --address "$CONTAINERD_SOCKET" version
  build_pause_image
  import_image "$PAUSE_IMAGE"
  provide_example_base_image
}

# The kubelet puts pods under cgroupRoot but does not create it. On cgroup v1 a new cpuset
# starts empty, so it inherits the parent's CPUs and memory nodes first.
make_cgroups() {
  local hierarchy
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    mkdir -p "/sys/fs/cgroup/$CGROUP_NAME"
    return
  fi
  for hierarchy in /sys/fs/cgroup/*/; do
    [[ -d "$hierarchy" && "$hierarchy" != */unified/ ]] || continue
    mkdir -p "$hierarchy$CGROUP_NAME"
    if [[ -f "${hierarchy}cpuset.cpus" ]]; then
      cat "${hierarchy}cpuset.cpus" > "$hierarchy$CGROUP_NAME/cpuset.cpus"
      cat "${hierarchy}cpuset.mems" > "$hierarchy$CGROUP_NAME/cpuset.mems"
    fi
  done
}

# The kubelet serves device plugins at /var/lib/kubelet/device-plugins whatever its --root-dir, so
# only one kubelet can run on a machine: refuse to start a second.
check_free() {
  local socket=/var/lib/kubelet/device-plugins/kubelet.sock
  if [[ -S "$socket" ]] && python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' "$socket" 2> /dev/null; then
    die "a kubelet already serves $socket (another local cluster? scripts/local-cluster.sh status --state-dir=...)"
  fi
}

start_kubelet() {
  [[ -d /var/lib/kubelet ]] || touch "$STATE/created-var-lib-kubelet"
  mkdir -p /var/lib/kubelet/device-plugins
  make_cgroups
  write_kubelet_config
  write_kubeconfig "$STATE/kubelet.kubeconfig" kubelet
  start_process kubelet "$K8S_BIN/kubelet" --config "$STATE/kubelet-config.yaml" \
    --kubeconfig "$STATE/kubelet.kubeconfig" --root-dir "$KUBELET_ROOT" \
    --hostname-override "$NODE_NAME" --node-ip 127.0.0.1 \
    --node-labels "node.kubernetes.io/instance-type=$INSTANCE_TYPE$( ((DRA)) && echo ,torus.dev/neuron-mode=dra)" -v 2
  wait_for kubelet 120 node_ready
}

node_ready() {
  [[ "$(kubectl_ get node "$NODE_NAME" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2> /dev/null)" == True ]]
}

# Values that fit a cluster whose only network is loopback; the chart's defaults fit EKS.
write_local_values() {
  local env
  env="$(printf '[{"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"}, {"name": "KUBERNETES_SERVICE_PORT", "value": "%s"}]' "$APISERVER_PORT")"
  cat > "$STATE/values-local.yaml" <<YAML
image:
  repository: ${TORUS_IMAGE%:*}
  tag: ${TORUS_IMAGE##*:}
  pullPolicy: Never
nodeAgent:
  hostNetwork: true
  metricsPort: $AGENT_METRICS_PORT
  lnc: "$LNC"
  extraEnv: $env
  hostPaths:
    devicePlugins: /var/lib/kubelet/device-plugins
    podResources: $KUBELET_ROOT/pod-resources
    kubeletPlugins: $KUBELET_ROOT/plugins
    kubeletPluginsRegistry: $KUBELET_ROOT/plugins_registry
    cdi: $STATE/cdi
  simulate:
    instanceType: $INSTANCE_TYPE
    dir: $STATE/simulated-node

dra:
  enabled: $( ((DRA)) || [[ -n "$DRA_NODES" ]] && echo true || echo false)

extender:
  hostNetwork: true
  port: $EXTENDER_PORT
  serveState: true  # the tests and the demo read it; nothing but this machine reaches the port
  extraEnv: $env
scheduler:
  hostNetwork: true
  securePort: $NEURON_SCHEDULER_PORT
  extenderURL: http://127.0.0.1:$EXTENDER_PORT
  extraEnv: $env
  image:
    repository: $SCHEDULER_IMAGE_REPO
    tag: $K8S_VERSION
    pullPolicy: Never
YAML
}

install_torus() {
  "$REPO/scripts/get-helm.sh" > /dev/null
  build_torus_image
  build_scheduler_image
  import_image "$TORUS_IMAGE"
  import_image "$SCHEDULER_IMAGE_REPO:$K8S_VERSION"
  write_local_values
  log "helm install torus (namespace kube-system)"
  "$HELM" --kubeconfig "$KUBECONFIG_FILE" install torus "$REPO/helm/torus" --namespace kube-system \
    -f "$STATE/values-local.yaml" "${HELM_SETS[@]}" --wait --timeout 5m > "$STATE/logs/helm-install.log" 2>&1 ||
    {
      cat "$STATE/logs/helm-install.log" >&2
      kubectl_ get pods -A -o wide >&2 || true
      die "helm install failed"
    }
}

# kwok keeps the fake nodes Ready and runs their pods; only nodes annotated for it are its.
add_fake_nodes() {
  local neuron_ls="$REPO/build/bin/neuron-ls"
  [[ -x "$neuron_ls" ]] ||
    die "--fake-nodes and --dra-nodes need $neuron_ls (cmake --build build --target neuron-ls)"
  "$REPO/scripts/cluster/build-components.sh" --only=kwok
  local manifest="$STATE/fake-nodes.json"
  python3 "$REPO/scripts/cluster/fake-nodes.py" "$neuron_ls" --fake-nodes="$FAKE_NODES" \
    --dra-nodes="$DRA_NODES" > "$manifest" || die "cannot make the fake nodes"
  # kwok's own stages, from its module: nodes become Ready and renew their leases, pods run,
  # complete and go when deleted.
  local stages
  stages="$(go env GOMODCACHE)/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage"
  local configs=()
  local stage
  for stage in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
    pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
    [[ -f "$stages/$stage.yaml" ]] || die "kwok stage $stages/$stage.yaml is missing"
    configs+=(--config "$stages/$stage.yaml")
  done
  start_process kwok "$TORUS_CACHE/kwok-$KWOK_VERSION/bin/kwok" --kubeconfig "$KUBECONFIG_FILE" \
    "${configs[@]}" --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --cidr=10.89.0.0/16 --node-ip=127.0.0.1
  local count
  count="$(python3 -c '
import json, sys
print(sum(item["kind"] == "Node" for item in json.load(open(sys.argv[1]))["items"]))' "$manifest")"
  log "creating $count fake nodes (${FAKE_NODES:+device plugin: $FAKE_NODES }${DRA_NODES:+DRA: $DRA_NODES})"
  kubectl_ create -f "$manifest" > /dev/null
  local deadline=$((SECONDS + 300)) ready=0
  while ((SECONDS < deadline)); do
    ready="$(kubectl_ get nodes -l type=kwok --no-headers 2> /dev/null | grep -cw Ready || true)"
    ((ready >= count)) && break
    process_alive kwok || die "kwok exited (log: $STATE/logs/kwok.log)"
    sleep 2
  done
  ((ready >= count)) || die "only $ready of $count fake nodes became Ready (log: $STATE/logs/kwok.log)"
  log "$count fake nodes Ready"
}

write_env_file() {
  cat > "$STATE/cluster.env" <<ENV
K8S_VERSION=$K8S_VERSION
NODE_NAME=$NODE_NAME
INSTANCE_TYPE=$INSTANCE_TYPE
APISERVER_PORT=$APISERVER_PORT
ETCD_PORT=$ETCD_PORT
ETCD_PEER_PORT=$ETCD_PEER_PORT
CONTROLLER_MANAGER_PORT=$CONTROLLER_MANAGER_PORT
SCHEDULER_PORT=$SCHEDULER_PORT
NEURON_SCHEDULER_PORT=$NEURON_SCHEDULER_PORT
KUBELET_PORT=$KUBELET_PORT
KUBELET_HEALTHZ_PORT=$KUBELET_HEALTHZ_PORT
EXTENDER_PORT=$EXTENDER_PORT
AGENT_METRICS_PORT=$AGENT_METRICS_PORT
KUBECONFIG=$KUBECONFIG_FILE
KUBECTL=$K8S_BIN/kubectl
KUBELET_ROOT=$KUBELET_ROOT
CONTAINERD_SOCKET=$CONTAINERD_SOCKET
CTR=$CONTAINERD_BIN/ctr
SIMULATED_NODE_DIR=$STATE/simulated-node
DRA=$DRA
CDI_DIR=$STATE/cdi
ENV
}

up() {
  check_prerequisites
  if [[ -f "$STATE/pids/order" ]]; then
    die "a cluster already runs from $STATE (scripts/local-cluster.sh down first)"
  fi
  check_free
  local started=$SECONDS
  "$REPO/scripts/cluster/build-components.sh" --k8s-version="$K8S_VERSION" --only=k8s,containerd,runc,etcd
  mkdir -p "$STATE/logs"
  APISERVER_PORT="$(free_port)" ETCD_PORT="$(free_port)" ETCD_PEER_PORT="$(free_port)"
  CONTROLLER_MANAGER_PORT="$(free_port)" SCHEDULER_PORT="$(free_port)"
  NEURON_SCHEDULER_PORT="$(free_port)" KUBELET_PORT="$(free_port)"
  KUBELET_HEALTHZ_PORT="$(free_port)" EXTENDER_PORT="$(free_port)" AGENT_METRICS_PORT="$(free_port)"
  write_env_file
  make_pki
  write_kubeconfig "$KUBECONFIG_FILE" admin
  log "starting etcd, kube-apiserver $K8S_VERSION (https://127.0.0.1:$APISERVER_PORT)"
  start_etcd
  start_apiserver
  log "starting kube-controller-manager, kube-scheduler, containerd $CONTAINERD_VERSION, kubelet"
  start_control_plane
  start_containerd
  start_kubelet
  log "node $NODE_NAME is Ready ($INSTANCE_TYPE, simulated)"
  if ((INSTALL_TORUS)); then
    install_torus
    log "Torus installed"
  fi
  [[ -z "$FAKE_NODES$DRA_NODES" ]] || add_fake_nodes
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

# Containers outlive containerd (their shims are on their own), so kill them through it first.
stop_containers() {
  [[ -S "$CONTAINERD_SOCKET" ]] || return 0
  local ctr=("$CONTAINERD_BIN/ctr" --address "$CONTAINERD_SOCKET" -n k8s.io)
  local task
  for task in $("${ctr[@]}" tasks ls -q 2> /dev/null); do
    "${ctr[@]}" tasks kill -a -s SIGKILL "$task" > /dev/null 2>&1 || true
  done
  local deadline=$((SECONDS + 15))
  while [[ -n "$("${ctr[@]}" tasks ls -q 2> /dev/null | head -1)" ]] && ((SECONDS < deadline)); do
    for task in $("${ctr[@]}" tasks ls -q 2> /dev/null); do
      "${ctr[@]}" tasks delete -f "$task" > /dev/null 2>&1 || true
    done
    sleep 0.5
  done
}

down() {
  if [[ ! -d "$STATE/pids" ]]; then
    log "nothing runs from $STATE"
  else
    stop_process kubelet
    stop_containers
    local name
    for name in $(tac "$STATE/pids/order" 2> /dev/null); do
      stop_process "$name"
    done
  fi
  unmount_under "$STATE/"
  remove_cgroups
  # The cache of built components stays; only this cluster's state goes.
  ip link delete "$BRIDGE_NAME" 2> /dev/null || true
  # The kubelet keeps its device-plugin socket at a fixed path, whatever --root-dir says.
  if [[ -f "$STATE/created-var-lib-kubelet" ]]; then
    rm -rf /var/lib/kubelet
  else
    rm -f /var/lib/kubelet/device-plugins/kubelet.sock
  fi
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
  echo "Kubernetes $K8S_VERSION, API https://127.0.0.1:$APISERVER_PORT, node $NODE_NAME ($INSTANCE_TYPE)"
  echo "export KUBECONFIG=$KUBECONFIG_FILE"
}

case "$command" in
  up) up ;;
  restart)
    [[ -n "$RESTART_NAME" ]] || die "restart needs a component name (see status)"
    restart_process "$RESTART_NAME"
    log "restarted $RESTART_NAME (log: $STATE/logs/$RESTART_NAME.log)"
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
  -h | --help | "") sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; [[ -n "$command" ]] ;;
  *) echo "local-cluster: unknown command '$command' (up, down, status, image, restart)" >&2; exit 2 ;;
esac
