"""dra_scheduler_perf.sh's table: pods/s per workload, Torus's cases against their reference
cases (and against a baseline build's slices, when run), from scheduler_perf's result files.

  report.py RESULTS_DIR BASELINE_DIR

Reads every *.json that scheduler_perf wrote (-data-items-dir): the SchedulingThroughput
average of each workload. Exits 1, naming them, when a reference or Torus case has no result.
"""
import glob
import json
import sys

# (label, workload, the reference it is set against): upstream's own first, then each Torus case
# after the reference case of upstream's devices with as many devices per node.
ROWS = [
    ("upstream: claim from template, 1 of 10 devices", "SchedulingWithResourceClaimTemplate/2000pods_200nodes", None),
    ("upstream: 5 requests, matchAttribute (steady)", "SchedulingWithResourceClaimTemplate/match_empty_500nodes", None),
    ("upstream: partitionable devices (steady)", "Partitionable/empty_500nodes", None),
    ("reference: 1 of 16 devices", "ReferenceDevices/one_of_16", None),
    ("Torus: 1 chip of a trn2 (16 chips)", "TorusChips/one_chip", "ReferenceDevices/one_of_16"),
    ("reference: 4 of 16 sharing pciRoot", "ReferenceDevices/match4_of_16", None),
    ("Torus: 4 connected chips (devicegroup4_id)", "TorusConnectedChips/four_connected", "ReferenceDevices/match4_of_16"),
    ("reference: 1 of 80 devices", "ReferenceDevices/one_of_80", None),
    ("Torus: 1 core of a trn2 (16 chips + 64 cores)", "TorusCores/one_core", "ReferenceDevices/one_of_80"),
    ("Torus: 1 chip of a trn2 with core partitions", "TorusChipsOnPartitionedNodes/one_chip", "ReferenceDevices/one_of_80"),
]
UPSTREAM_ROWS = 3  # the rows before are upstream's own workloads, which --only-torus skips


def throughputs(directory):
    """workload -> pods/s (SchedulingThroughput average) from DIRECTORY/*.json."""
    found = {}
    for path in glob.glob(f"{directory}/*.json"):
        with open(path) as f:
            items = json.load(f)["dataItems"]
        for item in items:
            if item["labels"].get("Metric") == "SchedulingThroughput":
                name = item["labels"]["Name"].removeprefix("BenchmarkPerfScheduling/")
                found[name.removesuffix("/test")] = item["data"]["Average"]
    return found


def table(throughput, baseline):
    """(lines to print, workloads missing a result)."""
    header = f"\n{'workload':<48} {'pods/s':>8} {'vs reference':>13}"
    lines = [header + (f" {'baseline':>9} {'vs baseline':>12}" if baseline else "")]
    for label, name, reference in ROWS:
        if name not in throughput:
            continue
        ratio = ""
        if reference and reference in throughput:
            ratio = f"{throughput[name] / throughput[reference]:.2f}x"
        line = f"{label:<48} {throughput[name]:8.1f} {ratio:>13}"
        if name in baseline:
            line += f" {baseline[name]:9.1f} {throughput[name] / baseline[name]:11.2f}x"
        lines.append(line)
    cores, partitionable = "TorusCores/one_core", "Partitionable/empty_500nodes"
    if cores in throughput and partitionable in throughput:
        lines.append(f"Torus's cores against upstream's partitionable workload: "
                     f"{throughput[cores] / throughput[partitionable]:.2f}x")
    missing = [name for _, name, _ in ROWS[UPSTREAM_ROWS:] if name not in throughput]
    return lines, missing


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    lines, missing = table(throughputs(argv[0]), throughputs(argv[1]))
    for line in lines:
        print(line)
    if missing:
        print(f"no result for {', '.join(missing)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
