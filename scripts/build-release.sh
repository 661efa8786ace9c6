#!/usr/bin/env bash
# Release build of every binary, without tests: what the Dockerfile runs, and what CI runs to
# check the Dockerfile's build steps. Usage: scripts/build-release.sh [BUILD_DIR] (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DTORUS_BUILD_TESTS=OFF -DTORUS_BUILD_BENCHMARKS=OFF
cmake --build "$build_dir" -j "$(nproc)"
for binary in "$build_dir"/bin/*; do
  "$binary" --version
done
