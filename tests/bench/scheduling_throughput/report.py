"""The figures scheduling_throughput.sh prints, from what it collected on the cluster.

  report.py span < PODS.json                   "pods seconds pods_per_second": the PodScheduled
                                               transitions' count, span + 1 s, and their rate
  report.py latency RESUMED < PODS.json        "p50 p99 pods": seconds from each pod's creation
                                               (or from RESUMED, the epoch second its scheduler
                                               resumed, when that is later) to its Ready
                                               transition, over the pods that are Ready
  report.py api-waits BEFORE AFTER             from two snapshots of the API server's /metrics,
                                               "name requests mean_ms" per priority level's
                                               queued requests and per verb and resource served
  report.py extender-time BEFORE AFTER         from two snapshots of the extender's /metrics,
                                               its mean time per verb and the binds it refused
  report.py scheduler-cycle BEFORE AFTER       from two snapshots of a scheduler's /metrics, its
                                               attempts by result and its algorithm's and
                                               attempt's mean time per pod
  report.py valid KUBECTL KUBECONFIG NS MODE   "valid total": placements that are the count asked,
                                               on NeuronLink-connected devices (MODE extender: the
                                               pods' AWS_NEURON_IDS; gang: the same, and every
                                               pod of a gang placed, each on a node of its own;
                                               dra: the claims' results)
  report.py ratio A B RATE_A RATE_B [NOTE]     "A / B: N.NNx NOTE"
  report.py tables STATE_DIR                   CPU seconds and API server waits, a column per run
  report.py plot-spec OUT NODES PODS VERSION COUNTING EXTENDER COUNTING4 EXTENDER4 DRA DRA_WHOLE
                    COUNTING16 GANG            the bar chart's spec for plot.py (rates; nan: not run)
  report.py placed-over-time OUT NODES PODS VERSION STATE_DIR
                                               the line plot's spec: pods placed over time per run
"""
import datetime
import json
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "e2e",
                                "cluster"))
from neuronlink import connected  # noqa: E402

# Each run's label and namespace, in the order the tables show them.
RUNS = [("counting", "bench-default"), ("extender", "bench-extender"),
        ("counting4", "bench-default-4"), ("extender4", "bench-extender-4"),
        ("dra", "bench-dra"), ("dra-whole", "bench-dra-whole"),
        ("counting16", "bench-default-16"), ("gang", "bench-gang")]


def timestamp(text):
    """Seconds since the epoch of an API timestamp (RFC 3339, 1 s resolution)."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def span(pod_list):
    """(pods scheduled, seconds from the first to the last PodScheduled + 1, pods per second).
    Transitions have 1 s resolution: the + 1 counts the last second."""
    times = []
    for pod in pod_list["items"]:
        for c in pod.get("status", {}).get("conditions", []):
            if c["type"] == "PodScheduled" and c["status"] == "True":
                times.append(timestamp(c["lastTransitionTime"]))
    seconds = max(times) - min(times) + 1
    return len(times), seconds, len(times) / seconds


def nearest_rank(sorted_values, share):
    """The value at `share` (0-1] of sorted_values by the nearest-rank method."""
    return sorted_values[max(0, math.ceil(share * len(sorted_values)) - 1)]


def latency(pod_list, resumed):
    """(p50, p99, pods) of the seconds from each pod's creation, or from `resumed` (the epoch
    second its scheduler resumed, as the pods were created while it was paused) when that is
    later, to the pod's Ready transition: what the pod's owner waited for it to run. Pods not
    Ready are left out (the count says how many were in)."""
    waits = []
    for pod in pod_list["items"]:
        ready = [c["lastTransitionTime"] for c in pod.get("status", {}).get("conditions", [])
                 if c["type"] == "Ready" and c["status"] == "True"]
        if ready:
            start = max(timestamp(pod["metadata"]["creationTimestamp"]), math.floor(resumed))
            waits.append(max(0.0, timestamp(ready[0]) - start))
    if not waits:
        return math.nan, math.nan, 0
    waits.sort()
    return nearest_rank(waits, 0.5), nearest_rank(waits, 0.99), len(waits)


def samples(lines):
    """(name, labels, value) for each sample in Prometheus text lines (comments skipped)."""
    for line in lines:
        m = re.match(r'(\w+)(?:\{(.*)\})? (\S+)$', line.strip())
        if m:
            yield m[1], dict(re.findall(r'(\w+)="([^"]*)"', m[2] or "")), float(m[3])


def read_metrics(lines):
    """name -> [seconds, requests] of the API server's counters this benchmark reads."""
    totals = {}
    for metric, labels, value in samples(lines):
        base, _, part = metric.rpartition("_")
        if part not in ("sum", "count"):
            continue
        if base == "apiserver_flowcontrol_request_wait_duration_seconds":
            name = "queued at " + labels["priority_level"]
        elif (base == "apiserver_request_duration_seconds" and
              labels.get("verb") not in (None, "WATCH", "CONNECT") and labels.get("resource")):
            name = "served " + labels["verb"] + " " + labels["resource"] + (
                "/" + labels["subresource"] if labels.get("subresource") else "")
        else:
            continue
        pair = totals.setdefault(name, [0.0, 0.0])
        pair[0 if part == "sum" else 1] += value
    return totals


# Requests of one verb and resource served fewer times than this in a run are left out of its
# table: the background (leases, node status), not the pods' own traffic.
SERVED_AT_LEAST = 100


def api_waits(before, after):
    """"name requests mean_ms" lines for what grew between two read_metrics results: every
    priority level that queued a request, and each verb and resource served at least
    SERVED_AT_LEAST times."""
    lines = []
    for name in sorted(after):
        seconds = after[name][0] - before.get(name, [0, 0])[0]
        count = after[name][1] - before.get(name, [0, 0])[1]
        if count >= (SERVED_AT_LEAST if name.startswith("served ") else 1):
            lines.append(f"{name.replace(' ', '_')} {int(count)} {1000 * seconds / count:.1f}")
    return lines


def scheduler_figures(lines):
    """{key: total} from a kube-scheduler's /metrics: ("attempts", result), ("attempt_s", result),
    "algorithm_s", "algorithm_n", ("point_s", extension point) and "hints"."""
    figures = {}
    for name, labels, value in samples(lines):
        key = {"scheduler_schedule_attempts_total": ("attempts", labels.get("result")),
               "scheduler_scheduling_attempt_duration_seconds_sum": ("attempt_s", labels.get("result")),
               "scheduler_scheduling_algorithm_duration_seconds_sum": "algorithm_s",
               "scheduler_scheduling_algorithm_duration_seconds_count": "algorithm_n",
               "scheduler_framework_extension_point_duration_seconds_sum":
                   ("point_s", labels.get("extension_point")),
               }.get(name)
        if name == "scheduler_batch_attempts_total" and labels.get("result") == "hint_used":
            key = "hints"
        if key is not None:
            figures[key] = figures.get(key, 0.0) + value
    return figures


def scheduler_cycle(before, after):
    """"N scheduled, N unschedulable, N errors; N on a batching hint; per scheduled pod: the
    algorithm Y ms (PreFilter, Score ...; the rest is Filter and the extenders), the attempt to
    its bind X ms" between two scheduler_figures snapshots. The algorithm runs one pod at a time,
    so it bounds the rate; the binding runs beside it (kube-scheduler's attempt duration includes
    it). An unschedulable attempt searched every node, wrote the pod's status and put it in
    backoff. Batching hints (kube-scheduler's opportunistic batching): a pod tried on the previous
    alike pod's next-best node alone, not a search."""
    delta = {key: value - before.get(key, 0.0) for key, value in after.items()}
    scheduled = delta.get(("attempts", "scheduled"), 0)
    text = (f"{int(scheduled)} scheduled, {int(delta.get(('attempts', 'unschedulable'), 0))} "
            f"unschedulable, {int(delta.get(('attempts', 'error'), 0))} errors; "
            f"{int(delta.get('hints', 0))} on a batching hint")
    if scheduled:
        attempt = 1000 * delta.get(("attempt_s", "scheduled"), 0) / scheduled
        algorithm = 1000 * delta.get("algorithm_s", 0) / max(delta.get("algorithm_n", 0), 1)
        points = ", ".join(f"{point} {1000 * delta[('point_s', point)] / scheduled:.1f}"
                           for point in ("PreFilter", "PreScore", "Score", "Reserve", "Permit")
                           if delta.get(("point_s", point), 0) * 1000 / scheduled >= 0.05)
        text += (f"; per scheduled pod: algorithm {algorithm:.1f} ms ({points}"
                 f"{'; ' if points else ''}the rest is Filter and extenders), attempt to its bind "
                 f"{attempt:.0f} ms")
    return text


def extender_figures(lines):
    """{("sum"|"count", verb): seconds or calls, ("error", verb): failed calls} from the
    extender's /metrics."""
    figures = {}
    for line in lines:
        m = re.match(r"torus_extender_request_duration_seconds_(sum|count)\{verb=\"(\w+)\"\} (\S+)",
                     line)
        if m:
            figures[(m[1], m[2])] = float(m[3])
        m = re.match(r"torus_extender_requests_total\{verb=\"(\w+)\",result=\"error\"\} (\S+)", line)
        if m:
            figures[("error", m[1])] = float(m[2])
        m = re.match(r"torus_extender_gang_filters_total\{outcome=\"(\w+)\"\} (\S+)", line)
        if m:
            figures[("gang", m[1])] = float(m[2])
    return figures


def extender_time(before, after):
    """"verb N.N ms x COUNT, ...; binds refused: E of N (X per 1,000)[; gang filters: OUTCOME N,
    ...]" between two snapshots of the extender's /metrics (a refused bind costs its pod another
    scheduling cycle; a gang member's filter that was not on_its_node or moved costs one too)."""
    delta = {key: value - before.get(key, 0) for key, value in extender_figures(after).items()}
    verbs = sorted(verb for kind, verb in delta if kind == "count" and delta[(kind, verb)])
    text = ", ".join(f"{v} {1000 * delta[('sum', v)] / delta[('count', v)]:.1f} ms x "
                     f"{int(delta[('count', v)])}" for v in verbs)
    binds, refused = delta.get(("count", "bind"), 0), delta.get(("error", "bind"), 0)
    if binds:
        text += f"; binds refused: {int(refused)} of {int(binds)} ({1000 * refused / binds:.1f} per 1,000)"
    gangs = [(outcome, int(n)) for (kind, outcome), n in sorted(delta.items()) if kind == "gang" and n]
    if gangs:
        text += "; gang filters: " + ", ".join(f"{outcome} {n}" for outcome, n in gangs)
    return text


def placements(nodes, pods, claims, mode):
    """(node, devices asked, devices got) per pod (extender, gang) or per claim (dra)."""
    found = []
    if mode == "dra":
        node_of = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}
        for claim in claims:
            status = claim.get("status", {})
            owners = [r["name"] for r in status.get("reservedFor", [])
                      if r.get("resource") == "pods"]
            node = node_of.get(owners[0]) if owners else None
            results = status.get("allocation", {}).get("devices", {}).get("results", [])
            chips = [int(r["device"][len("neurondevice"):]) for r in results
                     if r["pool"] == node and r["device"].startswith("neurondevice")]
            found.append((node, 4, chips if len(chips) == len(results) else []))
        return found
    for pod in pods:
        meta, spec = pod["metadata"], pod["spec"]
        ids = [int(i) for i in meta.get("annotations", {}).get("AWS_NEURON_IDS", "").split(",")
               if i]
        resource, count = next(iter(spec["containers"][0]["resources"]["limits"].items()))
        topo = nodes.get(spec.get("nodeName"))
        if not topo or len(ids) != int(count) or len(set(ids)) != len(ids):
            found.append((None, 0, []))
            continue
        devices = sorted(set(ids)) if resource.endswith("/neuron") else \
            sorted({i // topo["coresPerDevice"] for i in ids})
        found.append((spec["nodeName"], len(devices), devices))
    return found


def valid_count(nodes, placed):
    """How many placements have the devices asked, NeuronLink-connected on their node's
    torus.dev/topology (nodes: name -> that annotation, parsed)."""
    valid = 0
    for node, want, devices in placed:
        topo = nodes.get(node)
        if topo and want and len(set(devices)) == want:
            valid += connected(sorted(set(devices)), lambda d, topo=topo: topo["links"][d])
    return valid


def whole_gangs_only(pods, placed):
    """`placed` (extender placements of `pods`, in order) with the pods of a gang counted invalid
    unless every pod of it is placed, each on a node of its own: all of a gang or none."""
    gangs = {}
    for pod, (node, _, _) in zip(pods, placed):
        gang = pod["metadata"].get("labels", {}).get("torus.dev/gang")
        size = pod["metadata"].get("labels", {}).get("torus.dev/gang-size")
        gangs.setdefault(gang, {"size": int(size or 0), "nodes": []})["nodes"].append(node)
    whole = {gang for gang, g in gangs.items()
             if gang and None not in g["nodes"] and len(g["nodes"]) == g["size"]
             and len(set(g["nodes"])) == g["size"]}
    return [where if pod["metadata"].get("labels", {}).get("torus.dev/gang") in whole
            else (None, 0, []) for pod, where in zip(pods, placed)]


def valid(kubectl, kubeconfig, namespace, mode):
    def get(*args):
        return json.loads(subprocess.check_output([kubectl, "--kubeconfig", kubeconfig, *args,
                                                   "-o", "json"]))
    nodes = {n["metadata"]["name"]: json.loads(n["metadata"]["annotations"]["torus.dev/topology"])
             for n in get("get", "nodes", "-l", "type=kwok")["items"]}
    pods = get("get", "pods", "-n", namespace)["items"]
    claims = get("get", "resourceclaims", "-n", namespace)["items"] if mode == "dra" else []
    placed = placements(nodes, pods, claims, mode)
    if mode == "gang":
        placed = whole_gangs_only(pods, placed)
    return valid_count(nodes, placed), len(pods)


def ratio(a, b, rate_a, rate_b, note):
    return f"{a} / {b}: {float(rate_a) / float(rate_b):.2f}x {note}"


def tables(state):
    """The per-run tables of what each run wrote under `state` (cpu-NS, api-NS files), line by
    line."""
    def table(title, prefix, column, total):
        found, names = {}, []
        for label, namespace in RUNS:
            path = os.path.join(state, prefix + namespace)
            if os.path.exists(path):
                with open(path) as f:
                    found[label] = {line.split()[0]: line.split()[column] for line in f
                                    if line.strip()}
                names += [n for n in found[label] if n not in names]
        if not found:
            return
        yield f"\n{title}"
        yield f"{'':<30}" + "".join(f"{label:>12}" for label in found)
        for name in names:
            yield (f"{name.replace('_', ' '):<30}" +
                   "".join(f"{found[label].get(name, '-'):>12}" for label in found))
        if total:
            yield f"{'all':<30}" + "".join(
                f"{sum(float(v) for v in found[label].values()):>12.1f}" for label in found)
    yield from table("CPU SECONDS WHILE THE PODS WERE SCHEDULED (per component)", "cpu-", 1, True)
    yield from table(f"API SERVER: REQUESTS (queued per priority level; served, each verb and resource"
                     f" served {SERVED_AT_LEAST} times or more)", "api-", 1,
                     False)
    yield from table("API SERVER: MEAN MS (time queued; time to serve)", "api-", 2, False)


def plot_spec(out, nodes, pods, version, rates):
    default, ext, d4, e4, dra, whole, d16, gang = (None if math.isnan(float(v)) else float(v)
                                                   for v in rates)
    sizes = ["mixed sizes", "4 connected chips", "whole trn2 (extender: gangs of 4)"]
    series = [
        {"name": "kube-scheduler, counted", "x": sizes, "y": [default, d4, d16]},
        {"name": "neuron-scheduler + Torus extender", "x": sizes, "y": [ext, e4, gang]},
        {"name": "kube-scheduler DRA, chips + partitions", "x": sizes, "y": [None, dra, None]},
        {"name": "kube-scheduler DRA, whole chips", "x": sizes, "y": [None, whole, None]}]
    # A size no run measured has no group of bars.
    kept = [i for i in range(len(sizes)) if any(s["y"][i] is not None for s in series)]
    for s in series:
        s["x"], s["y"] = [s["x"][i] for i in kept], [s["y"][i] for i in kept]
    return {
        "out": out, "kind": "bar", "ylabel": "pods scheduled per second",
        "title": f"Scheduling throughput, {pods} pods on {nodes}",
        # A path that did not run has no bar and no entry in the legend.
        "series": [s for s in series if any(y is not None for y in s["y"])],
        "note": f"tests/bench/scheduling_throughput.sh, Kubernetes {version}; DRA is measured for "
                "4 chips only; a missing bar was not run"}


# Each run's namespace and its line's name in the plot of pods placed over time.
RUN_NAMESPACES = [("bench-default", "kube-scheduler, counted (mixed)"),
                  ("bench-extender", "neuron-scheduler + extender (mixed)"),
                  ("bench-default-4", "kube-scheduler, counted (4 chips)"),
                  ("bench-extender-4", "neuron-scheduler + extender (4 chips)"),
                  ("bench-dra", "kube-scheduler DRA, chips + partitions (4 chips)"),
                  ("bench-dra-whole", "kube-scheduler DRA, whole chips (4 chips)"),
                  ("bench-default-16", "kube-scheduler, counted (whole trn2)"),
                  ("bench-gang", "neuron-scheduler + extender (gangs of 4 whole trn2)")]


def placed_over_time(pod_list):
    """(seconds since the first PodScheduled transition, pods scheduled by then), a point per
    second that saw a transition."""
    times = sorted(timestamp(c["lastTransitionTime"]) for pod in pod_list["items"]
                   for c in pod.get("status", {}).get("conditions", [])
                   if c["type"] == "PodScheduled" and c["status"] == "True")
    points = []
    for count, when in enumerate(times, 1):
        second = when - times[0]
        if points and points[-1][0] == second:
            points[-1] = (second, count)
        else:
            points.append((second, count))
    return points


def placed_over_time_spec(out, nodes, pods, version, state_dir):
    """The line plot's spec: for each run that left its pods in STATE_DIR, pods placed over time."""
    series = []
    for namespace, name in RUN_NAMESPACES:
        path = os.path.join(state_dir, f"pods-{namespace}.json")
        if not os.path.exists(path):
            continue
        with open(path) as pod_file:
            points = placed_over_time(json.load(pod_file))
        series.append({"name": name, "x": [p[0] for p in points], "y": [p[1] for p in points]})
    return {"out": out, "kind": "line", "xlabel": "seconds since the run's first pod was scheduled",
            "ylabel": "pods scheduled", "title": f"Pods placed over time, {pods} pods on {nodes}",
            "series": series,
            "note": f"tests/bench/scheduling_throughput.sh, Kubernetes {version}; "
                    "PodScheduled transitions have 1 s resolution"}


def main(argv):
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command == "span" and not args:
        print(*span(json.load(sys.stdin)))
    elif command == "latency" and len(args) == 1:
        print(*latency(json.load(sys.stdin), float(args[0])))
    elif command == "api-waits" and len(args) == 2:
        with open(args[0]) as before, open(args[1]) as after:
            lines = api_waits(read_metrics(before), read_metrics(after))
        for line in lines:
            print(line)
    elif command == "extender-time" and len(args) == 2:
        with open(args[0]) as before, open(args[1]) as after:
            print(extender_time(extender_figures(before), after))
    elif command == "scheduler-cycle" and len(args) == 2:
        with open(args[0]) as before, open(args[1]) as after:
            print(scheduler_cycle(scheduler_figures(before), scheduler_figures(after)))
    elif command == "valid" and len(args) == 4:
        print(*valid(*args))
    elif command == "ratio" and len(args) in (4, 5):
        print(ratio(*args[:4], args[4] if len(args) == 5 else ""))
    elif command == "tables" and len(args) == 1:
        for line in tables(args[0]):
            print(line)
    elif command == "placed-over-time" and len(args) == 5:
        print(json.dumps(placed_over_time_spec(*args)))
    elif command == "plot-spec" and len(args) == 12:
        print(json.dumps(plot_spec(*args[:4], args[4:])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
