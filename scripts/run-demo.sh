#!/usr/bin/env bash
# The main job: a real Kubernetes on this machine (scripts/local-cluster.sh) with Torus installed
# by its Helm chart on three real nodes — two trn2u.48xlarge of one simulated UltraServer and a
# trn2.48xlarge, each a kubelet in its own namespaces with the driver's files at the real paths —
# the example pods from deploy/examples/ scheduled through the chart's neuron-scheduler and the
# extender, and where each one landed, shown by kubectl neuron. The cluster stays up until
# Ctrl-C, then everything is stopped.
#
# The first run on a machine builds Kubernetes, containerd, runc and etcd from their Go modules
# (about 10 minutes on 2 cores) and Torus's image (about 5 more); later runs start in a minute.
# Needs root (the kubelet and containerd). Arguments go to `local-cluster.sh up`, for example
# --k8s-version=v1.34.4, --nodes=trn2.48xlarge:1 or --simulate-fault=ecc:3.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ " $* " == *" --help "* || " $* " == *" -h "* ]]; then
  cat <<'HELP'
scripts/run-demo.sh [options of local-cluster.sh up]

Brings up a real Kubernetes on this machine with Torus installed by its Helm chart on three real
nodes (two trn2u.48xlarge of one simulated UltraServer and a trn2.48xlarge), runs the example
pods of deploy/examples/ through the chart's neuron-scheduler and the extender, and shows where
each landed (kubectl neuron). The cluster stays up until Ctrl-C, then everything is stopped.

The first run builds Kubernetes, containerd, runc and etcd from their Go modules (about 10 minutes
on 2 cores) and Torus's image (about 5 more); later runs start in a minute. Needs root.

Options are passed to `scripts/local-cluster.sh up`, for example --nodes=trn2.48xlarge:1,
--k8s-version=v1.34.4 or --simulate-fault=ecc:3 (scripts/local-cluster.sh --help lists them).
TORUS_DEMO_STATE sets the state directory (default ~/.cache/torus/local-cluster).
HELP
  exit 0
fi
state="${TORUS_DEMO_STATE:-${XDG_CACHE_HOME:-$HOME/.cache}/torus/local-cluster}"

echo "== building kubectl-neuron and neuron-ls"
scripts/get-helm.sh > /dev/null
cmake -S . -B build -G Ninja > /dev/null
cmake --build build -j "$(nproc)" --target kubectl-neuron neuron-ls neuron-sim-driver

if [[ -f "$state/pids/order" ]]; then
  echo "== a local cluster already runs from $state; stopping it first"
  scripts/local-cluster.sh down --state-dir="$state"
fi
cleanup() {
  echo
  echo "== stopping the local cluster"
  scripts/local-cluster.sh down --state-dir="$state"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

nodes=(--nodes=trn2u.48xlarge:2@us0,trn2.48xlarge:1)
[[ " $* " == *" --nodes="* || " $* " == *" --instance-type="* ]] && nodes=()
echo "== local Kubernetes with Torus (scripts/local-cluster.sh up ${nodes[*]} $*)"
scripts/local-cluster.sh up --state-dir="$state" "${nodes[@]}" "$@"
source "$state/cluster.env"
export KUBECONFIG
kubectl=("$KUBECTL")
neuron() { build/bin/kubectl-neuron "$@"; }

echo "== the example pods (deploy/examples/), through neuron-scheduler"
for example in one-core four-cores one-device sixteen-devices; do
  "${kubectl[@]}" apply -f "deploy/examples/$example.yaml"
done
deadline=$((SECONDS + 180))
while ((SECONDS < deadline)); do
  pending="$("${kubectl[@]}" get pods -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' |
    grep -cv -e Succeeded -e Failed || true)"
  ((pending == 0)) && break
  sleep 2
done
"${kubectl[@]}" get pods -o wide
# All four must run: a pod Torus places waits for its ids rather than fail admission.
failed="$("${kubectl[@]}" get pods -o jsonpath='{range .items[?(@.status.phase!="Succeeded")]}{.metadata.name}: {.status.phase} {.status.reason} {.status.message}{"\n"}{end}')"
if [[ -z "$failed" ]]; then
  echo "== all 4 examples ran to completion"
else
  echo "== NOT every example ran:"
  echo "$failed"
fi

echo "== where each pod landed (kubectl neuron pods)"
neuron pods
echo "== the nodes (kubectl neuron nodes; kubectl neuron node $NODE_NAME)"
neuron nodes
neuron node "$NODE_NAME"

cat <<TEXT

The cluster keeps running until Ctrl-C. In another shell:
  export KUBECONFIG=$KUBECONFIG
  $KUBECTL get pods -A
  build/bin/kubectl-neuron nodes
  $KUBECTL logs -n kube-system -l app.kubernetes.io/component=node-agent --prefix   # every agent
  curl -s http://$NODE_IP:$AGENT_METRICS_PORT/metrics | grep torus_     # the first node's agent
  curl -s http://$EXTENDER_HOST:$EXTENDER_PORT/state                  # the extender
  scripts/local-cluster.sh shell $NODE_NAME --state-dir=$state         # inside a node
TEXT
# `wait` returns at once when a signal arrives, so Ctrl-C or SIGTERM stop the cluster promptly.
while true; do
  sleep 3600 &
  wait $!
done
