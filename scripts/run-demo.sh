#!/usr/bin/env bash
# Builds Torus and runs the main job: the scheduler extender on a simulated cluster (256
# trn2.48xlarge + 64 inf2.48xlarge) on 127.0.0.1:12345, and the node agent on a simulated
# trn2.48xlarge (16 Trainium2 devices, LNC 2, 64 logical cores), serving /healthz on
# 127.0.0.1:9400 and the kubelet device plugin API in build/demo/device-plugins (a kubelet
# started with that directory would register it), until Ctrl-C. Extra arguments go to neuron-node-agent (try --simulate-fault=ecc:3 or
# --log-level=debug, or --device-plugin-dir=/var/lib/kubelet/device-plugins on a real node).
set -euo pipefail
cd "$(dirname "$0")/.."

cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j "$(nproc)" --target neuron-node-agent neuron-ls neuron-scheduler-extender

echo "== neuron-ls on a simulated trn2.48xlarge =="
build/bin/neuron-ls --simulate=trn2.48xlarge --topology
echo "== neuron-scheduler-extender on a simulated cluster (http://127.0.0.1:12345) =="
build/bin/neuron-scheduler-extender --listen=127.0.0.1:12345 \
  --simulate-cluster=trn2.48xlarge:256,inf2.48xlarge:64 &
extender=$!
trap 'kill "$extender" 2>/dev/null; wait "$extender" 2>/dev/null' EXIT
echo "== neuron-node-agent (Ctrl-C stops both; curl http://127.0.0.1:9400/metrics or /allocations; extender: curl http://127.0.0.1:12345/state) =="
mkdir -p build/demo/device-plugins
build/bin/neuron-node-agent --simulate=trn2.48xlarge --metrics-addr=127.0.0.1:9400 \
  --device-plugin-dir=build/demo/device-plugins \
  --pod-resources-socket=build/demo/pod-resources.sock "$@"
