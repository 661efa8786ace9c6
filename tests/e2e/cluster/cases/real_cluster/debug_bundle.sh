# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# kubectl neuron debug: one archive of a faulty device's evidence, collected through pods/exec and
# pods/log with the caller's kubeconfig, whose manifest lists parts that are all there, and with
# no Secret or token in it.

echo "== kubectl neuron debug"
pod_manifest debugged neuron 1 neuron-scheduler 600 | k apply -f - > /dev/null
check "a pod on the device to debug runs" eventually 90 pod_running debugged
DEBUG_DEVICE="$(annotation_of debugged AWS_NEURON_IDS)"
# A hardware error on that chip, in the kernel's log, as aws_health.sh writes one.
debug_serial="$(cat "$SIMULATED_NODE_DIR/sys/devices/virtual/neuron_device/neuron$DEBUG_DEVICE/info/serial_number")"
echo "NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR instance-id=i-0e2e0000000000003 hostname=$NODE_NAME" \
  "nd-id=$DEBUG_DEVICE nc-id=0 serial-num=$debug_serial action=TERMINATE_INSTANCE" > /dev/kmsg
debug_device_unhealthy() {
  curl -sf "http://$NODE_IP:$AGENT_METRICS_PORT/metrics" |
    grep -Eq "^torus_device_health_state\{.*neuron_device_index=\"$DEBUG_DEVICE\",state=\"unhealthy\"\} 1\$"
}
check "the chip is unhealthy after the kernel's line" eventually 15 debug_device_unhealthy

DEBUG_DIR="$(mktemp -d)"
debug_archive_complete() {
  neuron_cli debug "$NODE_NAME" --device="$DEBUG_DEVICE" --output="$DEBUG_DIR/bundle.tar" &&
    tar -xf "$DEBUG_DIR/bundle.tar" -C "$DEBUG_DIR"
}
check "kubectl neuron debug NODE --device=N writes a complete archive" debug_archive_complete
debug_contents() {
  python3 - "$DEBUG_DIR" "$DEBUG_DEVICE" "$debug_serial" <<'PY'
import glob, json, os, sys
root, device, serial = sys.argv[1], int(sys.argv[2]), sys.argv[3]
[top] = [d for d in glob.glob(f"{root}/neuron-debug-*") if os.path.isdir(d)]
manifest = json.load(open(f"{top}/manifest.json"))
assert manifest["device"] == device, manifest["device"]
files = {p["file"] for p in manifest["parts"]}
for p in manifest["parts"]:
    assert "error" not in p, p
    assert os.path.getsize(f"{top}/{p['file']}") == p["bytes"], p
want = {"agent/state.json", "agent/kernel-log.txt", "agent/metrics.txt", "agent/allocations.json",
        "agent/log.txt", f"devices/neuron{device}/driver.json", "cluster/node.json",
        "cluster/events.json", "cluster/pods.json", "cluster/claims.json", "cluster/slices.json"}
assert want <= files, want - files
state = json.load(open(f"{top}/agent/state.json"))
[chip] = state["devices"]
assert chip["health"]["state"] == "unhealthy", chip["health"]
assert any(p["code"] == "SRAM_UNCORRECTABLE_ERROR" for p in chip["health"]["problems"]), chip
kernel = open(f"{top}/agent/kernel-log.txt").read()
assert f"NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR instance-id=i-0e2e0000000000003" in kernel, kernel
assert f"serial-num={serial}" in kernel, kernel
assert os.path.isfile(f"{top}/devices/neuron{device}/sys/core_count")
assert "torus_device_health_state" in open(f"{top}/agent/metrics.txt").read()
assert "ready" in open(f"{top}/agent/log.txt").read()
pods = [p["metadata"]["name"] for p in json.load(open(f"{top}/cluster/pods.json"))]
assert pods == ["debugged"], pods
node = json.load(open(f"{top}/cluster/node.json"))
assert any(c["type"] == "NeuronHealth" for c in node["status"]["conditions"]), node["status"]
PY
}
check "...with the chip's health, its kernel line, driver files, the agent's log and metrics, the Node and the pod on it" debug_contents
# The credentials that could leak: the agent's service-account token (what it reads the API
# with), the kubeconfig's, and any JWT or private key at all.
debug_no_secrets() {
  local agent token
  agent="$(agent_pods -o jsonpath='{.items[0].metadata.name}')"
  token="$(k exec -n kube-system "$agent" -- cat /var/run/secrets/kubernetes.io/serviceaccount/token)"
  [[ -n "$token" ]] || { echo "no token read from the agent's pod"; return 1; }
  python3 - "$DEBUG_DIR/bundle.tar" "$token" "$KUBECONFIG" <<'PY'
import base64, re, sys
archive = open(sys.argv[1], "rb").read()
secrets = [sys.argv[2].encode()]
for line in open(sys.argv[3]):
    key, _, value = line.strip().partition(": ")
    if key in ("token", "client-key-data"):
        secrets.append(value.encode())
        if key == "client-key-data":
            secrets.append(base64.b64decode(value).split(b"\n")[1])  # the key's first line
for secret in secrets:
    assert secret not in archive, f"a credential is in the archive ({secret[:8]}...)"
assert not re.search(rb"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.", archive), "a JWT is in the archive"
assert b"PRIVATE KEY" not in archive, "a private key is in the archive"
assert b'"kind": "Secret"' not in archive and b'"kind":"Secret"' not in archive
PY
}
check "...and no Secret, service-account token or kubeconfig credential" debug_no_secrets
debug_unknown_device() {
  local output
  output="$(neuron_cli debug "$NODE_NAME" --device=99 --output="$DEBUG_DIR/partial.tar" 2>&1)"
  local code=$?
  echo "$output"
  ((code == 3)) && grep -q "device 99 is not on this node" <<< "$output"
}
check "a device the node does not have: the archive says so, and the exit code" debug_unknown_device
rm -rf "$DEBUG_DIR"
k delete pod -n e2e debugged --wait=false > /dev/null
