# Sourced by multinode_test.sh (its helpers, cluster, names and ips are in scope).
# Pods land on the node they are pinned to, and gangs start whole on one UltraServer or not at
# all (holding nothing meanwhile), through Torus's labels and through upstream's PodGroup.

echo "== pods land where they are sent and get their node's devices"
for index in "${!names[@]}"; do
  pinned_pod "on-$index" "${names[$index]}" | k apply -f - > /dev/null
done
ran_where_sent() {
  local index
  for index in "${!names[@]}"; do
    pod_succeeded "on-$index" || return 1
    [[ "$(k get pod -n e2e "on-$index" -o jsonpath='{.spec.nodeName}')" == "${names[$index]}" ]] || return 1
    pod_report "on-$index" | grep -qE 'DEVICES=(neuron[0-9]+ ){4}$' ||
      { echo "on-$index: $(pod_report "on-$index")"; return 1; }
  done
}
check "a pod on each node runs there with 4 devices" eventually 120 ran_where_sent
k delete pods -n e2e --all --wait=true > /dev/null

echo "== gangs through neuron-scheduler: all pods or none, on one UltraServer when they fit"
# gang_pod NAME GANG SIZE: all 16 devices of a node through neuron-scheduler, in gang GANG of SIZE
# pods (docs/gangs.md), running until deleted.
gang_pod() {
  pod_manifest "$1" neuron 16 neuron-scheduler 600 |
    sed "s|^  labels: {e2e: neuron}|  labels: {e2e: neuron, torus.dev/gang: $2, torus.dev/gang-size: \"$3\"}|"
}
node_of() { k get pod -n e2e "$1" -o jsonpath='{.spec.nodeName}'; }
for i in 0 1 2 3; do gang_pod "four-$i" four 4 | k apply -f - > /dev/null; done
ultraserver_nodes="$(printf '%s\n' "${names[@]:0:4}" | sort | xargs)"
# all_running_on PREFIX COUNT NODES: pods PREFIX-0 .. PREFIX-(COUNT-1) run, on exactly NODES
# (sorted, space-separated).
all_running_on() {
  local prefix="$1" count="$2" want="$3" i landed=()
  for ((i = 0; i < count; i++)); do
    pod_running "$prefix-$i" || { echo "$prefix-$i: $(pod_phase "$prefix-$i")"; return 1; }
    landed+=("$(node_of "$prefix-$i")")
  done
  echo "on: ${landed[*]}"
  [[ "$(printf '%s\n' "${landed[@]}" | sort | xargs)" == "$want" ]]
}
check "a gang of 4 whole-node pods runs on the UltraServer's 4 nodes (not on the trn2)" \
  eventually 120 all_running_on four 4 "$ultraserver_nodes"
# Each pod learns its place in the UltraServer job as AWS's operator sets it (docs/gangs.md):
# mode X4 (1), and the UltraServer's and its node's ids, the ones its node's labels carry.
# told_its_place PREFIX: pods PREFIX-0 .. PREFIX-3 each see their place.
told_its_place() {
  local i node seen want
  for i in 0 1 2 3; do
    node="$(node_of "$1-$i")"
    seen="$(k exec -n e2e "$1-$i" -- sh -c \
      'echo "$NEURON_RT_ULTRASERVER_MODE $NEURON_RT_ULTRASERVER_SERVER_ID $NEURON_RT_ULTRASERVER_NODE_ID"')"
    want="1 $(k get node "$node" -o 'jsonpath={.metadata.labels.neuron\.amazonaws\.com/ultraserver-server-id-4} {.metadata.labels.neuron\.amazonaws\.com/ultraserver-node-id-4}')"
    echo "$1-$i on $node: '$seen', its node's labels: '$want'"
    [[ "$seen" == "$want" ]] || return 1
  done
}
check "...and each of its pods is told its place in the UltraServer job (X4, server, node id)" \
  told_its_place four
k delete pods -n e2e --all --wait=true > /dev/null
# Three nodes busy (two of the UltraServer's and the trn2): two whole nodes are free.
for index in 0 1 "$TRN2"; do
  pinned_pod "busy-$index" "${names[$index]}" 600 | sed 's/neuron: 4$/neuron: 16/' | k apply -f - > /dev/null
done
busy_running() { pod_running busy-0 && pod_running busy-1 && pod_running "busy-$TRN2"; }
check "three nodes are busy with whole-node pods" eventually 90 busy_running
for i in 0 1 2; do gang_pod "three-$i" three 3 | k apply -f - > /dev/null; done
gang_of_three_waits() {
  local i events=""
  for i in 0 1 2; do
    [[ -z "$(node_of "three-$i")" ]] || { echo "three-$i was placed on $(node_of "three-$i")"; return 1; }
    events+="$(k get events -n e2e --field-selector "involvedObject.name=three-$i" -o jsonpath='{.items[*].message}')"
  done
  grep -o "gang e2e/three (3 pods) does not fit whole[^;]*; none is placed and nothing is held" <<< "$events" | head -1 | grep . ||
    { echo "no event says why yet: ${events:0:300}"; return 1; }
}
check "a gang of 3 with 2 free nodes starts no pod, and its events say why" eventually 60 gang_of_three_waits
pinned_pod outsider "${names[2]}" | sed 's/neuron: 4$/neuron: 16/' | k apply -f - > /dev/null
check "...holding no device: a pod outside the gang gets a free node's 16 devices meanwhile" \
  eventually 90 pod_succeeded outsider
check "...and still no gang pod has started" gang_of_three_waits
k delete pod -n e2e busy-1 --wait=true > /dev/null
check "...and starts whole, on the UltraServer's 3 free nodes, once a node frees" \
  eventually 120 all_running_on three 3 "$(printf '%s\n' "${names[@]:1:3}" | sort | xargs)"
k delete pods -n e2e --all --wait=true > /dev/null

echo "== upstream's PodGroup (scheduling.k8s.io/v1beta1, GenericWorkload on): its gang placed whole"
k apply -f - > /dev/null <<'YAML'
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: group-of-four, namespace: e2e}
spec:
  schedulingPolicy:
    gang: {minCount: 4}
YAML
for i in 0 1 2 3; do
  pod_manifest "grouped-$i" neuron 16 neuron-scheduler 600 |
    sed "s|^spec:|spec:\n  schedulingGroup: {podGroupName: group-of-four}|" | k apply -f - > /dev/null
done
check "a PodGroup of 4 whole-node pods runs on the UltraServer's 4 nodes" \
  eventually 120 all_running_on grouped 4 "$ultraserver_nodes"
check "...and each of its pods is told its place in the UltraServer job" told_its_place grouped
k delete pods -n e2e --all --wait=true > /dev/null
k delete podgroup -n e2e group-of-four --timeout=60s > /dev/null
