# Configuration files of the local cluster's daemons (sourced by local-cluster.sh).
# Reads: STATE, PKI, RUNC_BIN, CGROUP_NAME (local-cluster.sh), NODES_PREFIX, POD_PREFIX (nodes.sh),
# PAUSE_IMAGE (images.sh).

# write_containerd_config NODE_DIR POD_SUBNET: the node's containerd and its pod network.
write_containerd_config() {
  local dir="$1" subnet="$2"
  mkdir -p "$dir/containerd" "$dir/cni/net.d"
  # Pods without hostNetwork get an address on the node's own bridge (inside its network
  # namespace), routed to the other nodes' pods and to the API server through the node.
  cat > "$dir/cni/net.d/10-torus-local.conflist" <<CNI
{
  "cniVersion": "1.0.0",
  "name": "torus-local",
  "plugins": [
    {"type": "bridge", "bridge": "torus-br0", "isGateway": true, "ipMasq": false,
     "ipam": {"type": "host-local", "dataDir": "$dir/cni/ipam",
              "ranges": [[{"subnet": "$subnet"}]],
              "routes": [{"dst": "$POD_PREFIX.0.0/16"}, {"dst": "$NODES_PREFIX.0/24"}]}},
    {"type": "loopback"}
  ]
}
CNI
  cat > "$dir/containerd/config.toml" <<TOML
version = 3
root = "$dir/containerd/root"
state = "$dir/containerd/state"
disabled_plugins = ["io.containerd.nri.v1.nri"]

[grpc]
  address = "$dir/containerd/containerd.sock"

[ttrpc]
  address = "$dir/containerd/containerd.sock.ttrpc"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$PAUSE_IMAGE"

[plugins.'io.containerd.cri.v1.runtime']
  # A host in a container refuses a negative oom_score_adj even to root, and the kubelet asks
  # for one (-998 for every sandbox); containers get at least containerd's own instead.
  restrict_oom_score_adj = true
  enable_cdi = true
  # The node's own /var/run/cdi (a directory of its mount namespace), where the DRA driver
  # writes its specs as on any node.
  cdi_spec_dirs = ["/var/run/cdi"]
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$RUNC_BIN/runc"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$dir/cni/net.d"

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
TOML
}

# write_kubelet_config NODE_DIR NODE_IP NODE_NAME: the kubelet of one node. It runs in the node's
# namespaces, so it has the standard ports and /var/lib/kubelet to itself.
write_kubelet_config() {
  local dir="$1" ip="$2" name="$3"
  cat > "$dir/kubelet-config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $PKI/kubelet-serving-$name.crt
tlsPrivateKeyFile: $PKI/kubelet-serving-$name.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://$dir/containerd/containerd.sock
# The local host may run cgroup v1, which kubelets since 1.35 refuse unless told otherwise.
failCgroupV1: false
cgroupDriver: cgroupfs
# Everything the kubelet creates lives under one cgroup that 'down' removes.
cgroupRoot: /$CGROUP_NAME/$name
failSwapOn: false
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
serializeImagePulls: false
# A test host's disk and memory are small and shared: evict only when nearly out.
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
