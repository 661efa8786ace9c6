# The local cluster's control plane (sourced by local-cluster.sh): etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler as processes of the host, at the pinned version, the
# API server on the nodes' bridge; and cluster.env, where the tests and the demo find it all.
#
# Reads: TORUS_CACHE, K8S_VERSION, ETCD_VERSION (versions.sh), STATE, K8S_BIN, CONTAINERD_BIN, PKI,
# KUBECONFIG_FILE (local-cluster.sh), CONTROL_PLANE_QPS, SCHEDULER_GATES, NODE_MONITOR_GRACE, DRA
# (options.sh), APISERVER_HOST, NODE_NAMES, NODE_TYPES (nodes.sh), and the ports up() picks:
# APISERVER_PORT, ETCD_PORT, ETCD_PEER_PORT, CONTROLLER_MANAGER_PORT, SCHEDULER_PORT,
# NEURON_SCHEDULER_PORT, EXTENDER_PORT, AGENT_METRICS_PORT.
# Sets: ETCD_BIN, WORKLOAD_GATES (read by torus.sh too).

ETCD_BIN="$TORUS_CACHE/etcd-$ETCD_VERSION/bin"
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

kubectl_() { "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

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

# write_env_file: $STATE/cluster.env, the cluster's addresses and paths for the tests and the demo.
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
