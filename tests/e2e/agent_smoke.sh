#!/usr/bin/env bash
# End-to-end: the node agent on a simulated trn2.48xlarge, probed the way an operator would
# (curl /healthz, neuron-ls on the same tree), then stopped with SIGTERM. Bounded: every wait
# gives up after a deadline and the script kills what it started.
set -euo pipefail

bin_dir="${1:?usage: agent_smoke.sh BIN_DIR}"
work="$(mktemp -d)"
agent_pid=""
cleanup() {
  if [[ -n "$agent_pid" ]] && kill -0 "$agent_pid" 2>/dev/null; then kill -9 "$agent_pid"; fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; echo "--- agent log ---" >&2; cat "$work/agent.log" >&2 || true; exit 1; }

# Its own device-plugin directory: a kubelet on this machine (a local cluster) must not see it.
mkdir -p "$work/device-plugins"
"$bin_dir/neuron-node-agent" --simulate=trn2.48xlarge --simulate-dir="$work/node" \
  --device-plugin-dir="$work/device-plugins" --metrics-addr=127.0.0.1:0 --admin-addr=127.0.0.1:0 \
  --simulate-fault=ecc:7 2>"$work/agent.log" &
agent_pid=$!

port=""
for _ in $(seq 1 200); do
  port="$(sed -n 's/.*"serving HTTP".* port=\([0-9]*\).*/\1/p' "$work/agent.log")"
  [[ -n "$port" ]] && break
  kill -0 "$agent_pid" 2>/dev/null || fail "agent exited during startup"
  sleep 0.1
done
[[ -n "$port" ]] || fail "agent did not start serving within 20 s"

[[ "$(curl -fsS --max-time 5 "http://127.0.0.1:$port/healthz")" == "ok" ]] || fail "/healthz"
grep -q '"discovered node" instance_type=trn2.48xlarge devices=16 healthy_devices=15 cores=64 lnc=2' \
  "$work/agent.log" || fail "discovery summary missing from the agent log"
grep -q 'WARN discovery "device unhealthy; it will not be offered to workloads" device=7' \
  "$work/agent.log" || fail "unhealthy device 7 not logged"

# neuron-ls reads the very tree the agent runs on, as it would on a real node.
roots=(--sysfs-root="$work/node/sys" --dev-root="$work/node/dev" --aws-root="$work/node/opt/aws")
"$bin_dir/neuron-ls" "${roots[@]}" --json > "$work/ls.json"
grep -q '"health_reason": "stats/hardware/mem_ecc_uncorrected is 1' "$work/ls.json" \
  || fail "neuron-ls did not see the ECC fault"
[[ "$(grep -c '"neuron_device"' "$work/ls.json")" == 16 ]] || fail "neuron-ls device count"

kill -TERM "$agent_pid"
for _ in $(seq 1 100); do
  kill -0 "$agent_pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$agent_pid" 2>/dev/null && fail "agent still running 10 s after SIGTERM"
wait "$agent_pid" || fail "agent exited with status $?"
agent_pid=""
grep -q '"stopped"' "$work/agent.log" || fail "no clean stop logged"
echo "e2e agent smoke: ok (port $port)"
