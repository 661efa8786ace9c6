# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# A node of an instance type the chart does not list and Torus's catalog does not know:
# trn2.3xlarge, one Trainium2, its driver simulated as it serves a single chip (no NeuronLink
# table, so connected_devices is empty). No agent runs there until the node carries a label of
# neuronNodeLabels, as an operator or a node group sets it; then the agent advertises the chip and
# its cores, says the type is unknown, and pods through the default scheduler and through the
# chart's scheduler and extender run on them. Unlabelled, the node loses its agent again.
# Runs right after device_plugin, so every later case sees the three nodes it always had.

echo "== a node of a type the chart does not list (trn2.3xlarge)"
new_node="${names[3]}"
new_node_driver="$STATE_DIR/nodes/$new_node/driver"
new_node_agent() {
  k get pods -n kube-system -l app.kubernetes.io/component=node-agent \
    --field-selector "spec.nodeName=$new_node" "$@"
}
agents_scheduled() {
  local desired
  desired="$(k get daemonset -n kube-system -l app.kubernetes.io/component=node-agent \
    -o 'jsonpath={.items[*].status.desiredNumberScheduled}')"
  [[ "$desired" == "$1" ]] || { echo "the node agent's DaemonSet wants ${desired:-none} pods"; return 1; }
}
no_agent_on_new_node() {
  [[ -z "$(new_node_agent -o name)" ]] || { new_node_agent; return 1; }
}
# The DaemonSet's own count: it was reconciled long before (helm install waited on it).
no_agent_placed() { agents_scheduled $((${#names[@]} - 1)) && no_agent_on_new_node; }
check "$new_node is a trn2.3xlarge, and the chart places no agent there" no_agent_placed

k label node "$new_node" torus.dev/neuron=true > /dev/null
new_node_agent_ready() {
  [[ "$(new_node_agent -o 'jsonpath={.items[*].status.containerStatuses[0].ready}')" == true ]] ||
    { new_node_agent -o wide; return 1; }
}
check "labelled torus.dev/neuron=true, it runs an agent, and the agent is Ready" \
  eventually 120 new_node_agent_ready
new_node_allocatable() {
  local neuron cores
  neuron="$(k get node "$new_node" -o 'jsonpath={.status.allocatable.aws\.amazon\.com/neuron}')"
  cores="$(k get node "$new_node" -o 'jsonpath={.status.allocatable.aws\.amazon\.com/neuroncore}')"
  [[ "$neuron" == "$1" && "$cores" == "$2" ]] ||
    { echo "allocatable aws.amazon.com/neuron ${neuron:-none}, neuroncore ${cores:-none}"; return 1; }
}
check "kubelet advertises what the driver reports: 1 chip, 4 NeuronCores at LNC 2" \
  eventually 30 new_node_allocatable 1 4
says_type_unknown() {
  k logs -n kube-system "$(new_node_agent -o 'jsonpath={.items[0].metadata.name}')" |
    grep -F 'instance type \"trn2.3xlarge\" is not in the catalog; using what the driver reports'
}
check "the agent says the type is not in its catalog" says_type_unknown
listed_with_its_chip() {
  local listed
  listed="$(neuron_cli nodes)"
  grep -E "$new_node .*trn2\.3xlarge .* 0/4 .* 1/1 " <<< "$listed" || { echo "$listed"; return 1; }
}
check "kubectl neuron nodes lists it with its one chip" eventually 30 listed_with_its_chip

# One pod through each scheduler, on this node; what each container saw is checked against the
# node's own driver tree.
saved_pin="$PIN_NODE"
PIN_NODE="$new_node"
pod_manifest new-size-cores neuroncore 4 | k apply -f - > /dev/null
check "a 4-core pod runs there (default scheduler)" eventually 90 pod_succeeded new-size-cores
# check_pod_saw reads the checked node's tree: this node's, here.
saw_on_new_node() {
  local SIMULATED_NODE_DIR="$new_node_driver"
  check_pod_saw "$@"
}
check "... and saw the chip's 4 cores" saw_on_new_node new-size-cores neuroncore 4
k delete pod -n e2e new-size-cores --wait=false > /dev/null
pod_manifest new-size-chip neuron 1 neuron-scheduler | k apply -f - > /dev/null
check "a 1-chip pod runs there (the chart's scheduler and the extender)" \
  eventually 90 pod_succeeded new-size-chip
check "... with the ids the extender wrote on it" check_handoff_honoured new-size-chip
k delete pod -n e2e new-size-chip --wait=false > /dev/null
PIN_NODE="$saved_pin"

k label node "$new_node" torus.dev/neuron- > /dev/null
check "unlabelled, the node's agent is removed" eventually 60 no_agent_on_new_node
# The stopping agent sees that its DaemonSet no longer selects the node, so no agent follows it:
# it leaves no restarting taint behind, and the node takes pods as before.
untainted() {
  local taints
  taints="$(k get node "$new_node" -o 'jsonpath={.spec.taints[*].key}')"
  ! tr ' ' '\n' <<< "$taints" | grep -qx 'torus.dev/device-plugin-restarting' ||
    { echo "taints: $taints"; return 1; }
}
check "... and, followed by no agent, it leaves the node untainted" untainted
# Its agent's report stays on the Node, but kubelet advertises no Neuron resource there any more:
# kubectl neuron (and the extender, through the same reading) counts it no Neuron node.
not_listed() {
  local listed
  listed="$(neuron_cli nodes)"
  ! grep -q "$new_node" <<< "$listed" || { echo "$listed"; return 1; }
}
check "... and kubectl neuron no longer lists it" eventually 60 not_listed
