#!/usr/bin/env bash
# Builds Torus and runs every test (unit, integration, e2e) with CTest, then the end-to-end tests
# on a real Kubernetes (tests/e2e/cluster/real_cluster_test.sh for the device plugin and extender,
# multinode_test.sh for five real nodes, ultraserver_test.sh for UltraServer workloads on four,
# dra_test.sh for the DRA driver, dra_134_test.sh for its fallbacks on Kubernetes 1.34: build
# upstream's components once per version, need root).
#
#   scripts/test.sh                               build/ (RelWithDebInfo, warnings as errors)
#   scripts/test.sh --sanitize=address,undefined  build-asan/ with ASan+UBSan, by clang (CTest only;
#                                                 the same build holds the fuzzers, scripts/fuzz.sh)
#   scripts/test.sh --sanitize=thread             build-tsan/ with TSan (CTest only)
#   scripts/test.sh --no-cluster                  CTest only, without the real-cluster test
#   scripts/test.sh --target=concurrency_test ... build only that CMake target (and what it needs)
#   scripts/test.sh --build-only ...              configure and build, run nothing
# Extra arguments after -- go to ctest (e.g. -- -L unit, -- -R Placement) and skip the cluster.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=""
cluster=1
run_tests=1
build_dir="build"
ctest_args=()
build_targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sanitize=*) sanitize="${1#--sanitize=}"; cluster=0 ;;
    --no-cluster) cluster=0 ;;
    --build-only) run_tests=0; cluster=0 ;;
    --target=*) build_targets+=(--target "${1#--target=}") ;;
    --) shift; ctest_args=("$@"); cluster=0; break ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$sanitize" in
  "") ;;
  address,undefined|undefined,address) build_dir="build-asan" ;;
  thread) build_dir="build-tsan" ;;
  *) echo "test.sh: --sanitize must be address,undefined or thread" >&2; exit 2 ;;
esac

jobs="$(nproc)"
scripts/get-helm.sh >/dev/null  # the chart tests run the real helm
# Sanitizer builds run tests only: the benchmarks are built (and measured) in Release.
configure=(-DTORUS_WERROR=ON -DTORUS_SANITIZE="$sanitize")
[[ -n "$sanitize" ]] && configure+=(-DTORUS_BUILD_BENCHMARKS=OFF)
if [[ "$build_dir" == build-asan ]]; then
  # clang builds the ASan+UBSan tree (faster than g++ here, and a second compiler's warnings) with
  # libFuzzer's coverage hooks, so scripts/fuzz.sh links its fuzzers from the same objects.
  command -v clang++ > /dev/null ||
    { echo "test.sh: the ASan+UBSan build needs clang++ (scripts/install-deps.sh)" >&2; exit 2; }
  compiler="$(command -v clang++)"
  configure+=(-DCMAKE_CXX_COMPILER="$compiler" -DTORUS_FUZZ=ON)
  # A tree configured with another compiler cannot switch in place: start it again.
  if [[ -f "$build_dir/CMakeCache.txt" ]] &&
    ! grep -qx "CMAKE_CXX_COMPILER:[A-Z]*=$compiler" "$build_dir/CMakeCache.txt"; then
    rm -rf "$build_dir/CMakeCache.txt" "$build_dir/CMakeFiles"
  fi
fi
cmake -S . -B "$build_dir" -G Ninja "${configure[@]}" >/dev/null
cmake --build "$build_dir" -j "$jobs" "${build_targets[@]}"
((run_tests)) || exit 0
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# The tests run in a PID namespace of their own when root, as a node's processes are: the holder
# scan before a reset must read every process's open files (/proc/PID/fd), and the host's PID 1
# may be one that not even root can inspect in a container (then every reset would be refused,
# rightly).
runner=()
if [[ "$(id -u)" == 0 ]] && unshare --pid --fork --mount-proc true 2> /dev/null; then
  runner=(unshare --pid --fork --mount-proc)
fi
"${runner[@]}" ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" "${ctest_args[@]}"

if ((cluster)); then
  if [[ "$(id -u)" != 0 ]]; then
    echo "test.sh: the real-cluster test needs root (kubelet, containerd); run it as root" >&2
    exit 1
  fi
  tests/e2e/cluster/real_cluster_test.sh
  tests/e2e/cluster/multinode_test.sh
  tests/e2e/cluster/ultraserver_test.sh
  tests/e2e/cluster/dra_test.sh
  tests/e2e/cluster/dra_134_test.sh
fi
