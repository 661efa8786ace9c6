# Fake Neuron nodes beside the real ones (sourced by local-cluster.sh; `up --fake-nodes`,
# `--dra-nodes`): fake-nodes.py writes the Nodes, and for DRA nodes their ResourceSlices, from the
# node agent's and the driver's own code (neuron-ls); kwok keeps them Ready and runs their pods.
#
# Reads: REPO, STATE, KUBECONFIG_FILE (local-cluster.sh), TORUS_CACHE, KWOK_VERSION (versions.sh),
# FAKE_NODES, DRA_NODES, FAKE_NODE_LEASE_SECONDS (options.sh).

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
