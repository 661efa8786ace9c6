#!/usr/bin/env bash
# Builds the libFuzzer targets in tests/fuzz with clang under ASan+UBSan (build-fuzz/) and runs each
# for SECONDS (default 60), seeded from tests/fuzz/corpus/<target>/ and the captured requests in
# tests/fixtures/captures. Prints executions per second and coverage per target; exits non-zero on
# any finding, leaving the input that caused it in build-fuzz/findings/<target>/ (turn it into a
# regression test).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
shift || true
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a whole number, got $seconds" >&2; exit 2; }
command -v clang++ > /dev/null || { echo "fuzz.sh: clang++ is needed (scripts/install-deps.sh installs it)" >&2; exit 2; }

build=build-fuzz
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTORUS_FUZZ=ON -DTORUS_WERROR=OFF -DTORUS_BUILD_BENCHMARKS=OFF > /dev/null
cmake --build "$build" --target fuzzers -j "$(nproc)"

targets=("$@")
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(cd tests/fuzz && ls fuzz_*.cc | sed 's/\.cc$//')
fi
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=0
printf '%-24s %10s %8s %8s %s\n' target execs/s cov features result
for target in "${targets[@]}"; do
  corpus="$build/corpus/$target"
  findings="$build/findings/$target"
  mkdir -p "$corpus" "$findings"
  seeds=()
  [[ -d "tests/fuzz/corpus/$target" ]] && seeds+=("tests/fuzz/corpus/$target")
  [[ "$target" == fuzz_extender_request ]] && seeds+=("$build/seeds-extender")
  if [[ "$target" == fuzz_extender_request ]]; then
    # The captured kube-scheduler requests, each prefixed with the byte that picks its verb.
    mkdir -p "$build/seeds-extender"
    for capture in tests/fixtures/captures/*.request.json; do
      verb="$(basename "$capture" .request.json)"
      case "${verb#nodecachecapable-}" in
        filter) byte='\x00' ;; prioritize) byte='\x01' ;; bind) byte='\x02' ;; preempt) byte='\x03' ;;
        *) continue ;;
      esac
      { printf "$byte"; cat "$capture"; } > "$build/seeds-extender/$(basename "$capture")"
    done
  fi
  log="$build/findings/$target.log"
  if "$build/bin/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$findings/" -print_final_stats=1 "$corpus" "${seeds[@]}" > "$log" 2>&1; then
    result=ok
  else
    result="FINDING (see $log and $findings/)"
    failed=1
  fi
  stats="$(grep -E '^#[0-9]+' "$log" | tail -1)"
  cov="$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<< "$stats")"
  features="$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<< "$stats")"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")"
  printf '%-24s %10s %8s %8s %s\n' "$target" "${rate:-?}" "${cov:-?}" "${features:-?}" "$result"
  if ((failed)) && [[ "$result" != ok ]]; then tail -n 30 "$log"; fi
done
exit "$failed"
