"""One pod: what its container saw, what the agent says it holds, and how the extender,
preemption and kubectl neuron account for it."""
import os

from neuronlink import connected

from checks import require
from checks.ids import compress_ids, expand_ids


def neighbours_in(node_dir):
    """device -> the devices the simulated node's sysfs says it is NeuronLink-connected to."""
    def neighbours(device):
        path = os.path.join(node_dir, "sys/class/neuron_device", f"neuron{device}",
                            "connected_devices")
        with open(path, encoding="utf-8") as handle:
            return {int(x) for x in handle.read().replace(",", " ").split()}
    return neighbours


# The minors every e2e pod probes (lib.sh's neuron_report_script): more than any node has devices.
PROBED_MINORS = 32


def device_rules(seen, devices):
    """The container's own probe of its device rules (ALLOWED=, DENIED= minors of the Neuron
    devices' major) lets it open exactly `devices` and refuses every other minor: a wrong grant
    in Allocate or a CDI spec, or a node whose device numbers every container may open, fails."""
    require("ALLOWED" in seen and "DENIED" in seen,
            "the report has no ALLOWED=/DENIED= lines: the device rules were not probed")
    require(not seen.get("PROBE_UNEXPECTED"),
            f"the device probe met what it did not expect: {seen.get('PROBE_UNEXPECTED')}")
    allowed = {int(minor) for minor in seen["ALLOWED"].split()}
    denied = {int(minor) for minor in seen["DENIED"].split()}
    require(allowed == set(devices),
            f"the device rules let the container open minors {compress_ids(allowed) or 'none'}; "
            f"it was given {compress_ids(devices) or 'none'}")
    require(denied == set(range(PROBED_MINORS)) - set(devices),
            f"the device rules refused minors {compress_ids(denied) or 'none'}; every one but "
            f"{compress_ids(devices) or 'none'} should be")


def device_rules_report(report):
    """A probe report (DEVICES=, ALLOWED=, DENIED= lines) whose device rules open exactly the
    container's own /dev/neuronN."""
    seen = dict(line.split("=", 1) for line in report.splitlines() if "=" in line)
    devices = sorted(int(d[len("neuron"):]) for d in seen.get("DEVICES", "").split())
    require(devices, "the container has no /dev/neuronN")
    device_rules(seen, devices)


def pod_saw(report, resource, count, cores_per_device, node_dir, lnc, any_devices=False):
    """A container's report (CORES=, DEVICES=, LNC=, ALLOWED=, DENIED= lines) matches what its
    pod asked: `count` cores or devices, every /dev/neuronN of those cores and no other, device
    rules that open those devices and refuse every other, NEURON_LOGICAL_NC_CONFIG equal to
    `lnc`, and devices the simulated sysfs says are NeuronLink-connected (unless any_devices: a
    request that asked for no connectivity)."""
    seen = dict(line.split("=", 1) for line in report.splitlines() if "=" in line)
    cores = expand_ids(seen.get("CORES", ""))
    devices = sorted(int(d[len("neuron"):]) for d in seen.get("DEVICES", "").split())
    want_cores = count if resource == "neuroncore" else count * cores_per_device
    require(len(cores) == want_cores == len(set(cores)), f"cores {cores}: want {want_cores}")
    require(devices == sorted({c // cores_per_device for c in cores}),
            f"devices {devices} for cores {cores}")
    if resource == "neuron":
        require(len(devices) == count, f"devices {devices}: want {count}")
    device_rules(seen, devices)
    require(seen.get("LNC") == lnc, f"NEURON_LOGICAL_NC_CONFIG={seen.get('LNC')!r}, want {lnc!r}")
    if not any_devices:
        require(connected(devices, neighbours_in(node_dir)),
                f"devices {devices} are not NeuronLink-connected")


def cores_held_by(allocations, pod):
    """The cores kubelet gave `pod` ("namespace/name"), from the agent's /allocations."""
    return [core for holder in allocations["holders"] if holder["pod"] == pod
            for core in holder["cores"]]


def pod_on_device(pods, device, cores_per_device):
    """The running pod whose AWS_NEURON_IDS start at `device`'s first core, or None."""
    first = device * cores_per_device
    for pod in pods["items"]:
        ids = pod["metadata"].get("annotations", {}).get("AWS_NEURON_IDS", "")
        if (pod["status"].get("phase") == "Running" and "deletionTimestamp" not in pod["metadata"]
                and ids and expand_ids(ids)[0] == first):
            return pod["metadata"]["name"]
    return None


def cores_of(pod, cores_per_device):
    """The cores the extender gave a pod (AWS_NEURON_IDS; a device pod's as its devices' cores)."""
    annotations = pod["metadata"].get("annotations", {})
    held = set(expand_ids(annotations.get("AWS_NEURON_IDS", "")))
    if annotations.get("NEURON_RESOURCE_TYPE") == "aws.amazon.com/neuron":
        held = {d * cores_per_device + c for d in held for c in range(cores_per_device)}
    return held


def victims_freed_exactly(new_ids, before, now, cores_per_device):
    """The pods running in `before` and gone (or terminating) in `now` held exactly the cores
    `new_ids` names: on a full node, a minimal choice evicts the pods on the new pod's cores and
    no other. Returns what it saw."""
    new = set(expand_ids(new_ids))
    held = {p["metadata"]["name"]: cores_of(p, cores_per_device)
            for p in before["items"] if p["status"].get("phase") == "Running"}
    alive = {p["metadata"]["name"] for p in now["items"] if "deletionTimestamp" not in p["metadata"]}
    victims = {name: cores for name, cores in held.items() if name not in alive}
    seen = f"new pod got {sorted(new)}, victims: { {n: sorted(c) for n, c in victims.items()} }"
    require(victims, "no pod was preempted; " + seen)
    require(set().union(*victims.values()) == new,
            "the victims' cores differ from the new pod's; " + seen)
    return seen


def extender_state_matches_pods(state, pods):
    """The extender's /state allocations are the AWS_NEURON_IDS of the pending and running pods."""
    held = {a["pod"]: a["ids"] for a in state["allocations"]}
    want = {}
    for pod in pods["items"]:
        ids = pod["metadata"].get("annotations", {}).get("AWS_NEURON_IDS")
        if ids and pod["status"].get("phase") in ("Pending", "Running"):
            want[pod["metadata"]["namespace"] + "/" + pod["metadata"]["name"]] = \
                compress_ids(expand_ids(ids))
    require(held == want, f"extender: {held} pods: {want}")


def neuron_pods_show(pods, name, ids, phase="Running"):
    """kubectl neuron pods --json shows `name` ("namespace/name") with exactly `ids`, allocated."""
    by_name = {p["namespace"] + "/" + p["name"]: p for p in pods}
    require(name in by_name, f"{name} not in {sorted(by_name)}")
    shown = by_name[name]
    require(shown["ids"] == sorted(expand_ids(ids)) and shown["phase"] == phase and
            shown["allocated"] == "true", f"{name} shown as {shown}")


def top_names(top, pods_with_cores):
    """kubectl neuron top NODE --json: the node's 16 devices, and each pod in `pods_with_cores`
    ({pod: ("cores"|"devices", count)}) with that many."""
    node = top["nodes"][0]
    pods = {p["pod"]: p for p in node["pods"]}
    for pod, (kind, count) in pods_with_cores.items():
        require(pod in pods and len(pods[pod][kind]) == count,
                f"{pod}: want {count} {kind}, top shows {pods.get(pod)}")
    require(len(node["devices"]) == 16, f"{len(node['devices'])} devices, want 16")
    return f"{sorted(pods)} {node['health']}"


def why_not_succeeded(status):
    """A pod status's own message (a failed admission says why), else, while it is still Pending,
    why the scheduler has not placed it: a pod that waits for good says what it waits for."""
    if status.get("message"):
        return status["message"]
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return f"not scheduled: {condition.get('message') or condition.get('reason', '')}"
    return ""


def successors_after_old(old, new, deleted_at, grace):
    """Force-deleted pods and the pods given their cores: `old` and `new` are {pod: (cores text,
    seconds)}, an old pod's seconds the last time its container was seen running, a new pod's its
    container's start. No new pod started on a core of an old container before that container
    was last seen; and the race was real: every old container ran on for `grace` seconds after
    `deleted_at`, the moment kubelet forgot it."""
    for pod, (_, last_seen) in old.items():
        require(last_seen - deleted_at >= grace,
                f"{pod} was last seen {last_seen - deleted_at:.1f} s after its deletion, "
                f"want at least {grace} s (the race was not made)")
    overlaps = []
    for pod, (cores, started) in new.items():
        mine = set(expand_ids(cores))
        require(mine, f"{pod} reported no cores")
        for old_pod, (old_cores, last_seen) in old.items():
            shared = mine & set(expand_ids(old_cores))
            if not shared:
                continue
            require(started > last_seen,
                    f"{pod} started on cores {compress_ids(sorted(shared))} at {started:.2f}, "
                    f"while {old_pod} still ran there (seen at {last_seen:.2f})")
            overlaps.append(f"{pod} after {old_pod} (+{started - last_seen:.1f} s)")
    require(overlaps, "no new pod was given an old pod's cores: nothing was checked")
    return "; ".join(overlaps)
