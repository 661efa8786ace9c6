"""Medians, ratios, the summary and the plot spec for collectives_vs_mpi.sh.

  mpi_report.py median FIELD < RUNS          "median check": FIELD's median over the JSON lines of
                                             the runs (lines that are not JSON are skipped; nan
                                             if none) and ok when every run checked its result
  mpi_report.py ratio OURS THEIRS FIELD      "N.NNx", > 1 when ours is faster (theirs / ours for
                                             time_us, ours / theirs for busbw); n/a on a zero
  mpi_report.py summary BOUND OURS MPI RS MPI_AR
                                             the 2-rank 64 MiB lines: AllReduce against Open MPI
                                             and the memory bound, ReduceScatter against half an
                                             Open MPI AllReduce
  mpi_report.py plot-spec OUT BOUND DAY SIZES OURS MPI
                                             the sweep's busbw-by-size spec for plot.py (SIZES,
                                             OURS, MPI: comma-separated)
"""
import json
import statistics
import sys


def median(field, lines):
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except ValueError:
            pass
    values = [r[field] for r in rows]
    ok = bool(rows) and all(r.get("check") == "ok" for r in rows)
    return f"{statistics.median(values):.4f}" if values else "nan", "ok" if ok else "FAIL"


def ratio(ours, theirs, field):
    ours, theirs = float(ours), float(theirs)
    try:
        return f"{(theirs / ours if field == 'time_us' else ours / theirs):.2f}x"
    except ZeroDivisionError:
        return "n/a"


def summary(bound, ours, mpi, rs, mpi_ar):
    bound, ours, mpi, rs, mpi_ar = map(float, (bound, ours, mpi, rs, mpi_ar))
    # Open MPI 4.1.4's reduce_scatter_block is slower than its allreduce, so ReduceScatter is
    # also set against one that costs half of Open MPI's AllReduce of the same buffer:
    # RS busbw = (n-1)/n * S / (t_AR / 2) = AR busbw (n = 2).
    return [f"allreduce 2r 64MiB: {ours / mpi:.2f}x Open MPI (target >= 2x), "
            f"{100 * ours / bound:.0f}% of the memory bound {bound:.2f} GB/s (target >= 50%)",
            f"reducescatter 2r 64MiB vs half an Open MPI allreduce: {rs / mpi_ar:.2f}x"]


def plot_spec(out, bound, day, sizes, ours, mpi):
    def numbers(text):
        return [float(v) for v in text.split(",")]
    return {
        "out": out, "kind": "line", "logx": True, "bytes_x": True,
        "title": "AllReduce, 2 ranks, shared memory: bus bandwidth by size",
        "xlabel": "buffer size", "ylabel": "busbw (GB/s)",
        "series": [{"name": "Torus (neuron-cc-bench)", "x": numbers(sizes), "y": numbers(ours)},
                   {"name": "Open MPI (ob1 + vader)", "x": numbers(sizes), "y": numbers(mpi)}],
        "hlines": [{"name": f"DRAM bound for 2 ranks (membw / 4) {float(bound):.2f} GB/s; "
                            "smaller buffers stay in cache", "y": float(bound)}],
        "note": f"tests/bench/collectives_vs_mpi.sh, {day}, median of 3, f32 sum"}


def main(argv):
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command == "median" and len(args) == 1:
        print(*median(args[0], sys.stdin))
    elif command == "ratio" and len(args) == 3:
        print(ratio(*args))
    elif command == "summary" and len(args) == 5:
        for line in summary(*args):
            print(line)
    elif command == "plot-spec" and len(args) == 6:
        print(json.dumps(plot_spec(*args)))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
