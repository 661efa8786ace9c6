# The placers the ecosystem runs on Torus's node labels, beside the local cluster's control plane
# (sourced by local-cluster.sh; `up --placers=kueue,lws`): Kueue, for topology-aware admission of
# Jobs (a Topology on the UltraServer label), and LeaderWorkerSet, whose exclusive-topology gives
# each group one UltraServer. Each is built from its Go module at the version pinned in
# versions.sh and runs as a process here, as kube-scheduler does, with the CRDs and webhook
# configurations of that same version.
#
# Their admission webhooks are called by the API server, which runs in this network namespace:
# each webhook configuration names https://127.0.0.1:PORT instead of a Service (nothing here
# implements Services), with a serving certificate from the cluster CA. Every namespaced webhook
# is limited to namespaces labelled torus.dev/placers=enabled, so the rest of the cluster never
# waits on them.
#
# Reads: REPO, STATE, PKI, KUBECONFIG_FILE (local-cluster.sh), TORUS_CACHE, KUEUE_VERSION,
# LWS_VERSION (versions.sh).

PLACERS_LABEL="torus.dev/placers=enabled"

# make_serving_cert NAME: $PKI/NAME-serving.{key,crt} for 127.0.0.1, signed by the cluster CA.
make_serving_cert() {
  local name="$1"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$PKI/$name-serving.key" -subj "/CN=$name" \
    -out "$PKI/$name-serving.csr" 2> /dev/null
  openssl x509 -req -in "$PKI/$name-serving.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -CAcreateserial -days 365 -out "$PKI/$name-serving.crt" -extfile <(
      printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n'
      printf 'keyUsage=digitalSignature,keyEncipherment\n'
    ) 2> /dev/null
  rm -f "$PKI/$name-serving.csr"
}

# serving_certs_in DIR NAME: NAME's serving certificate as controller-runtime reads it
# (DIR/tls.crt, DIR/tls.key).
serving_certs_in() {
  mkdir -p "$1"
  cp "$PKI/$2-serving.crt" "$1/tls.crt"
  cp "$PKI/$2-serving.key" "$1/tls.key"
}

# install_placer_crds NAME CONFIG_DIR: the CRDs of CONFIG_DIR, then a wait until the API serves
# them (Established; `kubectl wait` fails at once on a CRD whose status is not written yet).
install_placer_crds() {
  local name="$1" bases="$2/bases" crd
  # Server-side: Kueue's Workload CRD is too large for the last-applied annotation.
  kubectl_ apply --server-side --force-conflicts -f "$bases" > /dev/null ||
    die "$name: cannot install its CRDs from $bases"
  local deadline=$((SECONDS + 60))
  for crd in $(kubectl_ get -f "$bases" -o name); do
    until [[ "$(kubectl_ get "$crd" -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}' 2> /dev/null)" == True ]]; do
      ((SECONDS < deadline)) || die "$name: $crd not Established after 60 s"
      sleep 0.5
    done
  done
}

# install_placer_webhooks NAME MANIFEST PORT: MANIFEST's webhook configurations, renamed NAME-*,
# calling https://127.0.0.1:PORT on the paths they name, trusting the cluster CA, and (for
# namespaced objects) only in namespaces labelled $PLACERS_LABEL.
install_placer_webhooks() {
  local name="$1" manifest="$2" port="$3"
  python3 "$REPO/scripts/cluster/placer_webhooks.py" "$name" "$manifest" "$port" "$PKI/ca.crt" \
    "$PLACERS_LABEL" > "$STATE/$name-webhooks.yaml" ||
    die "$name: cannot rewrite its webhook configurations ($manifest)"
  kubectl_ apply -f "$STATE/$name-webhooks.yaml" > /dev/null ||
    die "$name: cannot install its webhook configurations"
}

# write_placer_config NAME API_VERSION [MORE_YAML]: NAME's CRDs installed, its serving certificate
# in DIR/certs and DIR/config.yaml (DIR=$STATE/placers/NAME) with the controller-runtime settings
# both placers share (health, metrics and webhook on 127.0.0.1, free ports; no leader election;
# certificates from here, not made by the placer), then MORE_YAML. Sets PLACER_DIR, PLACER_OUT,
# PLACER_HEALTH_PORT and PLACER_WEBHOOK_PORT for start_placer_process.
write_placer_config() {
  local name="$1" api_version="$2" more="${3:-}" version_var
  version_var="${name^^}_VERSION"
  PLACER_OUT="$TORUS_CACHE/$name-${!version_var}" PLACER_DIR="$STATE/placers/$name"
  PLACER_HEALTH_PORT="$(free_port)" PLACER_WEBHOOK_PORT="$(free_port)"
  install_placer_crds "$name" "$PLACER_OUT/config"
  serving_certs_in "$PLACER_DIR/certs" "$name"
  cat > "$PLACER_DIR/config.yaml" <<YAML
apiVersion: $api_version
kind: Configuration
health: {healthProbeBindAddress: "127.0.0.1:$PLACER_HEALTH_PORT"}
metrics: {bindAddress: "127.0.0.1:$(free_port)"}
webhook: {host: 127.0.0.1, port: $PLACER_WEBHOOK_PORT, certDir: "$PLACER_DIR/certs"}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
$more
YAML
}

# start_placer_process NAME COMMAND...: COMMAND started as NAME, waited for until ready, then
# NAME's webhooks installed (only then, so no request reaches a webhook that does not serve yet).
start_placer_process() {
  local name="$1"
  shift
  start_process "$name" "$@"
  wait_for "$name" 120 curl -sf "http://127.0.0.1:$PLACER_HEALTH_PORT/readyz"
  install_placer_webhooks "$name" "$PLACER_OUT/config/manifests.yaml" "$PLACER_WEBHOOK_PORT"
}

# Kueue reads its metrics server's certificate from the fixed path /etc/kueue/metrics/certs when
# it does not make its own. It runs in a mount namespace of its own, where /etc is the host's with
# that one folder added (a read-only overlay): the host's /etc is never written.
start_kueue() {
  write_placer_config kueue config.kueue.x-k8s.io/v1beta2 "manageJobsWithoutQueueName: false
integrations:
  frameworks: [batch/job]"
  serving_certs_in "$PLACER_DIR/etc/kueue/metrics/certs" kueue
  # VisibilityOnDemand serves an aggregated API through a Service; nothing here routes to it.
  start_placer_process kueue unshare --mount --propagation private sh -c \
    'mount -t overlay overlay -o "lowerdir=$1:/etc" /etc && shift && exec "$@"' sh \
    "$PLACER_DIR/etc" env KUBECONFIG="$KUBECONFIG_FILE" "$PLACER_OUT/bin/kueue" \
    --config "$PLACER_DIR/config.yaml" --feature-gates=VisibilityOnDemand=false
}

start_lws() {
  write_placer_config lws config.lws.x-k8s.io/v1alpha1
  start_placer_process lws env KUBECONFIG="$KUBECONFIG_FILE" "$PLACER_OUT/bin/lws" \
    --config "$PLACER_DIR/config.yaml"
}

# start_placers LIST: each placer of the comma-separated LIST (kueue, lws), built once.
start_placers() {
  local list="$1" placer placers
  "$REPO/scripts/cluster/build-components.sh" --only="$list"
  IFS=, read -ra placers <<< "$list"
  for placer in "${placers[@]}"; do
    log "starting $placer (webhooks only in namespaces labelled $PLACERS_LABEL)"
    make_serving_cert "$placer"
    case "$placer" in
      kueue) start_kueue ;;
      lws) start_lws ;;
    esac
  done
}
