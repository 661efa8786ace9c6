#!/usr/bin/env bash
# Collectives benchmark: our neuron-cc-bench next to Open MPI (shared memory: ob1 + vader; TCP:
# ob1 + the tcp BTL against ours over libfabric tcp;ofi_rxm) and a memory-bandwidth bound, all
# measured in this one run on the same host, with the ratios. Network cases stay on loopback.
#
#   tests/bench/collectives_vs_mpi.sh [build-dir] [runs]
#
# Then a sweep of 2-rank AllReduce over shared memory, 8 B to 64 MiB (median of 3), drawn as
# busbw by size against Open MPI and the memory bound: $PLOT_DIR/collectives-busbw-2r.png
# (default <build-dir>/bench-plots; the plotting library comes from scripts/bench-venv.sh).
#
# Needs Debian's openmpi-bin and libopenmpi-dev (mpicc compiles the MPI side into a temp dir).
# Each figure is the median of `runs` runs (default 5), ours and Open MPI's interleaved. Before
# each case the script waits (up to 60 s) for the CPUs to be >= 80 % idle, since the host's CPUs
# may be shared, and prints the idle share it saw. GB = 1e9 bytes; busbw uses nccl-tests'
# factors; both sides verify their results (check column).
set -euo pipefail

build_dir="${1:-build}"
runs="${2:-5}"
bench="$build_dir/bin/neuron-cc-bench"
[[ -x "$bench" ]] || { echo "no $bench: build the neuron-cc-bench target first" >&2; exit 2; }
for tool in mpicc mpirun gcc python3; do
  command -v "$tool" >/dev/null ||
    { echo "$tool not found (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 2; }
done

work="$(mktemp -d "${TMPDIR:-/tmp}/coll-vs-mpi.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The same MPI benchmark and memory probe as collectives_vs_peers.sh (tests/bench/peers/).
peers="$(dirname "$0")/peers"
report() { python3 "$peers/mpi_report.py" "$@"; }
mpicc -O3 -o "$work/mpibench" "$peers/mpi_bench.c"
gcc -O3 -pthread -o "$work/membw" "$peers/membw.c"

# shellcheck source=SCRIPTDIR/idle_wait.sh
source "$(dirname "$0")/idle_wait.sh"

transport=shm  # which pair the next measure() compares: shm, or tcp (both over loopback TCP)
mpi_run() {  # ranks op bytes iters warmup
  local btl=(--mca btl "self,vader")
  [[ $transport == tcp ]] && btl=(--mca btl "self,tcp" --mca btl_tcp_if_include lo)
  mpirun --allow-run-as-root --oversubscribe --mca oob_tcp_if_include lo --mca pml ob1 \
    "${btl[@]}" -np "$1" "$work/mpibench" "$2" "$3" "$4" "$5" 2>/dev/null | tail -1
}
our_run() {  # ranks op bytes iters warmup
  local net=()
  [[ $transport == tcp ]] && net=(--transport ofi)
  FI_PROVIDER="tcp;ofi_rxm" FI_TCP_IFACE=lo \
    "$bench" --op "$2" --ranks "$1" --min-bytes "$3" --max-bytes "$3" --iters "$4" \
    --warmup "$5" "${net[@]}" --check --json | tail -1
}

declare -A ours_of mpi_of
measure() {  # label ranks op bytes iters warmup field
  local label=$1 ranks=$2 op=$3 bytes=$4 iters=$5 warmup=$6 field=$7 ours="" theirs="" i idle
  local our_value our_check mpi_value mpi_check
  idle=$(wait_idle "60")
  for (( i = 0; i < runs; i++ )); do
    ours+="$(our_run "$ranks" "$op" "$bytes" "$iters" "$warmup")"$'\n'
    theirs+="$(mpi_run "$ranks" "$op" "$bytes" "$iters" "$warmup")"$'\n'
  done
  read -r our_value our_check <<<"$(report median "$field" <<<"$ours")"
  read -r mpi_value mpi_check <<<"$(report median "$field" <<<"$theirs")"
  printf '%-32s %5s %11s %6s %11s %6s %7s\n' "$label" "$idle%" "$our_value" "$our_check" \
    "$mpi_value" "$mpi_check" "$(report ratio "$our_value" "$mpi_value" "$field")"
  ours_of[$label]=$our_value
  mpi_of[$label]=$mpi_value
}

echo "# $(date -u +%FT%TZ), $(nproc) CPUs, kernel $(uname -r), $(mpirun --version 2>/dev/null | head -1)"
echo "# ours: neuron-cc-bench, runtime-owned buffers, out of place, f32 sum, --check every run"
echo "# Open MPI: mpirun --mca pml ob1 --mca btl self,vader (CMA single copy), same sizes"
idle=$(wait_idle "60")
# 256 MiB per thread: larger than the L3, as the 2-rank 64 MiB AllReduce's working set is
# (two inputs and two outputs of 64 MiB).
membw=$("$work/membw" 256 2 5)
bound=$(awk -v membw="$membw" 'BEGIN { printf "%.3f\n", membw / 4 }')
echo "# memory bandwidth: 2 threads, memcpy 256 MiB each, STREAM counting, best of 5:" \
  "$membw GB/s (idle $idle%)"
echo "# 2-rank AllReduce bound: both inputs read once and both outputs written once = 4 x S of"
echo "#   memory traffic per op while busbw = S / t, so busbw <= membw / 4 = $bound GB/s"
echo
printf '%-32s %5s %11s %6s %11s %6s %7s\n' "case (median of $runs)" "idle" "ours" "check" \
  "openmpi" "check" "ratio"
measure "allreduce 2r 8B time_us"      2 allreduce     8        20000 1000 time_us
measure "allreduce 2r 1MiB busbw"      2 allreduce     1048576  200   20   busbw_GBps
measure "allreduce 2r 64MiB busbw"     2 allreduce     67108864 20    3    busbw_GBps
measure "allgather 2r 64MiB busbw"     2 allgather     67108864 20    3    busbw_GBps
measure "reducescatter 2r 64MiB busbw" 2 reducescatter 67108864 20    3    busbw_GBps
measure "allreduce 4r 8B time_us"      4 allreduce     8        5000  500  time_us
measure "allreduce 4r 64MiB busbw"     4 allreduce     67108864 10    2    busbw_GBps
echo "# TCP on loopback: ours --transport ofi (libfabric tcp;ofi_rxm, FI_TCP_IFACE=lo) against"
echo "#   Open MPI --mca btl self,tcp --mca btl_tcp_if_include lo"
transport=tcp
measure "tcp allreduce 2r 8B time_us"  2 allreduce     8        5000  200  time_us
measure "tcp allreduce 2r 1MiB busbw"  2 allreduce     1048576  100   10   busbw_GBps
measure "tcp allreduce 2r 64MiB busbw" 2 allreduce     67108864 10    2    busbw_GBps
measure "tcp allgather 2r 64MiB busbw" 2 allgather     67108864 10    2    busbw_GBps
transport=shm
echo
report summary "$bound" "${ours_of[allreduce 2r 64MiB busbw]}" "${mpi_of[allreduce 2r 64MiB busbw]}" \
  "${ours_of[reducescatter 2r 64MiB busbw]}" "${mpi_of[allreduce 2r 64MiB busbw]}"
echo "ratio: ours/openmpi for busbw, openmpi/ours for time; > 1 means we are faster."

# The picture: busbw by size, both sides, with the memory bound.
plot_dir="${PLOT_DIR:-$build_dir/bench-plots}"
mkdir -p "$plot_dir"
echo
echo "# sweep: allreduce 2r over shared memory, busbw GB/s, median of 3 (plot: $plot_dir)"
printf '%-10s %5s %9s %9s %7s\n' size idle ours openmpi ratio
sizes=() ours_sweep=() mpi_sweep=()
for bytes in 8 64 512 4096 32768 262144 2097152 16777216 67108864; do
  iters=$(( bytes <= 32768 ? 2000 : bytes <= 2097152 ? 200 : 20 ))
  warmup=$(( iters / 10 ))
  ours="" theirs=""
  idle=$(wait_idle "60")
  for i in 1 2 3; do
    ours+="$(our_run 2 allreduce "$bytes" "$iters" "$warmup")"$'\n'
    theirs+="$(mpi_run 2 allreduce "$bytes" "$iters" "$warmup")"$'\n'
  done
  read -r our_value _ <<<"$(report median busbw_GBps <<<"$ours")"
  read -r mpi_value _ <<<"$(report median busbw_GBps <<<"$theirs")"
  printf '%-10s %4s%% %9s %9s %7s\n' "$bytes" "$idle" "$our_value" "$mpi_value" \
    "$(report ratio "$our_value" "$mpi_value" busbw_GBps)"
  sizes+=("$bytes") ours_sweep+=("$our_value") mpi_sweep+=("$mpi_value")
done
if py="$("$(dirname "$0")/../../scripts/bench-venv.sh")"; then
  report plot-spec "$plot_dir/collectives-busbw-2r.png" "$bound" "$(date -u +%F)" \
    "$(IFS=,; echo "${sizes[*]}")" "$(IFS=,; echo "${ours_sweep[*]}")" \
    "$(IFS=,; echo "${mpi_sweep[*]}")" | "$py" "$(dirname "$0")/plot.py"
else
  echo "no plot: scripts/bench-venv.sh could not make the plotting environment" >&2
fi
