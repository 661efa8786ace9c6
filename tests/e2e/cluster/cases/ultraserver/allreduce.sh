# Sourced by ultraserver_test.sh (its helpers, lib.sh's and dra_lib.sh's and the cluster are in scope).
# A 4-node workload takes the UltraServer whole, and deploy/examples/ultraserver-workload.yaml's
# AllReduce runs across it with the UltraServer environment as rank.

echo "== a 4-node workload takes the UltraServer whole; the example's AllReduce runs across it"
# deploy/examples/ultraserver-workload.yaml as its header says: the workload, then the Job with
# the leader's address.
example="$REPO/deploy/examples/ultraserver-workload.yaml"
sed '/^# --- job/,$d' "$example" | k apply -n e2e -f - > /dev/null
check "workload $first is Allocated" eventually 60 state_is "$first" Allocated
template_owned() {
  [[ "$(k get resourceclaimtemplate -n e2e "$first" -o jsonpath='{.metadata.ownerReferences[0].kind}')" == NeuronUltraServerWorkload ]]
}
check "its ResourceClaimTemplate is written, owned by the workload" template_owned
check "every device of the four nodes carries workloadId e2e/$first" eventually 60 tagged_is "$first" "$all_nodes"
leader="$(us_json | checks_py allocation-leader)"
check "the allocation's leader is node id 0" test "$leader" == "${names[0]}"
k create secret generic neuron-allreduce-us -n e2e \
  --from-literal=job-secret="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" > /dev/null
agent_image="$(k get ds -n kube-system -l app.kubernetes.io/component=node-agent -o 'jsonpath={.items[0].spec.template.spec.containers[0].image}')"
leader_ip="$(k get node "$leader" -o 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}')"
sed -n '/^# --- job/,$p' "$example" |
  ROOT_ADDRESS="$leader_ip:29500" IMAGE="$agent_image" IFACE=eth0 \
    envsubst '$ROOT_ADDRESS $IMAGE $IFACE' | k apply -n e2e -f - > /dev/null
job_pods() { k get pods -n e2e -l "job-name=$first" -o json; }
allreduce_passed() {
  [[ "$(k get job -n e2e "$first" -o jsonpath='{.status.succeeded}')" == 4 ]] ||
    { echo "job: $(k get job -n e2e "$first" -o jsonpath='{.status}')"; return 1; }
}
check "the Job's 4 ranks complete" eventually 240 allreduce_passed
one_rank_per_node_as_its_node_id() {
  job_pods | checks_py pods-on-nodes "${names[@]}" || return 1
  local pod node rank
  for pod in $(k get pods -n e2e -l "job-name=$first" -o name); do
    node="$(k get -n e2e "$pod" -o jsonpath='{.spec.nodeName}')"
    rank="$(k logs -n e2e "$pod" | sed -n 's/^rank \([0-9-]*\) of UltraServer.*(mode 1).*/\1/p')"
    [[ "$rank" == "$(node_label "$node" node-id-4)" ]] ||
      { echo "$pod on $node: rank '$rank' ($(k logs -n e2e "$pod" | head -1))"; return 1; }
  done
}
check "one rank per node; each rank is its node's UltraServer node id (mode 1: 4 nodes)" one_rank_per_node_as_its_node_id
rows_ok() {
  local log rows
  log="$(k logs -n e2e "$(job_pods | checks_py pod-on-node "$leader")")"
  echo "$log" > "$STATE_DIR/allreduce.log"
  rows="$(grep -E '^ +[0-9]+ ' <<< "$log")"
  [[ -n "$rows" ]] && ! grep -qvE ' ok$' <<< "$rows"
}
check "rank 0's AllReduce sweep passes its data check at every size" rows_ok
echo "      $(grep -E '^ +4194304 ' "$STATE_DIR/allreduce.log" || true)"
k delete resourceclaimtemplate -n e2e "$first" --wait=true > /dev/null
check "a deleted ResourceClaimTemplate is written again (within a resync)" eventually 90 template_owned
