# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# kubectl neuron with a kubeconfig as EKS writes it: the user is an exec credential plugin
# (client.authentication.k8s.io/v1), here a script printing a ServiceAccount token the API server
# accepts. Its first credential is one the API server refuses (401), so every command starts by
# renewing it; a credential whose expirationTimestamp has passed is renewed before each request.
# The exec kubeconfig holds only the user and a context: the cluster comes from the bed's own
# kubeconfig, merged from KUBECONFIG's second file as kubectl merges it. No token reaches the
# debug archive.

echo "== kubectl neuron with an exec credential plugin"
EXEC_DIR="$(mktemp -d)"
k create serviceaccount -n e2e neuron-cli-exec > /dev/null
k create clusterrolebinding neuron-cli-exec --clusterrole=cluster-admin \
  --serviceaccount=e2e:neuron-cli-exec > /dev/null
k create token -n e2e neuron-cli-exec --duration=1h > "$EXEC_DIR/token"
echo "torus-e2e-revoked-$RANDOM$RANDOM" > "$EXEC_DIR/revoked"
future="$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)"
echo "$future" > "$EXEC_DIR/expiry"
# Run 1 of a command: the revoked token. Later runs: the real one, valid until $EXEC_DIR/expiry.
# Each run records its KUBERNETES_EXEC_INFO.
cat > "$EXEC_DIR/get-token" <<'PLUGIN'
#!/bin/sh
dir="$(dirname "$0")"
printf '%s\n' "$KUBERNETES_EXEC_INFO" >> "$dir/runs"
if [ "$(wc -l < "$dir/runs")" -eq 1 ]; then token="$(cat "$dir/revoked")"; else token="$(cat "$dir/token")"; fi
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}\n' \
  "$token" "$(cat "$dir/expiry")"
PLUGIN
chmod +x "$EXEC_DIR/get-token"
# A relative command, resolved against the kubeconfig's directory as kubectl does.
cat > "$EXEC_DIR/config" <<EOF
apiVersion: v1
kind: Config
current-context: exec
contexts: [{name: exec, context: {cluster: torus-local, user: exec-user}}]
users:
- name: exec-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./get-token
      interactiveMode: Never
      provideClusterInfo: true
      installHint: the e2e writes get-token next to this file
EOF
exec_cli() { KUBECONFIG="$EXEC_DIR/config:$KUBECONFIG" "$REPO/build/bin/kubectl-neuron" "$@"; }
plugin_runs() { if [[ -f "$EXEC_DIR/runs" ]]; then wc -l < "$EXEC_DIR/runs"; else echo 0; fi; }
# exec_command EXPECTED_RUNS ARGS...: runs kubectl neuron ARGS with a fresh plugin history;
# EXPECTED_RUNS "2" exactly (the refused credential, then the cached one) or "more" (>2).
exec_command() {
  local expected="$1" output runs
  shift
  rm -f "$EXEC_DIR/runs"
  output="$(exec_cli "$@" 2>&1)" || { echo "kubectl neuron $*: $output"; return 1; }
  runs="$(plugin_runs)"
  echo "kubectl neuron $*: the plugin ran $runs times"
  if [[ "$expected" == 2 ]]; then ((runs == 2)); else ((runs > 2)); fi
}
check "nodes with an exec user: a 401 renews the credential, then it is kept" \
  exec_command 2 nodes
check "... claims" exec_command 2 claims
check "... top --once" exec_command 2 top "$NODE_NAME" --once
exec_info_says() {
  checks_py exec-infos-as-kubectl-sends \
    "$(k config view --minify -o 'jsonpath={.clusters[0].cluster.server}')" < "$EXEC_DIR/runs"
}
check "... the plugin got its ExecCredential spec with the cluster" exec_info_says
date -u -d '-1 minute' +%Y-%m-%dT%H:%M:%SZ > "$EXEC_DIR/expiry"
check "an expired credential is renewed before each request" exec_command more nodes
echo "$future" > "$EXEC_DIR/expiry"
exec_debug_archive() {
  rm -f "$EXEC_DIR/runs"
  local code=0
  exec_cli debug "$NODE_NAME" --output="$EXEC_DIR/bundle.tar" || code=$?
  ((code == 0 || code == 3)) || return 1  # 3: a part is missing, which debug_bundle checks
  [[ -s "$EXEC_DIR/bundle.tar" ]] && echo "the plugin ran $(plugin_runs) times" && (($(plugin_runs) >= 2))
}
check "debug (pods/exec, pods/log) with an exec user" exec_debug_archive
# debug_bundle.sh's check, with the plugin's two tokens as well; there is no agent token to look
# for here, so the SA token stands in for it.
exec_archive_has_no_token() {
  checks_py debug-bundle-without-secrets "$EXEC_DIR/bundle.tar" "$(cat "$EXEC_DIR/token")" \
    "$KUBECONFIG" "$(cat "$EXEC_DIR/revoked")"
}
check "... and neither of the plugin's tokens is in the archive" exec_archive_has_no_token
# For docs/kubectl-neuron's numbers: the same reads through kubectl (one process, and one plugin
# run, per call) and through our client, with the exec user.
time_both_ways() {
  local start end i
  start="$(date +%s%N)"
  for i in 1 2 3 4 5; do exec_cli nodes > /dev/null || return 1; done
  end="$(date +%s%N)"
  echo "kubectl neuron nodes: $(((end - start) / 5000000)) ms each (5 runs)"
  start="$(date +%s%N)"
  for i in 1 2 3 4 5; do
    KUBECONFIG="$EXEC_DIR/config:$KUBECONFIG" "$KUBECTL" get --raw /api/v1/nodes > /dev/null &&
      KUBECONFIG="$EXEC_DIR/config:$KUBECONFIG" "$KUBECTL" get --raw /api/v1/pods > /dev/null ||
      return 1
  done
  end="$(date +%s%N)"
  echo "the same two lists through kubectl get --raw: $(((end - start) / 5000000)) ms each (5 runs)"
}
# Printed, not checked: a measurement, not a test.
time_both_ways || echo "timing: a run failed"
k delete clusterrolebinding neuron-cli-exec > /dev/null
k delete serviceaccount -n e2e neuron-cli-exec > /dev/null
rm -rf "$EXEC_DIR"
