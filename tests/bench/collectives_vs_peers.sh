#!/usr/bin/env bash
# Collectives benchmark against the strongest CPU peers, all measured in this one run on the same
# host: our neuron-cc-bench next to Open MPI (Debian), MPICH and Intel MPI (PyPI), and Intel
# oneCCL's C++ API (PyPI), over shared memory and over TCP on loopback, with the memory bound,
# the ratios against the best peer of each case and a busbw-by-size picture.
#
#   tests/bench/collectives_vs_peers.sh [build-dir] [runs]
#
# build-dir (default build) holds bin/neuron-cc-bench; each figure is the median of `runs` runs
# (default 5), ours and every peer interleaved run by run. Before each case the script waits (up
# to IDLE_WAIT s, default 60) for the CPUs to be >= 80 % idle and prints the idle share it saw.
# Every run is bounded by RUN_TIMEOUT s (default 120) and runs in its own session, which is
# killed afterwards; a side that timed out sits out the rest of that case. ITER_SCALE=10 runs 10 % of the iterations (a quick check, not a figure).
# The bounds, measured in the same run: memory (tests/bench/peers/membw.c) for shared memory and
# one loopback TCP connection in both directions at once (tests/bench/peers/tcpbw.c) for TCP.
# GB = 1e9 bytes; time is the mean over iterations and ranks; busbw uses nccl-tests' factors
# (AllReduce 2(n-1)/n, AllGather and ReduceScatter (n-1)/n); every side checks its whole result.
#
# Peers, installed once into private virtual environments under PEERS_VENV (default
# <build-dir>/peers-venv, one directory per pinned version set; never system-wide):
#   - Open MPI: Debian's openmpi-bin + libopenmpi-dev (mpicc, mpirun), as collectives_vs_mpi.sh.
#     shm: --mca pml ob1 --mca btl self,vader; tcp: --mca btl self,tcp --mca btl_tcp_if_include lo.
#   - MPICH (PyPI mpich): ch4 with the ofi netmod on its bundled libfabric, tcp provider on lo
#     (MPIR_CVAR_CH4_NETMOD=ofi FI_PROVIDER=tcp FI_TCP_IFACE=lo, hydra -iface lo). shm: MPICH's
#     own shared-memory path between local ranks; tcp: MPIR_CVAR_NOLOCAL=1 (every rank treated as
#     remote, so all traffic goes through the netmod). mpich-ucx is the same build's ucx netmod
#     over tcp on lo (UCX_TLS=tcp,self UCX_NET_DEVICES=lo), tried over TCP only.
#   - Intel MPI (PyPI impi-rt, which oneCCL depends on): the MPICH-built benchmark run on its
#     library (the two share MPICH's ABI). shm: I_MPI_FABRICS=shm; tcp: I_MPI_FABRICS=ofi with the
#     tcp provider on lo and I_MPI_COLL_INTRANODE=pt2pt (otherwise its collectives take shared
#     memory even with the ofi fabric).
#   - oneCCL (PyPI oneccl-cpu + oneccl-cpu-devel): tests/bench/peers/ccl_bench.cc on the C++ API
#     (ccl::allreduce, ccl::allgather, ccl::reduce_scatter). It forks its ranks itself; rank 0
#     makes the main KVS and passes its address to the others through pipes (no MPI launcher);
#     the KVS listens on lo (CCL_KVS_IFACE=lo). ATL/OFI on impi-rt's libfabric; shm:
#     CCL_ATL_SHM=1 (shm provider between local ranks); tcp: CCL_ATL_SHM=0 FI_PROVIDER=tcp on
#     lo. CCL_WORKER_OFFLOAD=0: the calling thread progresses its own collectives; with the
#     default worker thread per rank, 2 ranks spin 4 threads on 2 CPUs (1 MiB AllReduce 10-30 ms
#     instead of 0.2-0.6 ms here). CCL_KVS_IFACE, CCL_ATL_TRANSPORT, CCL_WORKER_OFFLOAD and
#     CCL_ATL_SHM from the environment win over these.
# Ours over TCP: neuron-cc-bench --transport ofi with FI_TCP_IFACE=lo, once per libfabric found:
# impi-rt's bundled one (the reference for the ratio), Debian's (1.17) and MPICH's bundled one,
# each through TORUS_COLL_LIBFABRIC. Each tries FI_PROVIDER='tcp;ofi_rxm' first and falls back to
# 'tcp' (libfabric >= 1.18's native reliable-datagram tcp) when a probe run fails, saying why.
# A peer that cannot run in a mode is reported with its error and left out; the rest goes on.
# OURS_BEFORE=<another neuron-cc-bench> adds it over shared memory as "ours-before" (e.g. the
# build of an earlier commit), to show a change's effect in the same run.
#
# Output: the tables on stdout; every run as JSON in $OUT_DIR/results.jsonl, medians, ratios,
# versions and settings in $OUT_DIR/summary.json (default <build-dir>/bench-peers); the sweep
# (2-rank AllReduce over shared memory, 8 B to 64 MiB, median of min(3, runs)) as
# $PLOT_DIR/collectives-busbw-2r-peers.png (default <build-dir>/bench-plots; the plotting library
# comes from scripts/bench-venv.sh). All network traffic stays on loopback.
set -euo pipefail

build_dir="${1:-build}"
runs="${2:-5}"
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bench="$build_dir/bin/neuron-cc-bench"
[[ -x "$bench" ]] || { echo "no $bench: build the neuron-cc-bench target first" >&2; exit 2; }
bench="$(cd "$(dirname "$bench")" && pwd)/neuron-cc-bench"
build_dir="$(cd "$build_dir" && pwd)"
for tool in gcc g++ python3 setsid timeout; do
  command -v "$tool" >/dev/null || { echo "$tool not found" >&2; exit 2; }
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "runs must be a positive integer, got '$runs'" >&2; exit 2; }

# Pinned peers. oneccl-cpu 2022.2.0 and impi-rt 2021.19.0 depend on a PyPI package `libfabric`
# (>= 2.6) that the index does not offer, so they cannot be installed; these are the newest that
# install. oneccl-cpu's libccl.so.1 needs libccl.so.2 (Intel's memcpy/cpu-dispatch runtime, 143
# KB), which only the full `oneccl` wheel of the same version ships: it is taken from there.
MPICH_VERSION=5.0.2
ONECCL_VERSION=2022.1.2
IMPI_VERSION=2021.18.1
venv_root="${PEERS_VENV:-$build_dir/peers-venv}"
mpich_venv="$venv_root/mpich-$MPICH_VERSION"
ccl_venv="$venv_root/oneccl-$ONECCL_VERSION-impi-$IMPI_VERSION"
out_dir="${OUT_DIR:-$build_dir/bench-peers}"
plot_dir="${PLOT_DIR:-$build_dir/bench-plots}"
idle_wait="${IDLE_WAIT:-60}"
run_timeout="${RUN_TIMEOUT:-120}"
iter_scale="${ITER_SCALE:-100}"

work="$(mktemp -d "${TMPDIR:-/tmp}/coll-vs-peers.XXXXXX")"
run_pid=""
cleanup() {
  if [[ -n "$run_pid" ]]; then kill -KILL -- "-$run_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$out_dir" "$plot_dir"
results="$out_dir/results.jsonl"
: >"$results"

note_unavailable() {  # who mode why: said now, and kept for the summary
  printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$work/not-run.tsv"
  echo "# $1 ($2): not run: $3"
}

last_lines() {  # file: its last meaningful lines, on one line
  grep -v -e '^[[:space:]]*$' -e 'CCL_WARN' "$1" 2>/dev/null | tail -3 | tr '\n\t' '  ' |
    cut -c1-400 || true
}

# --- installing the peers -----------------------------------------------------------------------

make_venv() {  # dir log packages...: a private venv with exactly these packages, made once
  local dir=$1 log=$2
  shift 2
  [[ -f "$dir/.complete" ]] && return 0
  echo "# installing $* into $dir" >&2
  rm -rf "$dir"
  python3 -m venv "$dir" >>"$log" 2>&1 &&
    "$dir/bin/pip" install --quiet --disable-pip-version-check "$@" >>"$log" 2>&1
}

install_mpich() {
  make_venv "$mpich_venv" "$work/mpich-install.log" "mpich==$MPICH_VERSION" &&
    touch "$mpich_venv/.complete"
}

install_oneccl() {
  make_venv "$ccl_venv" "$work/ccl-install.log" "oneccl-cpu==$ONECCL_VERSION" \
    "oneccl-cpu-devel==$ONECCL_VERSION" "impi-rt==$IMPI_VERSION" || return 1
  if [[ ! -e "$ccl_venv/lib/libccl.so.2" ]]; then
    "$ccl_venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
      -d "$ccl_venv/wheels" "oneccl==$ONECCL_VERSION" >>"$work/ccl-install.log" 2>&1 || return 1
    "$ccl_venv/bin/python" "$here/peers/libccl.py" "$ccl_venv" "$ONECCL_VERSION" \
      >>"$work/ccl-install.log" 2>&1 ||
      return 1
    rm -rf "$ccl_venv/wheels"
  fi
  touch "$ccl_venv/.complete"
}

have_openmpi=0 have_mpich=0 have_impi=0 have_ccl=0
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
  have_openmpi=1
else
  note_unavailable openmpi all "mpicc/mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
fi
if install_mpich; then
  have_mpich=1
else
  note_unavailable mpich all "pip install mpich==$MPICH_VERSION failed: $(last_lines "$work/mpich-install.log")"
fi
if install_oneccl; then
  have_ccl=1 have_impi=1
else
  note_unavailable oneccl all "installing oneCCL $ONECCL_VERSION failed: $(last_lines "$work/ccl-install.log")"
  note_unavailable intel-mpi all "impi-rt $IMPI_VERSION comes with the oneCCL install, which failed"
fi

# --- building the benchmarks (into the temp dir) ------------------------------------------------

build() {  # log command...: prints the compiler's last lines if it fails
  local log=$1
  shift
  nice -n 19 "$@" >"$log" 2>&1 || { last_lines "$log"; return 1; }
}
nice -n 19 gcc -O3 -pthread -o "$work/membw" "$here/peers/membw.c"
nice -n 19 gcc -O3 -pthread -o "$work/tcpbw" "$here/peers/tcpbw.c"
if (( have_openmpi )) && ! why=$(build "$work/b-ompi.log" \
    mpicc -O3 -o "$work/mpi_bench_ompi" "$here/peers/mpi_bench.c"); then
  have_openmpi=0; note_unavailable openmpi all "mpicc failed: $why"
fi
if (( have_mpich )) && ! why=$(build "$work/b-mpich.log" \
    "$mpich_venv/bin/mpicc" -O3 -o "$work/mpi_bench_mpich" "$here/peers/mpi_bench.c"); then
  have_mpich=0 have_impi=0; note_unavailable mpich all "MPICH's mpicc failed: $why"
fi
if (( have_impi && ! have_mpich )); then
  have_impi=0; note_unavailable intel-mpi all "runs the MPICH-built benchmark, which is missing"
fi
# oneccl-cpu's libccl.so.1 names libccl.so.2 as needed: -rpath (not runpath) lets the loader
# find it next to it in the venv.
if (( have_ccl )) && ! why=$(build "$work/b-ccl.log" \
    g++ -std=c++17 -O2 -I"$ccl_venv/include" -o "$work/ccl_bench" "$here/peers/ccl_bench.cc" \
    -L"$ccl_venv/lib" -lccl -Wl,--disable-new-dtags,-rpath,"$ccl_venv/lib"); then
  have_ccl=0; note_unavailable oneccl all "building ccl_bench failed: $why"
fi

# --- the libfabrics ours runs on over TCP -------------------------------------------------------

fabric_version() {  # libfabric.so.1 path: its full version, as fi_info or fi_version() says
  local lib=$1 text=""
  if [[ $lib == "$system_fabric" ]] && command -v fi_info >/dev/null; then
    text=$(fi_info --version 2>/dev/null | sed -n 's/^libfabric: //p')
  elif [[ -x "$ccl_venv/bin/libfabric/fi_info" ]]; then
    text=$(LD_LIBRARY_PATH="$(dirname "$lib")" FI_PROVIDER_PATH="$(dirname "$lib")" \
      "$ccl_venv/bin/libfabric/fi_info" --version 2>/dev/null | sed -n 's/^libfabric: //p')
  fi
  [[ -n "$text" ]] || text=$(python3 "$here/peers/fi_version.py" "$lib" 2>/dev/null) || text="?"
  echo "$text"
}
fabric_names=() fabric_libs=()
add_fabric() {  # label path
  [[ -e "$2" ]] || return 0
  fabric_names+=("$1") fabric_libs+=("$2")
}
(( have_ccl )) && add_fabric impi "$ccl_venv/lib/libfabric.so.1"
system_fabric=$(ldconfig -p 2>/dev/null | awk '/libfabric\.so\.1 .*x86-64/ {print $NF; exit}' || true)
[[ -n "$system_fabric" ]] && add_fabric debian "$system_fabric"
(( have_mpich )) && add_fabric mpich "$mpich_venv/lib/mpich/libfabric.so.1"
declare -A fabric_provider=() fabric_version_of=()
ours_tcp=()  # "ours@<name>" columns, reference first
for i in "${!fabric_names[@]}"; do
  fabric_version_of[${fabric_names[$i]}]=$(fabric_version "${fabric_libs[$i]}")
done

# --- running one benchmark ----------------------------------------------------------------------

bounded() {  # out err command...: one run in its own session, bounded in time, then killed
  local out=$1 err=$2 rc=0
  shift 2
  setsid timeout -k 5 "$run_timeout" "$@" >"$out" 2>"$err" </dev/null &
  run_pid=$!
  wait "$run_pid" || rc=$?
  kill -KILL -- "-$run_pid" 2>/dev/null || true  # whatever of this run is left
  run_pid=""
  return "$rc"
}

lo_env=(FI_TCP_IFACE=lo)
our_cmd() {  # who mode ranks op bytes iters warmup: prints nothing, sets cmd=()
  local who=$1 mode=$2
  shift 2
  cmd=(env)
  if [[ $mode == tcp ]]; then
    local name=${who#ours@} i lib
    for i in "${!fabric_names[@]}"; do [[ ${fabric_names[$i]} == "$name" ]] && lib=${fabric_libs[$i]}; done
    cmd+=("${lo_env[@]}" "FI_PROVIDER=${fabric_provider[$name]}" "TORUS_COLL_LIBFABRIC=$lib")
    # impi-rt's libfabric keeps its tcp provider in a DSO beside it, where it does not look.
    [[ $lib != "$system_fabric" ]] && cmd+=("FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-$(dirname "$lib")}")
  fi
  local binary=$bench
  [[ $who == ours-before ]] && binary=$ours_before
  cmd+=("$binary" --ranks "$1" --op "$2" --min-bytes "$3" --max-bytes "$3" --iters "$4"
    --warmup "$5" --check --json)
  [[ $mode == tcp ]] && cmd+=(--transport ofi)
  return 0
}
peer_cmd() {  # who mode ranks op bytes iters warmup: sets cmd=()
  local who=$1 mode=$2 ranks=$3
  local args=("$4" "$5" "$6" "$7")
  case $who in
    openmpi)
      local btl=(--mca btl "self,vader")
      [[ $mode == tcp ]] && btl=(--mca btl "self,tcp" --mca btl_tcp_if_include lo)
      cmd=(mpirun --allow-run-as-root --oversubscribe --mca oob_tcp_if_include lo --mca pml ob1
        "${btl[@]}" -np "$ranks" "$work/mpi_bench_ompi" "${args[@]}") ;;
    mpich)
      cmd=(env MPIR_CVAR_CH4_NETMOD=ofi FI_PROVIDER=tcp "${lo_env[@]}")
      [[ $mode == tcp ]] && cmd+=(MPIR_CVAR_NOLOCAL=1)
      cmd+=("$mpich_venv/bin/mpiexec" -iface lo -n "$ranks" "$work/mpi_bench_mpich" "${args[@]}") ;;
    mpich-ucx)
      cmd=(env MPIR_CVAR_CH4_NETMOD=ucx "UCX_TLS=tcp,self" UCX_NET_DEVICES=lo MPIR_CVAR_NOLOCAL=1
        "$mpich_venv/bin/mpiexec" -iface lo -n "$ranks" "$work/mpi_bench_mpich" "${args[@]}") ;;
    intel-mpi)
      cmd=(env I_MPI_ROOT="$ccl_venv" LD_LIBRARY_PATH="$ccl_venv/lib"
        FI_PROVIDER_PATH="${FI_PROVIDER_PATH:-$ccl_venv/lib}" I_MPI_HYDRA_IFACE=lo "${lo_env[@]}")
      if [[ $mode == tcp ]]; then
        cmd+=(I_MPI_FABRICS=ofi I_MPI_OFI_PROVIDER=tcp FI_PROVIDER=tcp I_MPI_COLL_INTRANODE=pt2pt)
      else
        cmd+=(I_MPI_FABRICS=shm)
      fi
      cmd+=("$ccl_venv/bin/mpiexec" -n "$ranks" "$work/mpi_bench_mpich" "${args[@]}") ;;
    oneccl)
      cmd=(env LD_LIBRARY_PATH="$ccl_venv/lib" FI_PROVIDER_PATH="${FI_PROVIDER_PATH:-$ccl_venv/lib}"
        CCL_KVS_IFACE="${CCL_KVS_IFACE:-lo}" CCL_ATL_TRANSPORT="${CCL_ATL_TRANSPORT:-ofi}"
        CCL_WORKER_OFFLOAD="${CCL_WORKER_OFFLOAD:-0}" "${lo_env[@]}")
      if [[ $mode == tcp ]]; then
        cmd+=(CCL_ATL_SHM=0 FI_PROVIDER=tcp)
      else
        cmd+=(CCL_ATL_SHM="${CCL_ATL_SHM:-1}")
      fi
      cmd+=("$work/ccl_bench" "${args[@]}" "$ranks") ;;
  esac
}

json_string() {  # text -> a JSON string literal
  local s=${1//\\/\\\\}
  s=${s//\"/\\\"}
  printf '"%s"' "$(printf '%s' "$s" | tr -d '\000-\037')"
}

# one_run who mode case field ranks op bytes iters warmup run: appends one result line;
# returns 1 if the run failed, 2 if it timed out
one_run() {
  local who=$1 mode=$2 case_name=$3 field=$4 run=${10} rc=0 line tags why
  shift 4
  if [[ $who == ours* ]]; then our_cmd "$who" "$mode" "$@"; else peer_cmd "$who" "$mode" "$@"; fi
  bounded "$work/out" "$work/err" "${cmd[@]}" || rc=$?
  line=$(grep '^{"op"' "$work/out" | tail -1 || true)
  tags="{\"mode\":\"$mode\",\"case\":\"$case_name\",\"field\":\"$field\",\"who\":\"$who\",\"run\":$run"
  if (( rc == 0 )) && [[ -n "$line" ]]; then
    echo "$tags,${line#\{}" >>"$results"
    return 0
  fi
  why=$(last_lines "$work/err")
  [[ -n "$why" ]] || why="exit status $rc, no result line"
  if (( rc == 124 || rc == 137 )); then
    echo "$tags,\"error\":$(json_string "timed out after $run_timeout s (not repeated); $why")}" >>"$results"
    return 2
  fi
  echo "$tags,\"error\":$(json_string "$why")}" >>"$results"
  return 1
}
# runs_of mode case field ranks op bytes iters warmup count whos...: `count` interleaved rounds;
# a side that timed out once sits out the rest of the case (RUN_TIMEOUT bounds the case)
runs_of() {
  local mode=$1 case_name=$2 field=$3 ranks=$4 op=$5 bytes=$6 iters=$7 warmup=$8 count=$9 run who rc
  shift 9
  local -A gave_up=()
  for (( run = 1; run <= count; run++ )); do
    for who in "$@"; do
      [[ -n "${gave_up[$who]:-}" ]] && continue
      rc=0
      one_run "$who" "$mode" "$case_name" "$field" "$ranks" "$op" "$bytes" "$iters" "$warmup" \
        "$run" || rc=$?
      (( rc == 2 )) && gave_up[$who]=1
    done
  done
  return 0
}

# --- waiting for idle CPUs ----------------------------------------------------------------------

# shellcheck source=SCRIPTDIR/idle_wait.sh
source "$(dirname "$0")/idle_wait.sh"

# --- probing who runs in which mode -------------------------------------------------------------

last_error() {  # the error of the last result line
  python3 "$here/peers/report.py" last-error "$results"
}
declare -A participants=()  # mode -> space-separated columns
probe() {  # who mode: a small AllReduce; on failure the peer is left out of that mode
  if one_run "$1" "$2" probe time_us 2 allreduce 4096 50 5 0; then return 0; fi
  note_unavailable "$1" "$2" "$(last_error)"
  return 1
}
add_participant() { participants[$1]="${participants[$1]:-}${participants[$1]:+ }$2"; }

echo "# $(date -u +%FT%TZ), $(nproc) CPUs, kernel $(uname -r)"
echo "# probing each side with a small AllReduce (2 ranks, 4 KiB) in each mode"
add_participant shm ours
ours_before="${OURS_BEFORE:-}"
if [[ -n $ours_before ]]; then
  [[ -x $ours_before ]] || { echo "OURS_BEFORE=$ours_before is not an executable" >&2; exit 2; }
  add_participant shm ours-before
fi
for mode in shm tcp; do
  candidates=(openmpi mpich intel-mpi oneccl)
  [[ $mode == tcp ]] && candidates=(openmpi mpich mpich-ucx intel-mpi oneccl)
  for who in "${candidates[@]}"; do
    case $who in
      openmpi) (( have_openmpi )) || continue ;;
      mpich | mpich-ucx) (( have_mpich )) || continue ;;
      intel-mpi) (( have_impi )) || continue ;;
      oneccl) (( have_ccl )) || continue ;;
    esac
    probe "$who" "$mode" && add_participant "$mode" "$who"
  done
done
# Ours over TCP, once per libfabric: 'tcp;ofi_rxm' if it works there (8 B x 3000, which is
# long enough to show a provider that crashes mid-run), else 'tcp'.
for name in "${fabric_names[@]}"; do
  fabric_provider[$name]="tcp;ofi_rxm"
  if ! one_run "ours@$name" tcp probe time_us 2 allreduce 8 3000 10 0; then
    echo "# ours on libfabric ${fabric_version_of[$name]} ($name) with FI_PROVIDER='tcp;ofi_rxm':" \
      "$(last_error)"
    fabric_provider[$name]=tcp
    if ! one_run "ours@$name" tcp probe time_us 2 allreduce 8 3000 10 0; then
      note_unavailable "ours@$name" tcp "$(last_error)"
      continue
    fi
    echo "#   so it runs with FI_PROVIDER=tcp"
  fi
  ours_tcp+=("ours@$name")
done
tcp_peers=${participants[tcp]:-}
participants[tcp]="${ours_tcp[*]}${tcp_peers:+ }$tcp_peers"

# --- versions -----------------------------------------------------------------------------------

versions=("ours: $("$bench" --version 2>&1 | head -1)")
[[ -n $ours_before ]] && versions+=("ours-before: $("$ours_before" --version 2>&1 | head -1)")
(( have_openmpi )) && versions+=("Open MPI: $(mpirun --version 2>/dev/null | head -1)")
(( have_mpich )) && versions+=("MPICH: pip mpich==$MPICH_VERSION ($("$mpich_venv/bin/mpichversion" 2>/dev/null | sed -n 's/^MPICH Device: *//p' | head -1))")
(( have_impi )) && versions+=("Intel MPI: pip impi-rt==$IMPI_VERSION")
(( have_ccl )) && versions+=("oneCCL: pip oneccl-cpu==$ONECCL_VERSION, oneccl-cpu-devel==$ONECCL_VERSION (libccl.so.2 from oneccl==$ONECCL_VERSION)")
for i in "${!fabric_names[@]}"; do
  versions+=("libfabric (${fabric_names[$i]}): ${fabric_version_of[${fabric_names[$i]}]}, ${fabric_libs[$i]}")
done
peers_short="ours $("$bench" --version 2>&1 | head -1 | awk '{print $3}')"
(( have_openmpi )) && peers_short+=", $(mpirun --version 2>/dev/null | head -1 | sed 's/.*(Open MPI)/Open MPI/')"
(( have_mpich )) && peers_short+=", MPICH $MPICH_VERSION"
(( have_impi )) && peers_short+=", Intel MPI $IMPI_VERSION"
(( have_ccl )) && peers_short+=", oneCCL $ONECCL_VERSION"
echo "# versions:"
printf '#   %s\n' "${versions[@]}"
for who in "${ours_tcp[@]}"; do
  name=${who#ours@}
  versions+=("$who: neuron-cc-bench --transport ofi, FI_PROVIDER='${fabric_provider[$name]}', libfabric ${fabric_version_of[$name]}")
  echo "#   ${versions[-1]}"
done

# --- the memory bound ---------------------------------------------------------------------------

idle=$(wait_idle "$idle_wait")
# 256 MiB per thread: larger than the L3, as the 2-rank 64 MiB AllReduce's working set is.
membw=$("$work/membw" 256 2 5)
bound=$(awk -v membw="$membw" 'BEGIN { printf "%.3f\n", membw / 4 }')
echo "# memory bandwidth: 2 threads, memcpy 256 MiB each, STREAM counting, best of 5:" \
  "$membw GB/s (idle $idle%); 2-rank AllReduce bound (both inputs read, both outputs" \
  "written: 4 x S per op, busbw = S / t) = membw / 4 = $bound GB/s"
idle=$(wait_idle "$idle_wait")
tcp_bound=$("$work/tcpbw" 64 5)
echo "# loopback TCP: 2 processes, one connection, each sending 64 MiB while receiving 64 MiB," \
  "best of 5: $tcp_bound GB/s per direction (idle $idle%): the 2-rank AllReduce busbw bound over" \
  "one connection per pair (each rank sends S and receives S per op)"

# --- the cases ----------------------------------------------------------------------------------

scaled() { local n=$(( $1 * iter_scale / 100 )); echo $(( n > 0 ? n : 1 )); }
measure() {  # mode label ranks op bytes iters warmup field
  local mode=$1 label=$2 ranks=$3 op=$4 bytes=$5 iters warmup field=$8 idle whos
  iters=$(scaled "$6") warmup=$(scaled "$7")
  read -ra whos <<<"${participants[$mode]}"
  idle=$(wait_idle "$idle_wait")
  runs_of "$mode" "$label" "$field" "$ranks" "$op" "$bytes" "$iters" "$warmup" "$runs" "${whos[@]}"
  python3 "$here/peers/report.py" row "$results" "$mode" "$label" "--idle=$idle%" "${whos[@]}"
}
cases=(  # label|ranks|op|bytes|iterations, warm-up over shared memory|the same over TCP|field
  "allreduce 2r 8B time_us|2|allreduce|8|20000|1000|5000|200|time_us"
  "allreduce 2r 1MiB busbw|2|allreduce|1048576|200|20|100|10|busbw_GBps"
  "allreduce 2r 64MiB busbw|2|allreduce|67108864|20|3|10|2|busbw_GBps"
  "allgather 2r 64MiB busbw|2|allgather|67108864|20|3|10|2|busbw_GBps"
  "reducescatter 2r 64MiB busbw|2|reducescatter|67108864|20|3|10|2|busbw_GBps"
  "allreduce 4r 8B time_us|4|allreduce|8|5000|500|2000|100|time_us"
  "allreduce 4r 1MiB busbw|4|allreduce|1048576|100|10|50|5|busbw_GBps"
  "allreduce 4r 64MiB busbw|4|allreduce|67108864|10|2|5|1|busbw_GBps"
)
for mode in shm tcp; do
  echo
  if [[ $mode == shm ]]; then
    echo "# shared memory: median of $runs; time in us, busbw in GB/s; ! = a run failed its check"
  else
    echo "# TCP on loopback: median of $runs; ours columns are per libfabric (versions above)"
  fi
  read -ra whos <<<"${participants[$mode]}"
  python3 "$here/peers/report.py" header "$mode" "${whos[@]}"
  for spec in "${cases[@]}"; do
    IFS='|' read -r label ranks op bytes iters warmup tcp_iters tcp_warmup field <<<"$spec"
    [[ $mode == tcp ]] && iters=$tcp_iters warmup=$tcp_warmup
    measure "$mode" "$label" "$ranks" "$op" "$bytes" "$iters" "$warmup" "$field"
  done
done

# --- the sweep and the picture ------------------------------------------------------------------

sweep_runs=$(( runs < 3 ? runs : 3 ))
read -ra whos <<<"${participants[shm]}"
echo
echo "# sweep: allreduce 2r over shared memory, busbw GB/s by size in bytes, median of $sweep_runs"
python3 "$here/peers/report.py" header shm "${whos[@]}"
for bytes in 8 64 512 4096 32768 262144 2097152 16777216 67108864; do
  iters=$(scaled $(( bytes <= 32768 ? 2000 : bytes <= 2097152 ? 200 : 20 )))
  warmup=$(( iters / 10 > 0 ? iters / 10 : 1 ))
  idle=$(wait_idle "$idle_wait")
  runs_of shm "sweep $bytes" busbw_GBps 2 allreduce "$bytes" "$iters" "$warmup" "$sweep_runs" \
    "${whos[@]}"
  python3 "$here/peers/report.py" row "$results" shm "sweep $bytes" "--idle=$idle%" "${whos[@]}"
done

touch "$work/not-run.tsv"
python3 "$here/peers/report.py" settings "$work/settings.json" "$bound" "$membw" "$tcp_bound" \
  "$runs" "$sweep_runs" "$iter_scale" "$out_dir/summary.json" \
  "$plot_dir/collectives-busbw-2r-peers.png" "$work/plot.json" "${participants[shm]}" \
  "${participants[tcp]}" "$work/not-run.tsv" "$peers_short" "${versions[@]}"
python3 "$here/peers/report.py" final "$results" "$work/settings.json"
echo "ratio: > 1 means ours is faster (best peer's time / ours, ours' busbw / best peer's)"
echo "# every run: $results; medians, ratios, versions: $out_dir/summary.json"
if [[ -f "$work/plot.json" ]]; then
  if py="$("$repo/scripts/bench-venv.sh")"; then
    "$py" "$here/plot.py" <"$work/plot.json"
  else
    echo "no plot: scripts/bench-venv.sh could not make the plotting environment" >&2
  fi
fi
