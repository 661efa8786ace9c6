# Configuration files of the local cluster's daemons (sourced by local-cluster.sh).

write_containerd_config() {
  mkdir -p "$STATE/containerd" "$STATE/cni/net.d" "$STATE/cdi"
  # Pods without hostNetwork get an address on a bridge of their own (containerd wants an IP
  # for every sandbox); nothing routes off this machine. Torus's own pods use the host's network.
  cat > "$STATE/cni/net.d/10-torus-local.conflist" <<CNI
{
  "cniVersion": "1.0.0",
  "name": "torus-local",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE_NAME", "isGateway": true, "ipMasq": false,
     "ipam": {"type": "host-local", "dataDir": "$STATE/cni/ipam",
              "ranges": [[{"subnet": "$POD_SUBNET"}]], "routes": [{"dst": "$POD_SUBNET"}]}},
    {"type": "loopback"}
  ]
}
CNI
  cat > "$STATE/containerd/config.toml" <<TOML
version = 3
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"
disabled_plugins = ["io.containerd.nri.v1.nri"]

[grpc]
  address = "$CONTAINERD_SOCKET"

[ttrpc]
  address = "$CONTAINERD_SOCKET.ttrpc"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$PAUSE_IMAGE"

[plugins.'io.containerd.cri.v1.runtime']
  # This machine refuses a negative oom_score_adj even to root, and the kubelet asks for one
  # (-998 for every sandbox); containers get at least containerd's own instead.
  restrict_oom_score_adj = true
  enable_cdi = true
  cdi_spec_dirs = ["$STATE/cdi"]
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$RUNC_BIN/runc"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$STATE/cni/net.d"

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
TOML
}

write_kubelet_config() {
  mkdir -p "$KUBELET_ROOT"
  cat > "$STATE/kubelet-config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://$CONTAINERD_SOCKET
# This machine may run cgroup v1, which kubelets since 1.35 refuse unless told otherwise.
failCgroupV1: false
cgroupDriver: cgroupfs
# Everything the kubelet creates lives under one cgroup that 'down' removes.
cgroupRoot: /$CGROUP_NAME
failSwapOn: false
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
serializeImagePulls: false
# A test machine's disk and memory are small and shared: evict only when nearly out.
evictionHard:
  memory.available: 50Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
nodeStatusUpdateFrequency: 4s
syncFrequency: 10s
YAML
}

write_audit_policy() {
  # Metadata for every request: which identity did what, and with which result code. The e2e
  # tests read it to prove no Torus component was ever refused (403).
  cat > "$STATE/audit-policy.yaml" <<YAML
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
YAML
}
