# Sourced by multinode_test.sh (its helpers, cluster, names and ips are in scope).
# An AllReduce between pods on the UltraServer's four nodes over libfabric tcp (the example for
# clusters without DNS, run as users would), and a dead rank stopping the others at once.

echo "== an AllReduce between pods on the UltraServer's four nodes (libfabric tcp)"
# The pods are deploy/examples/allreduce-hostnetwork.yaml's, filled in as its header says: the
# example for clusters without DNS runs here as users would run it.
k create secret generic neuron-allreduce-hostnetwork -n e2e \
  --from-literal=job-secret="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" > /dev/null
RANKS=${#ULTRASERVER[@]}
agent_image="$(k get ds -n kube-system -l app.kubernetes.io/component=node-agent -o 'jsonpath={.items[0].spec.template.spec.containers[0].image}')"
# rank_pod RANK NODE [MAX_BYTES ITERS]: the example's pod for one rank of RANKS, on NODE.
rank_pod() {
  RANK="$1" NODE="$2" WORLD_SIZE="$RANKS" ROOT_ADDRESS="${ips[0]}:29500" IMAGE="$agent_image" \
    IFACE=eth0 MAX_BYTES="${3:-}" ITERS="${4:-}" \
    envsubst '$RANK $NODE $WORLD_SIZE $ROOT_ADDRESS $IMAGE $IFACE $MAX_BYTES $ITERS' \
    < "$REPO/deploy/examples/allreduce-hostnetwork.yaml"
}
rank() { echo "neuron-allreduce-rank-$1"; }
for index in "${ULTRASERVER[@]}"; do
  rank_pod "$index" "${names[$index]}" | k apply -n e2e -f - > /dev/null
done
allreduce_passed() {
  local index
  for index in "${ULTRASERVER[@]}"; do pod_succeeded "$(rank "$index")" || return 1; done
  k logs -n e2e "$(rank 0)" | tee "$STATE_DIR/allreduce.log" | tail -4
  # Every size's row ends in its data check's verdict: ok, fail or off.
  local rows
  rows="$(grep -E '^ +[0-9]+ ' "$STATE_DIR/allreduce.log")"
  [[ -n "$rows" ]] && ! grep -qvE ' ok$' <<< "$rows"
}
check "4 ranks on the UltraServer's 4 nodes: AllReduce passes its data check" eventually 180 allreduce_passed
busbw_printed() { k logs -n e2e "$(rank 0)" | grep -E '^ +4194304 '; }
check "...and prints its bus bandwidth for 4 MiB" busbw_printed
echo "      $(head -3 "$STATE_DIR/allreduce.log" | tail -1)"
echo "      $(busbw_printed || true)"
k delete pods -n e2e --all --wait=true > /dev/null

echo "== a rank dies: the others stop at once and name it"
for index in "${ULTRASERVER[@]}"; do
  rank_pod "$index" "${names[$index]}" 256M 50 | k apply -n e2e -f - > /dev/null
done
# The first row needs every rank: the job is running across the four nodes.
running_together() {
  local log
  log="$(k logs -n e2e "$(rank 0)" 2> /dev/null)" && grep -qE '^ +8 ' <<< "$log"
}
check "a long AllReduce runs across the four nodes" eventually 120 running_together
killed_at="$(date +%s.%N)"
cluster shell "${names[3]}" pkill -KILL -f neuron-cc-bench > /dev/null
# finishedAt has whole seconds: it is at most the true end, so "< 2" is the bound it can show.
others_stopped_naming_rank_3() {
  local rank finished said
  for rank in 0 1 2; do
    [[ "$(pod_phase "$(rank "$rank")")" == Failed ]] || { echo "rank $rank: $(pod_phase "$(rank "$rank")")"; return 1; }
    grep -q "rank 3" <<< "$(k logs -n e2e "$(rank "$rank")")" ||
      { echo "rank $rank's log does not name rank 3:"; k logs -n e2e "$(rank "$rank")" | tail -3; return 1; }
    finished="$(k get pod -n e2e "$(rank "$rank")" -o jsonpath='{.status.containerStatuses[0].state.terminated.finishedAt}')"
    said="$(checks_py finished-within "$finished" "$killed_at" 2)" || return 1
    echo "rank $rank $said"
  done
}
check "the other ranks fail within 2 s of rank 3's death, naming it" eventually 60 others_stopped_naming_rank_3
others_stopped_naming_rank_3 2>&1 | grep finished | sed 's/^/      /' || true
k logs -n e2e "$(rank 0)" | grep "rank 3" | tail -1 | sed 's/^/      /'
k delete pods -n e2e --all --wait=true > /dev/null
