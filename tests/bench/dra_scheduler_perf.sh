#!/usr/bin/env bash
# DRA scheduling throughput measured the way upstream measures it: upstream's scheduler_perf
# (k8s.io/kubernetes/test/integration/scheduler_perf, the pinned version, its own API server,
# etcd and kube-scheduler in one process) runs, in one invocation of this script:
#   - upstream's own DRA workloads, unchanged, from their directory in the module cache: the
#     anchor (claims from a template; five requests under matchAttribute; partitionable devices);
#   - dra_scheduler_perf/performance-config.yaml: nodes whose ResourceSlices are exactly what
#     Torus's driver publishes for a trn2.48xlarge (`neuron-ls --resource-slices`, the driver's
#     code), with the chart's DeviceClasses and the claims docs/dra.md recommends, each beside a
#     reference case of upstream's devices with as many devices per node and the same request
#     shape. The ratio Torus / reference is what Torus's slice layout costs.
#
#   tests/bench/dra_scheduler_perf.sh [--only-torus] [--baseline=NEURON-LS] [--keep]
#     --only-torus   skip upstream's own workloads (the reference cases still run)
#     --baseline=B   also run the Torus cases with the slices of another build's neuron-ls B (an
#                    earlier commit's build/bin/neuron-ls), same run: a slice change before/after
#     --keep         keep the work directory (configs, templates, raw results)
#
# The first run builds upstream's benchmark binaries (scripts/cluster/build-components.sh
# --only=scheduler-perf, about 9 minutes on 2 cores); later runs take about 7 minutes.
# Prints a table (pods/s as scheduler_perf's SchedulingThroughput average) and the ratios.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
source "$REPO/scripts/cluster/versions.sh"

only_torus=0 keep=0 baseline=""
for arg in "$@"; do
  case "$arg" in
    --only-torus) only_torus=1 ;;
    --baseline=*) baseline="${arg#--baseline=}" ;;
    --keep) keep=1 ;;
    -h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "dra_scheduler_perf: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

log() { printf '[dra-perf %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

"$REPO/scripts/cluster/build-components.sh" --only=etcd,scheduler-perf
PERF_BIN="$TORUS_CACHE/scheduler-perf-$K8S_VERSION/bin"
export PATH="$TORUS_CACHE/etcd-$ETCD_VERSION/bin:$PATH"  # scheduler_perf starts its own etcd
cmake --build "$REPO/build" --target neuron-ls > /dev/null
[[ -x "$REPO/build/tools/helm" ]] || "$REPO/scripts/get-helm.sh" > /dev/null
UPSTREAM="$(go env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION/test/integration/scheduler_perf/dra"
[[ -d "$UPSTREAM" ]] || { echo "no $UPSTREAM (the build above downloads it)" >&2; exit 1; }

[[ -z "$baseline" || -x "$baseline" ]] || { echo "--baseline: $baseline is not executable" >&2; exit 2; }

WORK="$(mktemp -d /tmp/torus-dra-perf-XXXXXX)"
((keep)) || trap 'rm -rf "$WORK"' EXIT

# The driver's slices for a trn2.48xlarge named NODE, turned into scheduler_perf templates: the
# node is upstream's scheduler-perf-dra-<index>, and every NeuronLink group id gets the index in
# front, so no two nodes share one (as node names make them differ on a real cluster).
# slice_templates NEURON-LS DIR PREFIX [NEURON-LS FLAGS...]: writes DIR/PREFIX-<k>.yaml, one per
# slice, and prints how many.
slice_templates() {
  local neuron_ls="$1" dir="$2" prefix="$3"
  shift 3
  "$neuron_ls" --simulate=trn2.48xlarge --resource-slices=NODE "$@" |
    python3 "$REPO/tests/bench/dra_scheduler_perf/templates.py" slices "$prefix" "$dir"
}

# prepare DIR NEURON-LS: DIR/ holds the config and DIR/templates/ upstream's templates, the slices
# of NEURON-LS, the chart's DeviceClasses and the claims.
prepare() {
  local dir="$1" neuron_ls="$2"
  mkdir -p "$dir/templates"
  cp "$UPSTREAM"/templates/*.yaml "$dir/templates/"
  cp "$REPO/tests/bench/dra_scheduler_perf/performance-config.yaml" "$dir/"
  cp "$REPO"/tests/bench/dra_scheduler_perf/torus-claim-*.yaml "$dir/templates/"
  local chip_slices core_slices
  chip_slices="$(slice_templates "$neuron_ls" "$dir/templates" torus-slice-chips \
    --dra-core-devices=false)"
  core_slices="$(slice_templates "$neuron_ls" "$dir/templates" torus-slice-cores)"
  [[ "$chip_slices" == 1 && "$core_slices" == 3 ]] || {
    echo "$neuron_ls publishes $chip_slices slice(s) of chips and $core_slices with cores;" \
      "performance-config.yaml creates 1 and 3: update it" >&2
    exit 1
  }
  # The chart's DeviceClasses, one file each.
  "$REPO/build/tools/helm" template torus "$REPO/helm/torus" --set dra.enabled=true \
    --show-only templates/dra-deviceclasses.yaml |
    python3 "$REPO/tests/bench/dra_scheduler_perf/templates.py" device-classes "$dir/templates"
  for class in chip core; do
    [[ -s "$dir/templates/torus-class-$class.yaml" ]] ||
      { echo "the chart renders no $class.neuron.aws.com DeviceClass" >&2; exit 1; }
  done
}
mkdir -p "$WORK/results" "$WORK/baseline-results"
prepare "$WORK/torus" "$REPO/build/bin/neuron-ls"
[[ -z "$baseline" ]] || prepare "$WORK/baseline" "$baseline"

# run DIR BINARY BENCH-REGEX [RESULTS]: upstream's benchmark binary on the config in DIR, its
# figures into RESULTS (default $WORK/results). Upstream's own workloads carry perf-dash thresholds
# (set for its 6-core benchmark hosts); a figure below one fails the binary but is still
# written, so it is reported here, not treated as a failure.
run() {
  local dir="$1" binary="$2" regex="$3" results="${4:-$WORK/results}" started=$SECONDS
  local output="$results/$(basename "$binary")-$(date +%s%N).log"
  log "running $regex"
  if ! (cd "$dir" && "$binary" -test.run='^$' -test.bench="$regex" -test.benchtime=1x \
    -test.timeout=60m -perf-scheduling-label-filter= -data-items-dir="$results" \
    > "$output" 2>&1); then
    if grep -q 'FATAL ERROR\|^panic:' "$output" || ! grep -q 'to be higher' "$output"; then
      log "$regex failed: the end of its log follows"
      tail -n 30 "$output"
      exit 1
    fi
    grep -o 'BenchmarkPerfScheduling/[^ ]*: expected "SchedulingThroughput".*' "$output" |
      sed 's/^/  below its upstream threshold: /' >&2
  fi
  log "done in $((SECONDS - started)) s"
}

if ((!only_torus)); then
  run "$UPSTREAM" "$PERF_BIN/dra.test" \
    'BenchmarkPerfScheduling$/^SchedulingWithResourceClaimTemplate$/^(2000pods_200nodes|match_empty_500nodes)$'
  run "$UPSTREAM/partitionabledevices" "$PERF_BIN/partitionable.test" \
    'BenchmarkPerfScheduling$/^Partitionable$/^empty_500nodes$'
fi
TORUS_CASES='TorusChips|TorusConnectedChips|TorusCores|TorusChipsOnPartitionedNodes'
run "$WORK/torus" "$PERF_BIN/dra.test" "BenchmarkPerfScheduling\$/^(ReferenceDevices|$TORUS_CASES)\$/"
if [[ -n "$baseline" ]]; then
  run "$WORK/baseline" "$PERF_BIN/dra.test" "BenchmarkPerfScheduling\$/^($TORUS_CASES)\$/" \
    "$WORK/baseline-results"
fi

python3 "$REPO/tests/bench/dra_scheduler_perf/report.py" "$WORK/results" "$WORK/baseline-results"
if ((keep)); then echo "kept: $WORK"; fi
