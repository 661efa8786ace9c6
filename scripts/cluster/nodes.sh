# The local cluster's real nodes (sourced by local-cluster.sh). Each node is a kubelet and a
# containerd in a mount, a network, a UTS and a PID namespace of their own, so every node has what
# a machine has once: its processes, kubelet's fixed paths (/var/lib/kubelet, /var/log/pods), the
# CDI and netns directories, an address (10.87.0.(10+i) on the bridge torus-nodes, whose host end
# 10.87.0.1 is where the API server listens) and, at the paths the Neuron driver uses, the
# simulated driver's files: /sys/class/neuron_device, /sys/devices/virtual/neuron_device, the PCI
# functions, DMI, /dev/neuronN, /opt/aws/neuron. The agent then runs with the chart's production
# values.
#
# Layout of $STATE/nodes/NAME/:
#   ns/{mnt,net,uts,pid}  the node's namespaces (bind-mounted); UTS: its own host name; PID: its
#                  own processes, under an init (node-NAME) whose end ends them all
#   driver/        the simulator's tree: sys/, dev/, opt/ (what tests write faults into)
#   kubelet/ pod-logs/ container-logs/ cdi/ netns/ run-containerd/   what the node sees at the
#                  fixed paths (run-containerd: the runtime shims' sockets)
#   sim-driver/    where neuron-sim-driver serves the devices' directory, in the node only
#   containerd/ cni/                                  its runtime's config and state
#
# Reads: REPO, STATE, K8S_BIN, CONTAINERD_BIN, CGROUP_NAME, HOST_NETNS_PID (local-cluster.sh), LNC,
# SIMULATE_FAULTS, RESET_TIME (options.sh), PAUSE_IMAGE (images.sh).
# Sets: NODES_BRIDGE, NODES_PREFIX, APISERVER_HOST, POD_PREFIX and, by parse_nodes, NODE_NAMES,
# NODE_TYPES, NODE_PLACES, NODE_ULTRASERVERS (read by the other helpers).

NODES_BRIDGE="torus-nodes"
NODES_PREFIX="10.87.0"
APISERVER_HOST="$NODES_PREFIX.1"
# Pods without hostNetwork: 10.88.i.0/24 on node i, routed between nodes over the bridge.
POD_PREFIX="10.88"

NODE_NAMES=()
NODE_TYPES=()
NODE_PLACES=()  # trn2u: SERIAL:POSITION in its simulated UltraServer; empty otherwise
NODE_ULTRASERVERS=()

# parse_nodes SPEC: TYPE:N[@ULTRASERVER],... into the NODE_* arrays (nodes named torus-node-1...).
parse_nodes() {
  local item type count group index
  local -A positions=()
  for item in ${1//,/ }; do
    [[ "$item" =~ ^([a-z0-9.]+):([0-9]+)(@([a-z0-9-]+))?$ ]] ||
      die "--nodes: '$item' is not TYPE:N[@ULTRASERVER] (e.g. trn2u.48xlarge:4@us0)"
    type="${BASH_REMATCH[1]}" count="${BASH_REMATCH[2]}" group="${BASH_REMATCH[4]}"
    ((count >= 1)) || die "--nodes: '$item' asks for no node"
    if [[ -n "$group" && "$type" != trn2u.* ]]; then
      die "--nodes: '$item': only trn2u nodes are part of an UltraServer"
    fi
    for ((index = 0; index < count; index++)); do
      NODE_NAMES+=("torus-node-$((${#NODE_NAMES[@]} + 1))")
      NODE_TYPES+=("$type")
      NODE_ULTRASERVERS+=("$group")
      if [[ -n "$group" ]]; then
        local position="${positions[$group]:-0}"
        ((position < 4)) || die "--nodes: UltraServer $group has more than four nodes"
        positions[$group]=$((position + 1))
        # The UltraServer's serial number, stable for its name.
        NODE_PLACES+=("$(printf 'torus-ultraserver-%s' "$group" | sha256sum | cut -c1-15)1:$position")
      else
        NODE_PLACES+=("")
      fi
    done
  done
  ((${#NODE_NAMES[@]} >= 1)) || die "--nodes: no node"
  ((${#NODE_NAMES[@]} <= 200)) || die "--nodes: at most 200 real nodes"
}

node_dir() { echo "$STATE/nodes/$1"; }
node_ip() { echo "$NODES_PREFIX.$((10 + $1))"; }  # by index, 1-based
# node_enter NAME: the command prefix that runs a program inside the node's namespaces (nsenter
# forks it into the node's PID namespace and waits: stopping nsenter's process group stops it).
node_enter() {
  local ns
  ns="$(node_dir "$1")/ns"
  echo nsenter "--mount=$ns/mnt" "--net=$ns/net" "--uts=$ns/uts" "--pid=$ns/pid" --
}
node_run() {
  local name="$1"
  shift
  $(node_enter "$name") "$@"
}
# node_net NAME COMMAND...: COMMAND in the node's network namespace only (host pids stay visible).
node_net() {
  local name="$1"
  shift
  nsenter --net="$(node_dir "$name")/ns/net" -- "$@"
}

make_nodes_bridge() {
  ip link add "$NODES_BRIDGE" type bridge
  ip addr add "$APISERVER_HOST/24" dev "$NODES_BRIDGE"
  ip link set "$NODES_BRIDGE" up
}

# The driver's files as the simulator writes them for the node (the real driver's layout), with
# the node's place in its UltraServer. Faults go into driver/ while the node runs.
write_driver_tree() {
  local index="$1" name="${NODE_NAMES[$1 - 1]}" dir
  dir="$(node_dir "$name")/driver"
  # A PCI domain of its own (node 1: 0001, node 2: 0002): the nodes share one kernel log, and an
  # agent acts only on the driver lines that name its own PCI functions.
  local args=(--simulate="${NODE_TYPES[$index - 1]}" --simulate-dir="$dir"
    --simulate-pci-domain="$index") fault
  [[ -z "$LNC" ]] || args+=(--lnc="$LNC")
  [[ -z "${NODE_PLACES[$index - 1]}" ]] || args+=(--simulate-ultraserver="${NODE_PLACES[$index - 1]}")
  if ((index == 1)); then
    for fault in "${SIMULATE_FAULTS[@]}"; do args+=(--simulate-fault="$fault"); done
  fi
  "$REPO/build/bin/neuron-ls" "${args[@]}" > "$STATE/logs/$name-driver.log" 2>&1 ||
    { cat "$STATE/logs/$name-driver.log" >&2; die "cannot write $name's driver tree"; }
  [[ ! -f "$dir/dev/kmsg" ]] || replay_driver_log "$dir/dev/kmsg"
}

# The lines the simulated driver logged while loading (its "** BDF: ... => nd[N]" per device),
# written into the kernel's log, where a real driver writes them and the node's agent reads them
# back (syslog(2)) to learn which PCI function each device is. Records are "LEVEL,SEQ,USEC,-;TEXT".
replay_driver_log() {
  local record
  while IFS= read -r record; do
    if [[ -n "$record" ]]; then printf '<%s>%s\n' "${record%%,*}" "${record#*;}" > /dev/kmsg; fi
  done < "$1"
}

# The node's /dev: the simulator's dev/ (neuronN) completed with the host's device nodes, and
# /dev's own mounts (pts, shm). Its kmsg is the kernel's (1:11), not the simulator's file: a
# container's device rules refuse it as on a real node, and tests write driver lines to the
# kernel's log, which the agent follows through syslog(2).
complete_dev() {
  local dev="$1" entry
  # The driver's load lines are in the kernel's log now (replay_driver_log); tests read the copy.
  [[ ! -f "$dev/kmsg" ]] || mv -f "$dev/kmsg" "$dev/../driver-load.kmsg"
  for entry in /dev/*; do
    [[ -e "$dev/${entry#/dev/}" || -L "$dev/${entry#/dev/}" ]] && continue
    if mountpoint -q "$entry"; then
      mkdir -p "$dev/${entry#/dev/}"
    else
      cp -a "$entry" "$dev/"
    fi
  done
}

# The mounts inside a node's mount namespace (runs there, as root).
NODE_MOUNTS_SCRIPT='
set -euo pipefail
node="$1" driver="$1/driver"
# The processes of this node only (this runs in its PID namespace).
mount -t proc proc /proc
# Paths every node has once.
mount --bind "$node/kubelet" /var/lib/kubelet
mount --bind "$node/pod-logs" /var/log/pods
mount --bind "$node/container-logs" /var/log/containers
mount --bind "$node/cdi" /run/cdi
mount --bind "$node/netns" /run/netns
mount --bind "$node/run-containerd" /run/containerd
mount --bind "$node/torus-state" /var/lib/torus
mount --bind "$driver/opt/aws" /opt/aws
# The simulated driver files, merged over the real sysfs at their real paths, read-only as sysfs
# is to the agent (the chart mounts /sys read-only). Each merge sits at the deepest directory the
# host already has (a PCIe root the host lacks merges at /sys/devices; "pci0000:10" needs its
# colon escaped for overlayfs).
merged=()
roots=()
for root in "$driver"/sys/devices/pci*; do [[ -d "$root" ]] && roots+=("devices/${root##*/}"); done
for part in class module bus/pci/drivers bus/pci/devices "${roots[@]}" devices/virtual; do
  [[ -e "$driver/sys/$part" ]] || continue
  at="$part"
  while [[ ! -d "/sys/$at" ]]; do at="$(dirname "$at")"; done
  covered=0
  for done_at in "${merged[@]}"; do [[ "$at/" == "$done_at/"* ]] && covered=1; done
  ((covered)) && continue
  mount -t overlay overlay -o "lowerdir=${driver//:/\\:}/sys/${at//:/\\:}:/sys/${at//:/\\:}" "/sys/$at"
  merged+=("$at")
done
# neuronN/reset, the one writable file, comes from neuron-sim-driver (create_node binds it over).
# /dev: its own mounts first, then the whole tree.
while read -r target; do
  mount --bind "$target" "$driver$target"
done < <(awk '\''$5 ~ "^/dev/" {print $5}'\'' /proc/self/mountinfo | sort -u)
mount --rbind "$driver/dev" /dev
# Kubelet wants its root shared (mount propagation); the namespace began as a slave of the host,
# so nothing mounted here reaches the host.
mount --make-rshared /
'

# create_node INDEX: the node's directories, namespaces, mounts and address.
create_node() {
  local index="$1" name="${NODE_NAMES[$1 - 1]}" dir ip
  dir="$(node_dir "$name")"
  ip="$(node_ip "$index")"
  mkdir -p "$dir"/{ns,driver,sim-driver,kubelet,pod-logs,container-logs,cdi,netns,run-containerd,containerd,cni,torus-state}
  # sysfs lives in memory, and so do its stand-in's ~13,000 files: on this disk they take seconds.
  mount -t tmpfs -o mode=0755,size=256m "torus-$name-driver" "$dir/driver"
  write_driver_tree "$index"
  complete_dev "$dir/driver/dev"
  mount --bind "$dir/ns" "$dir/ns"
  mount --make-private "$dir/ns"
  touch "$dir/ns/mnt" "$dir/ns/net" "$dir/ns/uts" "$dir/ns/pid"
  # The node's init: PID 1 of its PID namespace, so the node's processes (kubelet, containerd,
  # its pods; what a hostPID pod sees) are its own. When it stops, every process of the node goes.
  start_process "node-$name" unshare --mount="$dir/ns/mnt" --net="$dir/ns/net" --uts="$dir/ns/uts" \
    --pid="$dir/ns/pid" --fork --kill-child --propagation slave sleep infinity
  wait_for "node-$name" 10 node_run "$name" true
  node_run "$name" hostname "$name"
  node_run "$name" bash -c "$NODE_MOUNTS_SCRIPT" node-mounts "$dir" ||
    die "cannot set up $name's mounts"
  # Each neuronN/reset as the driver serves it: a reset that takes time, can fail (reset-fail,
  # reset-slow faults) and is ignored while a process of the node holds the device; a plain file
  # would be kinder than a real node. neuron-sim-driver serves the devices' directory in the
  # node's namespace only, and each reset file is bound from there over the read-only overlay; the
  # other attributes stay on the overlay, where reading thousands of counters per scrape is as
  # fast as sysfs (through FUSE it took seconds).
  start_process "driver-$name" $(node_enter "$name") "$REPO/build/bin/neuron-sim-driver" \
    --tree="$dir/driver" --mountpoint="$dir/sim-driver" --reset-time="$RESET_TIME"
  wait_for "driver-$name" 10 node_run "$name" findmnt -n -t fuse "$dir/sim-driver"
  node_run "$name" sh -c "for device in $dir/sim-driver/neuron*; do
    mount --bind \"\$device/reset\" \"/sys/devices/virtual/neuron_device/\${device##*/}/reset\"
  done" || die "cannot bind $name's reset files"
  # Its address: a veth whose far end joins the bridge (interface names hold 15 characters).
  local outside="torus-v$index"
  node_net "$name" ip link add eth0 type veth peer name "$outside" netns "$HOST_NETNS_PID"
  ip link set "$outside" master "$NODES_BRIDGE" up
  node_net "$name" sh -c "ip link set lo up && ip addr add $ip/24 dev eth0 && ip link set eth0 up &&
    sysctl -qw net.ipv4.ip_forward=1"
  # Pods of the other nodes, through their node; the host reaches every node's pods too.
  local other
  for ((other = 1; other <= ${#NODE_NAMES[@]}; other++)); do
    ((other == index)) && continue
    node_net "$name" ip route add "$POD_PREFIX.$other.0/24" via "$(node_ip "$other")"
  done
  ip route add "$POD_PREFIX.$index.0/24" via "$ip" dev "$NODES_BRIDGE"
}

# The kubelet puts pods under cgroupRoot but does not create it. On cgroup v1 a new cpuset
# starts empty, so it inherits the parent's CPUs and memory nodes first.
make_node_cgroup() {
  local path="$CGROUP_NAME/$1" hierarchy
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    mkdir -p "/sys/fs/cgroup/$path"
    return
  fi
  for hierarchy in /sys/fs/cgroup/*/; do
    [[ -d "$hierarchy" && "$hierarchy" != */unified/ ]] || continue
    mkdir -p "$hierarchy$path"
    if [[ -f "${hierarchy}cpuset.cpus" ]]; then
      local level="$hierarchy" part
      for part in ${path//\// }; do
        cat "${level}cpuset.cpus" > "$level$part/cpuset.cpus"
        cat "${level}cpuset.mems" > "$level$part/cpuset.mems"
        level="$level$part/"
      done
    fi
  done
}

start_node_containerd() {
  local index="$1" name="${NODE_NAMES[$1 - 1]}"
  local dir
  dir="$(node_dir "$name")"
  write_containerd_config "$dir" "$POD_PREFIX.$index.0/24"
  start_process "containerd-$name" $(node_enter "$name") "$CONTAINERD_BIN/containerd" \
    --config "$dir/containerd/config.toml"
}

start_node_kubelet() {
  local index="$1" name="${NODE_NAMES[$1 - 1]}" dir ip labels
  dir="$(node_dir "$name")"
  ip="$(node_ip "$index")"
  make_node_cgroup "$name"
  write_kubelet_config "$dir" "$ip" "$name"
  write_kubeconfig "$dir/kubelet.kubeconfig" "kubelet-$name"
  labels="node.kubernetes.io/instance-type=${NODE_TYPES[$index - 1]}"
  ((DRA)) && labels+=",torus.dev/neuron-mode=dra"
  start_process "kubelet-$name" $(node_enter "$name") "$K8S_BIN/kubelet" \
    --config "$dir/kubelet-config.yaml" --kubeconfig "$dir/kubelet.kubeconfig" \
    --hostname-override "$name" --node-ip "$ip" --node-labels "$labels" -v 2
}

node_ready() {
  [[ "$(kubectl_ get node "$1" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2> /dev/null)" == True ]]
}

all_nodes_ready() {
  local name
  for name in "${NODE_NAMES[@]}"; do
    process_alive "kubelet-$name" || {
      tail -n 30 "$STATE/logs/kubelet-$name.log" >&2
      die "the kubelet of $name exited (log: $STATE/logs/kubelet-$name.log)"
    }
    node_ready "$name" || return 1
  done
}

# The paths each node mounts its own directory over must exist on the host; those this script
# creates, `down` removes.
MOUNT_TARGETS=(/var/lib/kubelet /var/log/pods /var/log/containers /run/cdi /run/netns /run/containerd
  /opt/aws /var/lib/torus)
make_mount_targets() {
  local target
  : > "$STATE/created-mount-targets"
  for target in "${MOUNT_TARGETS[@]}"; do
    [[ -d "$target" ]] && continue
    mkdir -p "$target"
    echo "$target" >> "$STATE/created-mount-targets"
  done
}

remove_mount_targets() {
  local target
  [[ -f "$STATE/created-mount-targets" ]] || return 0
  while read -r target; do
    rmdir "$target" 2> /dev/null || log "left $target: it is not empty"
  done < "$STATE/created-mount-targets"
}

# start_nodes: every node's namespaces, containerd (with the images pods need) and kubelet.
start_nodes() {
  local index name
  [[ -x "$REPO/build/bin/neuron-ls" ]] ||
    die "the simulated nodes need $REPO/build/bin/neuron-ls (cmake --build build --target neuron-ls)"
  [[ -x "$REPO/build/bin/neuron-sim-driver" ]] ||
    die "the simulated nodes need $REPO/build/bin/neuron-sim-driver, built where libfuse3 is" \
      "(scripts/install-deps.sh, then cmake -S . -B build && cmake --build build --target" \
      "neuron-sim-driver)"
  make_mount_targets
  for ((index = 1; index <= ${#NODE_NAMES[@]}; index++)); do
    create_node "$index"
    start_node_containerd "$index"
  done
  for name in "${NODE_NAMES[@]}"; do
    wait_for "containerd-$name" 30 "$CONTAINERD_BIN/ctr" --address "$(node_dir "$name")/containerd/containerd.sock" version
  done
  build_pause_image
  import_image "$PAUSE_IMAGE"
  provide_example_base_image
  for ((index = 1; index <= ${#NODE_NAMES[@]}; index++)); do
    start_node_kubelet "$index"
  done
  local deadline=$((SECONDS + 120))
  until all_nodes_ready; do
    ((SECONDS < deadline)) || die "not every node became Ready in 120 s (kubectl get nodes)"
    sleep 0.5
  done
}

# Containers outlive containerd (their shims are on their own), so kill them through it first.
stop_node_containers() {
  local socket="$1/containerd/containerd.sock"
  [[ -S "$socket" ]] || return 0
  local ctr=("$CONTAINERD_BIN/ctr" --address "$socket" -n k8s.io)
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

# stop_nodes: kubelets first (nothing restarts a container), then the containers, then the
# runtimes; the namespaces go with their last process and their bind mounts (unmount_under).
stop_nodes() {
  local dir
  for dir in "$STATE"/nodes/*/; do
    [[ -d "$dir" ]] || continue
    stop_process "kubelet-$(basename "$dir")"
  done
  for dir in "$STATE"/nodes/*/; do
    [[ -d "$dir" ]] || continue
    stop_node_containers "${dir%/}"
    stop_process "containerd-$(basename "$dir")"
    stop_process "driver-$(basename "$dir")"
    # Its init last, killed: it ignores SIGTERM (as PID 1 does), and whatever of the node still
    # runs goes with it.
    stop_process "node-$(basename "$dir")" KILL
  done
  ip link delete "$NODES_BRIDGE" 2> /dev/null || true
}
