#!/usr/bin/env bash
# Installs every build and test dependency of Torus from Debian bookworm's archive.
# README.md, .ci/run and the Dockerfile all call this one script so their package lists
# can never drift apart.
#
#   scripts/install-deps.sh            build + test + local-cluster dependencies (developer, CI)
#   scripts/install-deps.sh --build    only what building needs (the Dockerfile's build stage)
#   scripts/install-deps.sh --runtime  only the shared libraries the binaries need at run time
set -euo pipefail

build_packages=(
  build-essential cmake ninja-build ccache pkg-config git ca-certificates
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libfabric-dev libfabric-bin
  libyaml-cpp-dev libcpp-httplib-dev nlohmann-json3-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-format curl unzip
)
# Tools the tests and benchmarks run next to our code: clang's libFuzzer runs tests/fuzz; promtool
# (package prometheus) checks /metrics; Open MPI is the baseline of
# tests/bench/collectives_vs_mpi.sh; ip and unshare make the network namespaces of the two-host
# collectives test; python3-venv holds the benchmarks' plotting library (scripts/bench-venv.sh).
test_packages=(
  clang  # libFuzzer for tests/fuzz (scripts/fuzz.sh)
  libclang-rt-14-dev  # libFuzzer's and the sanitizers' runtimes: clang only recommends them
  prometheus
  openmpi-bin libopenmpi-dev
  iproute2 util-linux
  python3-venv
  apparmor  # apparmor_parser compiles deploy/apparmor's profile (the kernel here need not load it)
)
# The local Kubernetes cluster of the end-to-end tests and the demo (scripts/local-cluster.sh):
# the CNI bridge plugin for containerd, libseccomp for the runc built from its Go module, podman
# and debootstrap to build the image from the Dockerfile without a Docker engine or a registry,
# tmux for terminal tests, python3-yaml to read rendered charts, libfuse3 for the nodes' simulated
# driver (neuron-sim-driver), envsubst (gettext-base) for the examples; Go builds the rest from
# modules.
cluster_packages=(
  containernetworking-plugins podman buildah debootstrap libseccomp-dev
  iptables conntrack ethtool socat python3 python3-yaml tmux libfuse3-dev gettext-base
)
# libfabric1 is opened at run time by the collectives (dlopen), so ldd does not list it: keep it.
runtime_packages=(
  libgrpc++1.51 libprotobuf32 libfabric1 libyaml-cpp0.7 libcpp-httplib0.11 libssl3 ca-certificates
)

case "${1:-}" in
  "") packages=("${build_packages[@]}" "${test_packages[@]}" "${cluster_packages[@]}") ;;
  --build) packages=("${build_packages[@]}") ;;
  --runtime) packages=("${runtime_packages[@]}") ;;
  *) echo "install-deps: unknown argument $1 (use --build or --runtime)" >&2; exit 2 ;;
esac

sudo_cmd=()
if [[ "$(id -u)" != 0 ]]; then
  sudo_cmd=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
echo "install-deps: installed ${#packages[@]} packages"
