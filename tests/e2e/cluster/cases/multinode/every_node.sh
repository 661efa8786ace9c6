# Sourced by multinode_test.sh (its helpers, cluster, names and ips are in scope).
# Each of the five nodes is its own: Ready, its own address, its own devices in kubectl neuron,
# and the UltraServer labels of its place.

echo "== every node is its own"
nodes_ready() {
  local name
  for name in "${names[@]}"; do
    [[ "$(k get node "$name" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]] ||
      { echo "$name is not Ready"; return 1; }
  done
}
check "five real nodes are Ready" eventually 60 nodes_ready
each_node_has_its_address() {
  local index
  for index in "${!names[@]}"; do
    local address
    address="$(k get node "${names[$index]}" -o 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}')"
    [[ "$address" == "${ips[$index]}" ]] || { echo "${names[$index]}: InternalIP '$address', want ${ips[$index]}"; return 1; }
  done
}
check "each node has its own address" each_node_has_its_address
nodes_listed() {
  local listed
  listed="$(neuron_cli nodes)"
  echo "$listed"
  local index
  for index in "${ULTRASERVER[@]}"; do
    grep -qE "${names[$index]} .*trn2u.48xlarge.* 0/64 .*16/16" <<< "$listed" || return 1
  done
  grep -qE "${names[$TRN2]} .*trn2.48xlarge .* 0/64 .*16/16" <<< "$listed"
}
check "kubectl neuron nodes lists the five with their own devices" eventually 90 nodes_listed
ultraserver_places() { k get nodes -o json | checks_py ultraserver-places "${names[@]}"; }
check "the trn2u nodes share one UltraServer at positions 0-3; the trn2 is in none" eventually 30 ultraserver_places
