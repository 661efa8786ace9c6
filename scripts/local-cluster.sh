#!/usr/bin/env bash
# A real Kubernetes on this machine, built from upstream's Go modules, with Torus installed by
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
# Options of `up`:
#   --k8s-version=V       Kubernetes to build and run (default: scripts/cluster/versions.sh)
#   --nodes=T:N[@US],...  the real nodes: N of type T, named torus-node-1, -2, ... in order;
#                         @US puts trn2u nodes into the simulated UltraServer US (at most four,
#                         positions 0-3 in order), e.g. trn2u.48xlarge:4@us0,trn2.48xlarge:2
#                         (default trn2.48xlarge:1)
#   --instance-type=T     shorthand for --nodes=T:1
#   --lnc=N               the simulated nodes' logical NeuronCore config (default: the type's)
#   --simulate-fault=F    a fault in the first node's driver files from the start (repeatable;
#                         see neuron-ls --help)
#   --reset-time=D        how long a simulated device reset takes (default 300ms; the nodes'
#                         neuron-sim-driver)
#   --no-torus            start the cluster only; do not build the image or install the chart
#   --fake-nodes=T:N,...  add N fake nodes of type T (kwok), e.g. trn2.48xlarge:1000,inf2.48xlarge:200,
#                         carrying what the node agent would publish (needs build/bin/neuron-ls)
#   --dra                 the real nodes run the DRA driver neuron.aws.com instead of the
#                         device plugin (labelled torus.dev/neuron-mode=dra; DeviceClasses
#                         installed); fake nodes keep the device plugin's resources
#   --dra-nodes=T:N,...   add N fake DRA nodes of type T (kwok): labelled torus.dev/neuron-mode=dra,
#                         no device-plugin resources, and the ResourceSlices the driver publishes
#                         for the type (DeviceClasses installed); with --fake-nodes, a mixed cluster
#   --set key=value       passed to `helm install` (repeatable)
#   --control-plane-qps=QPS:BURST  the API client rate limit of kube-controller-manager, kube-scheduler
#                         and neuron-scheduler (default: each one's own, 20:30 and 50:100); DRA
#                         wants 150:300 (docs/install.md, "Control-plane settings for DRA")
#   --node-monitor-grace-period=DUR  how long a node may miss heartbeats before the controller
#                         manager marks it NotReady (default 20s, so node-loss tests run quickly;
#                         upstream's is 50s; the scheduling benchmark uses 2m with 240 s Leases)
#   --fake-node-lease-seconds=N  the Lease duration of kwok's fake nodes (default 40, a kubelet's;
#                         each renews every N/4 s); the scheduling benchmark uses 240 so that a
#                         thousand nodes' heartbeats do not take the CPUs it measures on
#   --scheduler-feature-gates=G=true,...  feature gates for the cluster's kube-scheduler (the DRA
#                         path's scheduler), e.g. SchedulerPreQueueingHints=true
#   --placers=LIST        also run these placers on Torus's labels, built from their Go modules
#                         (kueue, lws; e.g. --placers=kueue,lws): their webhooks act only in
#                         namespaces labelled torus.dev/placers=enabled (docs/gangs.md)
# Options of every command:
#   --state-dir=DIR       where state, logs, pids and the kubeconfig live
#                         (default ~/.cache/torus/local-cluster; tests use a fresh directory)
#
# Components: kube-apiserver, kube-controller-manager, kube-scheduler and a kubelet per node at
# the pinned version; etcd, containerd 2 (one per node) and runc from their Go modules; the CNI
# bridge plugin from Debian.
# Torus's image is built from the Dockerfile by podman. The first `up` on a machine builds
# Kubernetes (about 10 minutes on 2 cores) and the image (about 10 more); later runs use the cache.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
# The comment block at the top of this file, without its '#'.
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
source "$REPO/scripts/cluster/versions.sh"
source "$REPO/scripts/cluster/processes.sh"
source "$REPO/scripts/cluster/nodes.sh"

command="${1:-}"
[[ -n "$command" ]] && shift
RESTART_NAME=""
if [[ "$command" =~ ^(restart|stop|start|shell)$ && $# -gt 0 && "$1" != -* ]]; then
  RESTART_NAME="$1"
  shift
fi
SHELL_COMMAND=()
STATE="$TORUS_CACHE/local-cluster"
NODES="trn2.48xlarge:1"
LNC=""
SIMULATE_FAULTS=()
RESET_TIME="300ms"
INSTALL_TORUS=1
FAKE_NODES=""
DRA_NODES=""
DRA=0
HELM_SETS=()
PLACERS=""
CONTROL_PLANE_QPS=""
SCHEDULER_GATES=""
NODE_MONITOR_GRACE=20s
FAKE_NODE_LEASE_SECONDS=40
while [[ $# -gt 0 ]]; do
  # shell NODE COMMAND...: once the command began, every argument is its (but --state-dir).
  if ((${#SHELL_COMMAND[@]})) && [[ "$1" != --state-dir=* ]]; then
    SHELL_COMMAND+=("$1")
    shift
    continue
  fi
  case "$1" in
    --k8s-version=*) K8S_VERSION="${1#*=}" ;;
    --nodes=*) NODES="${1#*=}" ;;
    --instance-type=*) NODES="${1#*=}:1" ;;
    --lnc=*) LNC="${1#*=}" ;;
    --simulate-fault=*) SIMULATE_FAULTS+=("${1#*=}") ;;
    --reset-time=*) RESET_TIME="${1#*=}" ;;
    --no-torus) INSTALL_TORUS=0 ;;
    --fake-nodes=*) FAKE_NODES="${1#*=}" ;;
    --dra-nodes=*) DRA_NODES="${1#*=}" ;;
    --dra) DRA=1 ;;
    --set) HELM_SETS+=(--set "$2"); shift ;;
    --set=*) HELM_SETS+=(--set "${1#*=}") ;;
    --control-plane-qps=*)
      CONTROL_PLANE_QPS="${1#*=}"
      [[ "$CONTROL_PLANE_QPS" =~ ^[1-9][0-9]*:[1-9][0-9]*$ ]] ||
        { echo "local-cluster: --control-plane-qps takes QPS:BURST (e.g. 150:300), not '$CONTROL_PLANE_QPS'" >&2; exit 2; } ;;
    --node-monitor-grace-period=*)
      NODE_MONITOR_GRACE="${1#*=}"
      [[ "$NODE_MONITOR_GRACE" =~ ^[1-9][0-9]*(s|m)$ ]] ||
        { echo "local-cluster: --node-monitor-grace-period takes a duration such as 50s or 2m, not '$NODE_MONITOR_GRACE'" >&2; exit 2; } ;;
    --fake-node-lease-seconds=*)
      FAKE_NODE_LEASE_SECONDS="${1#*=}"
      [[ "$FAKE_NODE_LEASE_SECONDS" =~ ^[1-9][0-9]*$ ]] ||
        { echo "local-cluster: --fake-node-lease-seconds takes whole seconds, not '$FAKE_NODE_LEASE_SECONDS'" >&2; exit 2; } ;;
    --scheduler-feature-gates=*)
      SCHEDULER_GATES="${1#*=}"
      [[ "$SCHEDULER_GATES" =~ ^[A-Za-z0-9]+=(true|false)(,[A-Za-z0-9]+=(true|false))*$ ]] ||
        { echo "local-cluster: --scheduler-feature-gates takes Name=true|false,... (e.g. SchedulerPreQueueingHints=true), not '$SCHEDULER_GATES'" >&2; exit 2; } ;;
    --placers=*)
      PLACERS="${1#*=}"
      [[ "$PLACERS" =~ ^(kueue|lws)(,(kueue|lws))*$ ]] ||
        { echo "local-cluster: --placers takes kueue, lws or both (kueue,lws), not '$PLACERS'" >&2; exit 2; } ;;
    --state-dir=*) STATE="${1#*=}" ;;
    -h | --help) usage; exit 0 ;;
    *)
      if [[ "$command" == shell ]]; then
        SHELL_COMMAND=("$1")
        shift
        continue
      fi
      echo "local-cluster: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
# Each node mounts its own /dev and /sys (and /proc) over the host's: state under them is hidden
# from the node (its kubelet then cannot find its own directories). Only `up` refuses: `down`
# still cleans up a cluster someone started there.
[[ "$command" == up ]] && case "$(realpath -m "$STATE")/" in
  /dev/* | /sys/* | /proc/*)
    echo "local-cluster: --state-dir=$STATE is under /dev, /sys or /proc, which each node" \
      "replaces with its own; choose a directory elsewhere (for example under /var/tmp)" >&2
    exit 2 ;;
esac
mkdir -p "$STATE"
STATE="$(cd "$STATE" && pwd)"

K8S_BIN="$TORUS_CACHE/k8s-$K8S_VERSION/bin"
# Upstream's gang API (scheduling.k8s.io/v1beta1 PodGroup and a pod's spec.schedulingGroup) is
# beta but off in 1.37: this cluster turns it on in the API server, kube-controller-manager (whose
# PodGroup protection controller removes a deleted PodGroup's finalizer) and neuron-scheduler, as
# an operator who wants PodGroups would (docs/gangs.md). Older versions run without it.
WORKLOAD_GATES=()
k8s_minor="${K8S_VERSION#v1.}"
k8s_minor="${k8s_minor%%.*}"
if [[ "$k8s_minor" =~ ^[0-9]+$ ]] && ((k8s_minor >= 37)); then
  WORKLOAD_GATES=(--feature-gates=GenericWorkload=true)
fi
CONTAINERD_BIN="$TORUS_CACHE/containerd-$CONTAINERD_VERSION/bin"
ETCD_BIN="$TORUS_CACHE/etcd-$ETCD_VERSION/bin"
RUNC_BIN="$TORUS_CACHE/runc-$RUNC_VERSION/bin"
PKI="$STATE/pki"
KUBECONFIG_FILE="$STATE/kubeconfig"
HELM="$REPO/build/tools/helm"
SERVICE_IP="10.96.0.1"
# One cgroup per state directory (a node's under it), so two clusters never share one.
CGROUP_NAME="torus-$(printf '%s' "$STATE" | sha256sum | cut -c1-8)"
# The network namespace the nodes' veths come back to: this script's.
HOST_NETNS_PID=$$
source "$REPO/scripts/cluster/pki.sh"
source "$REPO/scripts/cluster/config.sh"
source "$REPO/scripts/cluster/images.sh"
source "$REPO/scripts/cluster/placers.sh"

kubectl_() { "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

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
  # It listens on the nodes' bridge. Nothing here implements Services (no kube-proxy), so its
  # endpoint reconciler is off and pods reach it through KUBERNETES_SERVICE_HOST.
  start_process kube-apiserver "$K8S_BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address "$APISERVER_HOST" --advertise-address "$APISERVER_HOST" \
    --secure-port "$APISERVER_PORT" \
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
    --audit-log-maxsize 200 --audit-log-maxbackup 1 \
    "${WORKLOAD_GATES[@]}" ${WORKLOAD_GATES[0]:+--runtime-config=scheduling.k8s.io/v1beta1=true}
  wait_for kube-apiserver 90 curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" \
    --key "$PKI/admin.key" "https://$APISERVER_HOST:$APISERVER_PORT/readyz"
}

start_control_plane() {
  # --control-plane-qps: the same limit for the controller manager and the cluster's scheduler
  # (neuron-scheduler gets it through the chart's scheduler.clientConnection).
  local client_limits=()
  [[ -z "$CONTROL_PLANE_QPS" ]] ||
    client_limits=(--kube-api-qps "${CONTROL_PLANE_QPS%:*}" --kube-api-burst "${CONTROL_PLANE_QPS#*:}")
  write_kubeconfig "$STATE/controller-manager.kubeconfig" controller-manager
  write_kubeconfig "$STATE/scheduler.kubeconfig" scheduler
  start_process kube-controller-manager "$K8S_BIN/kube-controller-manager" \
    --kubeconfig "$STATE/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$STATE/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$STATE/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$CONTROLLER_MANAGER_PORT" --leader-elect=false \
    --node-monitor-grace-period "$NODE_MONITOR_GRACE" "${WORKLOAD_GATES[@]}" \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --use-service-account-credentials=true \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    "${client_limits[@]}"
  start_process kube-scheduler "$K8S_BIN/kube-scheduler" \
    --kubeconfig "$STATE/scheduler.kubeconfig" \
    --authentication-kubeconfig "$STATE/scheduler.kubeconfig" \
    --authorization-kubeconfig "$STATE/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --leader-elect=false \
    "${client_limits[@]}" ${SCHEDULER_GATES:+--feature-gates="$SCHEDULER_GATES"}
  wait_for kube-controller-manager 60 curl -sfk "https://127.0.0.1:$CONTROLLER_MANAGER_PORT/healthz"
  wait_for kube-scheduler 60 curl -sfk "https://127.0.0.1:$SCHEDULER_PORT/healthz"
}

# One cluster at a time: the nodes' bridge and addresses are fixed.
check_free() {
  if ip link show "$NODES_BRIDGE" > /dev/null 2>&1; then
    die "the bridge $NODES_BRIDGE exists: another local cluster runs (scripts/local-cluster.sh status --state-dir=...), or one was not taken down"
  fi
}

# Values for this cluster, on top of the chart's production defaults: the image, where the API
# is (no kube-proxy implements the kubernetes Service here) and so the host's network, the
# extender and neuron-scheduler side by side on the first node. The node agent's mounts,
# capabilities and driver paths are the production ones (tests/e2e/cluster checks the diff).
write_local_values() {
  local env first_node="${NODE_NAMES[0]}"
  env="$(printf '[{"name": "KUBERNETES_SERVICE_HOST", "value": "%s"}, {"name": "KUBERNETES_SERVICE_PORT", "value": "%s"}]' "$APISERVER_HOST" "$APISERVER_PORT")"
  cat > "$STATE/values-local.yaml" <<YAML
image:
  repository: ${TORUS_IMAGE%:*}
  tag: ${TORUS_IMAGE##*:}
  pullPolicy: Never
nodeAgent:
  hostNetwork: true
  extraEnv: $env

dra:
  enabled: $( ((DRA)) || [[ -n "$DRA_NODES" ]] && echo true || echo false)

ultraserverOperator:  # used when a test or --set enables it
  extraEnv: $env

extender:
  hostNetwork: true
  port: $EXTENDER_PORT
  serveState: true  # the tests and the demo read it; only this machine reaches the bridge
  extraEnv: $env
  nodeSelector: {kubernetes.io/hostname: $first_node}
scheduler:
  hostNetwork: true
  securePort: $NEURON_SCHEDULER_PORT
  extenderURL: http://$(node_ip 1):$EXTENDER_PORT
  extraEnv: $env
  extraArgs: [${WORKLOAD_GATES[0]:-}]
  nodeSelector: {kubernetes.io/hostname: $first_node}
  clientConnection: {$([[ -z "$CONTROL_PLANE_QPS" ]] || echo "qps: ${CONTROL_PLANE_QPS%:*}, burst: ${CONTROL_PLANE_QPS#*:}")}
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
  # As many Nodes as the specs ask for (fake-nodes.py has checked each TYPE:COUNT).
  local count=0 part
  for part in ${FAKE_NODES//,/ } ${DRA_NODES//,/ }; do count=$((count + 10#${part##*:})); done
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
  # Each fake node renews a Lease, as a kubelet does: every 10 s, a quarter of its 40 s duration
  # (--fake-node-lease-seconds). kwok renews none unless its configuration says so, and such a
  # configuration must then set every parallelism kwok would otherwise default. Without Leases the
  # heartbeat stage above updates a node's status only every 10-20 minutes, and the controller
  # manager marks healthy nodes NotReady, taints them and marks their pods NotReady (thousands of
  # writes a run that real nodes do not cause). A thousand nodes make about 100 renewals a second:
  # one in flight per 16 nodes.
  local parallelism=$((count / 16 + 4))
  cat > "$STATE/kwok-config.yaml" <<YAML
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  nodeLeaseDurationSeconds: $FAKE_NODE_LEASE_SECONDS
  nodeLeaseParallelism: $parallelism
  nodePlayStageParallelism: 4
  podPlayStageParallelism: 4
  podsOnNodeSyncParallelism: 1
YAML
  configs+=(--config "$STATE/kwok-config.yaml")
  start_process kwok "$TORUS_CACHE/kwok-$KWOK_VERSION/bin/kwok" --kubeconfig "$KUBECONFIG_FILE" \
    "${configs[@]}" --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --cidr=10.89.0.0/16 --node-ip=127.0.0.1
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
  local names="${NODE_NAMES[*]}" ips="" index
  for ((index = 1; index <= ${#NODE_NAMES[@]}; index++)); do ips+="${ips:+ }$(node_ip "$index")"; done
  # NODE_* and the paths below name the first node; NODE_NAMES/NODE_IPS list all of them.
  cat > "$STATE/cluster.env" <<ENV
K8S_VERSION=$K8S_VERSION
NODE_NAME=${NODE_NAMES[0]}
NODE_IP=$(node_ip 1)
INSTANCE_TYPE=${NODE_TYPES[0]}
NODE_NAMES="$names"
NODE_IPS="$ips"
NODES_DIR=$STATE/nodes
APISERVER_HOST=$APISERVER_HOST
APISERVER_PORT=$APISERVER_PORT
ETCD_PORT=$ETCD_PORT
ETCD_PEER_PORT=$ETCD_PEER_PORT
CONTROLLER_MANAGER_PORT=$CONTROLLER_MANAGER_PORT
SCHEDULER_PORT=$SCHEDULER_PORT
NEURON_SCHEDULER_PORT=$NEURON_SCHEDULER_PORT
EXTENDER_HOST=$(node_ip 1)
EXTENDER_PORT=$EXTENDER_PORT
AGENT_METRICS_PORT=$AGENT_METRICS_PORT
KUBECONFIG=$KUBECONFIG_FILE
KUBECTL=$K8S_BIN/kubectl
KUBELET_ROOT=$(node_dir "${NODE_NAMES[0]}")/kubelet
CONTAINERD_SOCKET=$(node_dir "${NODE_NAMES[0]}")/containerd/containerd.sock
CTR=$CONTAINERD_BIN/ctr
SIMULATED_NODE_DIR=$(node_dir "${NODE_NAMES[0]}")/driver
DRA=$DRA
CDI_DIR=$(node_dir "${NODE_NAMES[0]}")/cdi
ENV
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
  [[ -n "$RESTART_NAME" ]] || die "shell needs a node name (see status)"
  [[ -e "$(node_dir "$RESTART_NAME")/ns/mnt" ]] || die "no node $RESTART_NAME in $STATE (see status)"
  ((${#SHELL_COMMAND[@]})) || SHELL_COMMAND=(bash)
  node_run "$RESTART_NAME" "${SHELL_COMMAND[@]}"
}

case "$command" in
  up) up ;;
  restart)
    [[ -n "$RESTART_NAME" ]] || die "restart needs a component name (see status)"
    restart_process "$RESTART_NAME"
    log "restarted $RESTART_NAME (log: $STATE/logs/$RESTART_NAME.log)"
    ;;
  stop)
    [[ -n "$RESTART_NAME" ]] || die "stop needs a component name (see status)"
    [[ -f "$STATE/pids/$RESTART_NAME.cmd" ]] || die "no process named $RESTART_NAME was started from $STATE"
    stop_process "$RESTART_NAME"
    log "stopped $RESTART_NAME (scripts/local-cluster.sh start $RESTART_NAME brings it back)"
    ;;
  start)
    [[ -n "$RESTART_NAME" ]] || die "start needs a component name (see status)"
    start_recorded "$RESTART_NAME"
    # A kubelet started next must find the runtime serving: it exits if it does not.
    if [[ "$RESTART_NAME" == containerd-* ]]; then
      wait_for "$RESTART_NAME" 30 "$TORUS_CACHE/containerd-$CONTAINERD_VERSION/bin/ctr" \
        --address "$(node_dir "${RESTART_NAME#containerd-}")/containerd/containerd.sock" version
    fi
    log "started $RESTART_NAME (log: $STATE/logs/$RESTART_NAME.log)"
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
  -h | --help | "") usage; [[ -n "$command" ]] ;;
  *) echo "local-cluster: unknown command '$command' (up, down, status, image, restart, stop, start, shell)" >&2; exit 2 ;;
esac
