#!/usr/bin/env bash
# Builds the libFuzzer targets in tests/fuzz with clang under ASan+UBSan (build-asan/, the tree of
# scripts/test.sh --sanitize=address,undefined) and runs each for SECONDS (default 60), one per CPU
# at a time, seeded from tests/fuzz/corpus/<target>/ and the captured requests in
# tests/fixtures/captures. Prints executions per second and coverage per target; exits non-zero on
# any finding, leaving the input that caused it in build-asan/findings/<target>/ (turn it into a
# regression test).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
shift || true
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a whole number, got $seconds" >&2; exit 2; }

build=build-asan
scripts/test.sh --sanitize=address,undefined --target=fuzzers --build-only

targets=("$@")
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(cd tests/fuzz && ls fuzz_*.cc | sed 's/\.cc$//')
fi
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# fuzz_one TARGET: runs one fuzzer for SECONDS; writes "ok" or the finding to its .result file.
fuzz_one() {
  local target="$1" corpus="$build/corpus/$1" findings="$build/findings/$1" seeds=()
  mkdir -p "$corpus" "$findings"
  [[ -d "tests/fuzz/corpus/$target" ]] && seeds+=("tests/fuzz/corpus/$target")
  if [[ "$target" == fuzz_extender_request ]]; then
    # The captured kube-scheduler requests, each prefixed with the byte that picks its verb.
    local capture verb byte
    mkdir -p "$build/seeds-extender"
    seeds+=("$build/seeds-extender")
    for capture in tests/fixtures/captures/*.request.json; do
      verb="$(basename "$capture" .request.json)"
      case "${verb#nodecachecapable-}" in
        filter) byte='\x00' ;; prioritize) byte='\x01' ;; bind) byte='\x02' ;; preempt) byte='\x03' ;;
        *) continue ;;
      esac
      { printf "$byte"; cat "$capture"; } > "$build/seeds-extender/$(basename "$capture")"
    done
  fi
  if "$build/bin/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$findings/" -print_final_stats=1 "$corpus" "${seeds[@]}" \
    > "$build/findings/$target.log" 2>&1; then
    echo ok > "$build/findings/$target.result"
  else
    echo "FINDING (see $build/findings/$target.log and $findings/)" > "$build/findings/$target.result"
  fi
}

# One fuzzer per CPU at a time: each is single-threaded, so CI's two cores run two at once.
parallel="$(nproc)"
echo "fuzz.sh: ${#targets[@]} targets, ${seconds} s each, $parallel at a time"
running=0
for target in "${targets[@]}"; do
  if ((running >= parallel)); then
    wait -n || true  # fuzz_one records its own result
    running=$((running - 1))
  fi
  rm -f "$build/findings/$target.result"
  fuzz_one "$target" &
  running=$((running + 1))
done
wait

failed=0
printf '%-24s %10s %8s %8s %s\n' target execs/s cov features result
for target in "${targets[@]}"; do
  log="$build/findings/$target.log"
  result="$(cat "$build/findings/$target.result" 2> /dev/null || echo "did not run (see $log)")"
  stats="$(grep -E '^#[0-9]+' "$log" | tail -1)"
  cov="$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<< "$stats")"
  features="$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<< "$stats")"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")"
  printf '%-24s %10s %8s %8s %s\n' "$target" "${rate:-?}" "${cov:-?}" "${features:-?}" "$result"
  if [[ "$result" != ok ]]; then
    failed=1
    tail -n 30 "$log"
  fi
done
exit "$failed"
