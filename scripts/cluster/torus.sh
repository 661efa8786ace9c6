# Torus on the local cluster (sourced by local-cluster.sh): its image and the scheduler's, imported
# into every node's containerd, and the chart installed with the values below.
#
# Reads: REPO, STATE, KUBECONFIG_FILE (local-cluster.sh), K8S_VERSION (versions.sh), DRA, DRA_NODES,
# HELM_SETS, CONTROL_PLANE_QPS (options.sh), NODE_NAMES, APISERVER_HOST (nodes.sh), APISERVER_PORT,
# EXTENDER_PORT, NEURON_SCHEDULER_PORT (picked by up), WORKLOAD_GATES (control_plane.sh),
# TORUS_IMAGE, SCHEDULER_IMAGE_REPO (images.sh).

HELM="$REPO/build/tools/helm"

# Values for this cluster, on top of the chart's production defaults: the image, where the API
# is (no kube-proxy implements the kubernetes Service here) and so the host's network, the
# extender and neuron-scheduler side by side on the first node. The node agent's mounts,
# capabilities and driver paths are the production ones (tests/e2e/cluster checks the diff).
write_local_values() {
  local env first_node="${NODE_NAMES[0]}"
  env="$(printf '[{"name": "KUBERNETES_SERVICE_HOST", "value": "%s"}, {"name": "KUBERNETES_SERVICE_PORT", "value": "%s"}]' "$APISERVER_HOST" "$APISERVER_PORT")"
  cat > "$STATE/values-local.yaml" <<YAML
image:
  repository: ${TORUS_IMAGE%:*}
  tag: ${TORUS_IMAGE##*:}
  pullPolicy: Never
nodeAgent:
  hostNetwork: true
  extraEnv: $env

dra:
  enabled: $( ((DRA)) || [[ -n "$DRA_NODES" ]] && echo true || echo false)

ultraserverOperator:  # used when a test or --set enables it
  extraEnv: $env

extender:
  hostNetwork: true
  port: $EXTENDER_PORT
  serveState: true  # the tests and the demo read it; only the local host reaches the bridge
  extraEnv: $env
  nodeSelector: {kubernetes.io/hostname: $first_node}
scheduler:
  hostNetwork: true
  securePort: $NEURON_SCHEDULER_PORT
  extenderURL: http://$(node_ip 1):$EXTENDER_PORT
  extraEnv: $env
  extraArgs: [${WORKLOAD_GATES[0]:-}]
  nodeSelector: {kubernetes.io/hostname: $first_node}
  clientConnection: {$([[ -z "$CONTROL_PLANE_QPS" ]] || echo "qps: ${CONTROL_PLANE_QPS%:*}, burst: ${CONTROL_PLANE_QPS#*:}")}
  image:
    repository: $SCHEDULER_IMAGE_REPO
    tag: $K8S_VERSION
    pullPolicy: Never
YAML
}

install_torus() {
  "$REPO/scripts/get-helm.sh" > /dev/null
  build_torus_image
  build_scheduler_image
  import_image "$TORUS_IMAGE"
  import_image "$SCHEDULER_IMAGE_REPO:$K8S_VERSION"
  write_local_values
  log "helm install torus (namespace kube-system)"
  "$HELM" --kubeconfig "$KUBECONFIG_FILE" install torus "$REPO/helm/torus" --namespace kube-system \
    -f "$STATE/values-local.yaml" "${HELM_SETS[@]}" --wait --timeout 5m > "$STATE/logs/helm-install.log" 2>&1 ||
    {
      cat "$STATE/logs/helm-install.log" >&2
      kubectl_ get pods -A -o wide >&2 || true
      die "helm install failed"
    }
}
