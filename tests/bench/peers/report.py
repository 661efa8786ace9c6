"""Tables, ratios, summary and plot spec for collectives_vs_peers.sh, from its results file.

The results file has one JSON object per run: the benchmark's own line (time_us, algbw_GBps,
busbw_GBps, check) tagged with "mode" (shm or tcp), "case", "field" (the figure compared:
time_us or busbw_GBps), "who" (ours or a peer, e.g. "openmpi") and "run"; a run that failed
carries "error" instead of figures.

  report.py header MODE WHO...            column titles of MODE's table
  report.py row RESULTS MODE CASE WHO...  one case's medians, best peer and ratio
  report.py final RESULTS SETTINGS.json   the ratio tables again; writes the summary and the
                                          plot spec (paths in SETTINGS)
  report.py last-error RESULTS            the error of the last run ("" if it had none)
  report.py settings SETTINGS.json BOUND MEMBW TCP_BOUND RUNS SWEEP_RUNS SCALE SUMMARY PLOT
            PLOT_SPEC SHM TCP NOT_RUN.tsv VERSIONS_LINE VERSION...
                                          writes the run's settings for `final`: bounds, run
                                          counts, output paths, who took part in each mode (SHM,
                                          TCP: space-separated), who did not run and why
                                          (NOT_RUN.tsv: who, mode, error per line) and versions

Ratio: > 1 means ours is faster (peer time / our time, or our busbw / peer busbw). The best peer
is the one with the lowest median time or the highest median busbw; a peer whose runs failed
their data check is not a candidate. Columns named "ours..." are ours (several over TCP: one per
libfabric); the first of them is the one the ratio is for, each other "ours" gets its own ratio
column.
"""
import datetime
import json
import statistics
import sys

# The legend's name of each side over shared memory (its column name otherwise).
LABELS = {"ours": "Torus (neuron-cc-bench)", "ours-before": "Torus, before the change",
          "openmpi": "Open MPI (ob1 + vader)",
          "mpich": "MPICH (ch4, posix shm)", "intel-mpi": "Intel MPI (shm)",
          "oneccl": "oneCCL (ATL/OFI, shm)"}


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def medians(rows, mode, case):
    """who -> {"value", "check", "error", "runs"} for one case."""
    out = {}
    for r in rows:
        if r["mode"] != mode or r["case"] != case:
            continue
        entry = out.setdefault(r["who"], {"values": [], "checks": [], "errors": [], "field": r["field"]})
        if "error" in r:
            entry["errors"].append(r["error"])
        else:
            entry["values"].append(r[r["field"]])
            entry["checks"].append(r.get("check"))
    result = {}
    for who, e in out.items():
        result[who] = {
            "field": e["field"],
            "value": statistics.median(e["values"]) if e["values"] else None,
            "check": bool(e["checks"]) and all(c == "ok" for c in e["checks"]),
            "runs": len(e["values"]),
            "failed_runs": len(e["errors"]),
            "error": e["errors"][0] if e["errors"] else None,
        }
    return result


def better(field, a, b):
    return a < b if field == "time_us" else a > b


def ratio(field, ours, peer):
    if ours is None or peer is None or ours == 0 or peer == 0:
        return None
    return peer / ours if field == "time_us" else ours / peer


def best_peer(meds, whos):
    best = None
    for who in whos:
        if who.startswith("ours"):
            continue
        m = meds.get(who)
        if not m or m["value"] is None or not m["check"]:
            continue
        if best is None or better(m["field"], m["value"], meds[best]["value"]):
            best = who
    return best


def cell(m):
    if not m or m["value"] is None:
        return "-"
    text = f"{m['value']:.3f}" if m["value"] < 100 else f"{m['value']:.1f}"
    return text + ("" if m["check"] else "!")


def ours_columns(whos):
    return [w for w in whos if w.startswith("ours")]


def ratio_width(who):
    return max(10, len(who) + 6)


def header(mode, whos):
    cols = [f"{'case (median)':<30}", f"{'idle':>5}"] + [f"{w:>11}" for w in whos]
    cols += [f"{'best peer':>10}"] + [f"{'ratio ' + o:>{ratio_width(o)}}" for o in ours_columns(whos)]
    print(" ".join(cols))


def row(rows, mode, case, whos, idle=""):
    meds = medians(rows, mode, case)
    best = best_peer(meds, whos)
    cols = [f"{case:<30}", f"{idle:>5}"] + [f"{cell(meds.get(w)):>11}" for w in whos]
    cols.append(f"{best or '-':>10}")
    for o in ours_columns(whos):
        m = meds.get(o)
        r = ratio(m["field"], m["value"], meds[best]["value"]) if m and best else None
        cols.append(f"{(f'{r:.2f}x' if r else 'n/a'):>{ratio_width(o)}}")
    print(" ".join(cols))
    # A peer that did not run says why, once per case.
    for w in whos:
        m = meds.get(w)
        if m and m["failed_runs"]:
            print(f"    {w}: {m['failed_runs']} run(s) failed: {m['error']}")


def final(rows, settings):
    summary = {"settings": {k: v for k, v in settings.items() if k != "plot_spec"}, "cases": []}
    for mode in ("shm", "tcp"):
        whos = settings["participants"].get(mode, [])
        cases = []
        for r in rows:
            if (r["mode"] == mode and r["case"] not in cases and r["case"] != "probe"
                    and not r["case"].startswith("sweep ")):
                cases.append(r["case"])
        if not cases:
            continue
        print(f"\n# {mode}: ratio > 1 means ours is faster than the best peer")
        for case in cases:
            meds = medians(rows, mode, case)
            best = best_peer(meds, whos)
            entry = {"mode": mode, "case": case, "best_peer": best, "medians": meds, "ratios": {}}
            parts = []
            for o in ours_columns(whos):
                m = meds.get(o)
                r = ratio(m["field"], m["value"], meds[best]["value"]) if m and best else None
                entry["ratios"][o] = r
                parts.append(f"{o} {f'{r:.2f}x' if r else 'n/a'}")
            summary["cases"].append(entry)
            print(f"{mode} {case:<30} best peer {best or '-':<10} " + ", ".join(parts))
    bound = settings.get("memory_bound_GBps")
    for entry in summary["cases"]:
        if entry["mode"] == "shm" and entry["case"].startswith("allreduce 2r 64MiB"):
            m = entry["medians"].get("ours")
            if m and m["value"] and bound:
                print(f"\nallreduce 2r 64MiB over shared memory: {100 * m['value'] / bound:.0f}% "
                      f"of the memory bound {bound:.2f} GB/s (membw / 4, measured in this run)")
    tcp_bound = settings.get("tcp_bound_GBps")
    for entry in summary["cases"]:
        if entry["mode"] == "tcp" and entry["case"].startswith("allreduce 2r 64MiB") and tcp_bound:
            shares = [f"{who} {100 * m['value'] / tcp_bound:.0f}%"
                      for who, m in entry["medians"].items() if m and m["value"]]
            print(f"allreduce 2r 64MiB over TCP, share of the loopback TCP bound {tcp_bound:.2f} "
                  f"GB/s (tcpbw, this run): " + ", ".join(shares))
    # The sweep: 2-rank AllReduce over shared memory, busbw by size.
    sweep = {}
    for r in rows:
        if r["mode"] == "shm" and r["case"].startswith("sweep "):
            sweep.setdefault(int(r["case"].split()[1]), None)
    sizes = sorted(sweep)
    series = []
    for who in settings["participants"].get("sweep", []):
        ys = []
        for size in sizes:
            m = medians(rows, "shm", f"sweep {size}").get(who)
            ys.append(m["value"] if m and m["value"] is not None else None)
        if any(y is not None for y in ys):
            series.append({"name": settings["labels"].get(who, who), "x": sizes, "y": ys})
    summary["sweep"] = {"sizes": sizes, "series": series}
    with open(settings["summary"], "w") as f:
        json.dump(summary, f, indent=1)
    spec = {
        "out": settings["plot"], "kind": "line", "logx": True, "bytes_x": True,
        "title": "AllReduce, 2 ranks, shared memory: bus bandwidth by size",
        "xlabel": "buffer size", "ylabel": "busbw (GB/s)",
        # matplotlib leaves a gap for a size a peer could not run.
        "series": [{"name": s["name"], "x": s["x"], "y": [y if y is not None else float("nan")
                                                          for y in s["y"]]} for s in series],
        "hlines": [{"name": f"DRAM bound for 2 ranks (membw / 4) {bound:.2f} GB/s; "
                            "smaller buffers stay in cache", "y": bound}] if bound else [],
        "note": f"collectives_vs_peers.sh, {settings['date']}, median of {settings['sweep_runs']}, "
                f"f32 sum; {settings['versions_line']}",
    }
    if sizes:
        with open(settings["plot_spec"], "w") as f:
            json.dump(spec, f)


def last_error(path):
    with open(path) as f:
        lines = f.read().splitlines()
    return json.loads(lines[-1]).get("error", "")


def settings_of(bound, membw, tcp_bound, runs, sweep_runs, scale, summary, plot, spec, shm, tcp,
             not_run_path, short, versions, today=None):
    with open(not_run_path) as f:
        not_run = [dict(zip(("who", "mode", "error"), line.rstrip("\n").split("\t", 2)))
                   for line in f if line.strip()]
    return {"memory_bound_GBps": float(bound), "membw_GBps": float(membw),
            "tcp_bound_GBps": float(tcp_bound), "runs": int(runs),
            "sweep_runs": int(sweep_runs), "iter_scale_percent": int(scale), "summary": summary,
            "plot": plot, "plot_spec": spec,
            "date": (today or datetime.date.today()).isoformat(),
            "participants": {"shm": shm.split(), "tcp": tcp.split(), "sweep": shm.split()},
            "labels": LABELS, "versions": versions, "not_run": not_run,
            "versions_line": short}


def main():
    command = sys.argv[1]
    if command == "header":
        header(sys.argv[2], sys.argv[3:])
    elif command == "row":
        idle = ""
        args = sys.argv[5:]
        if args and args[0].startswith("--idle="):
            idle = args[0].split("=", 1)[1]
            args = args[1:]
        row(load(sys.argv[2]), sys.argv[3], sys.argv[4], args, idle)
    elif command == "final":
        with open(sys.argv[3]) as f:
            settings = json.load(f)
        final(load(sys.argv[2]), settings)
    elif command == "last-error":
        print(last_error(sys.argv[2]))
    elif command == "settings":
        path, *args = sys.argv[2:]
        written = settings_of(*args[:13], args[13:])
        with open(path, "w") as f:
            json.dump(written, f)
    else:
        sys.exit(f"report.py: unknown command {command}")


if __name__ == "__main__":
    main()
