#!/usr/bin/env python3
"""What the end-to-end suites read from JSON, metrics and logs, as named checks.

Each check is a function of plain inputs (text, parsed JSON, file paths) that returns nothing
and raises CheckFailed with the reason, or returns what a shell needs to print; the command line
runs one by name, so the suites call e.g.

  e2e_checks.py metrics-name-holders METRICS ALLOCATIONS [GONE_POD...]
  k get pods -n e2e -o json | e2e_checks.py pod-on-device 3 4

A failed check prints its reason and exits 1; a usage error exits 2. e2e_checks_test.py holds the
checks' own tests (CTest: e2e_checks), so a suite's check can fail only for what it names.
"""
import datetime
import json
import os
import re
import sys

from neuronlink import connected


class CheckFailed(Exception):
    """A check saw something other than what it wants; the message says what."""


def require(condition, message):
    if not condition:
        raise CheckFailed(message)


# ---- ids ----

def expand_ids(text):
    """"0-3,8" -> [0, 1, 2, 3, 8] (the order given)."""
    ids = []
    for part in filter(None, text.strip().split(",")):
        low, _, high = part.partition("-")
        ids.extend(range(int(low), int(high or low) + 1))
    return ids


def compress_ids(ids):
    """[0, 1, 2, 3, 8] -> "0-3,8", as the extender and kubectl-neuron print a set."""
    runs = []
    for i in sorted(set(ids)):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs)


# ---- one pod ----

def pod_saw(report, resource, count, cores_per_device, node_dir, lnc, any_devices=False):
    """A container's report (CORES=, DEVICES=, LNC= lines) matches what its pod asked: `count`
    cores or devices, every /dev/neuronN of those cores and no other, NEURON_LOGICAL_NC_CONFIG
    equal to `lnc`, and devices the simulated sysfs says are NeuronLink-connected (unless
    any_devices: a request that asked for no connectivity)."""
    seen = dict(line.split("=", 1) for line in report.splitlines() if "=" in line)
    cores = expand_ids(seen.get("CORES", ""))
    devices = sorted(int(d[len("neuron"):]) for d in seen.get("DEVICES", "").split())
    want_cores = count if resource == "neuroncore" else count * cores_per_device
    require(len(cores) == want_cores == len(set(cores)), f"cores {cores}: want {want_cores}")
    require(devices == sorted({c // cores_per_device for c in cores}),
            f"devices {devices} for cores {cores}")
    if resource == "neuron":
        require(len(devices) == count, f"devices {devices}: want {count}")
    require(seen.get("LNC") == lnc, f"NEURON_LOGICAL_NC_CONFIG={seen.get('LNC')!r}, want {lnc!r}")

    def neighbours(device):
        path = os.path.join(node_dir, "sys/class/neuron_device", f"neuron{device}",
                            "connected_devices")
        with open(path, encoding="utf-8") as handle:
            return {int(x) for x in handle.read().replace(",", " ").split()}

    if not any_devices:
        require(connected(devices, neighbours), f"devices {devices} are not NeuronLink-connected")


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


# ---- the agent's /metrics ----

def _labels(line):
    return dict(re.findall(r'(\w+)="([^"]*)"', line))


def metrics_name_holders(metrics, allocations, gone=()):
    """Every pod kubelet lists in /allocations has exactly its cores in torus_allocation_info and
    its name on those cores' series; the `gone` pods appear nowhere. Returns a summary."""
    info, tensors = {}, {}
    for line in metrics.splitlines():
        if line.startswith("torus_allocation_info{"):
            labels = _labels(line)
            info.setdefault(labels["pod"], set()).add(int(labels["neuroncore"]))
        elif line.startswith("neuroncore_memory_usage_tensors{"):
            labels = _labels(line)
            tensors[int(labels["neuroncore"])] = labels["pod"]
    pods = {}
    for holder in allocations["holders"]:  # one entry per NUMA node of a container
        pods.setdefault(holder["pod"].split("/", 1)[1], set()).update(holder["cores"])
    require(len(pods) >= 2, f"want several pods, kubelet lists {sorted(pods)}")
    for pod, cores in pods.items():
        require(info.get(pod) == cores,
                f"{pod}: kubelet lists cores {sorted(cores)}, metrics {sorted(info.get(pod, []))}")
        wrong = [c for c in cores if tensors.get(c) != pod]
        require(not wrong, f"{pod}: cores {wrong} are labelled {[tensors.get(c) for c in wrong]}")
    for pod in gone:
        require(f'pod="{pod}"' not in metrics, f"{pod} is deleted but still named in /metrics")
    return f"{len(pods)} pods named on their cores"


# ---- preemption ----

def _cores_of(pod, cores_per_device):
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
    held = {p["metadata"]["name"]: _cores_of(p, cores_per_device)
            for p in before["items"] if p["status"].get("phase") == "Running"}
    alive = {p["metadata"]["name"] for p in now["items"] if "deletionTimestamp" not in p["metadata"]}
    victims = {name: cores for name, cores in held.items() if name not in alive}
    seen = f"new pod got {sorted(new)}, victims: { {n: sorted(c) for n, c in victims.items()} }"
    require(victims, "no pod was preempted; " + seen)
    require(set().union(*victims.values()) == new,
            "the victims' cores differ from the new pod's; " + seen)
    return seen


# ---- the extender ----

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


# ---- kubectl neuron ----

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


# ---- the API server and the node ----

def audit_refusals(lines, users_prefix, exact_users=()):
    """The 403s the audit log records for the chart's identities, as "user verb uri" lines."""
    refused = set()
    for line in lines:
        event = json.loads(line)
        user = event.get("user", {}).get("username", "")
        code = event.get("responseStatus", {}).get("code", 0)
        if code == 403 and (user.startswith(users_prefix) or user in exact_users):
            refused.add(f'{user} {event["verb"]} {event["requestURI"]}')
    return sorted(refused)


def node_forgotten(node):
    """No torus.dev/ or UltraServer label or annotation, no NeuronHealthy condition."""
    meta = node["metadata"]
    left = [k for k in list(meta.get("labels", {})) + list(meta.get("annotations", {}))
            if k.startswith("torus.dev/") or k.startswith("neuron.amazonaws.com/ultraserver")]
    left += [c["type"] for c in node["status"].get("conditions", []) if c["type"] == "NeuronHealthy"]
    require(not left, f"left on the node: {left}")


def at_most_seconds_apart(start, end, limit):
    """`end` - `start` (seconds of the day) is at most `limit`; returns the sentence to print."""
    delay = end - start
    require(delay <= limit, f"{delay:.2f} s apart, more than {limit} s")
    return f"{delay:.2f} s"


# ---- several nodes ----

ULTRASERVER_LABEL = "neuron.amazonaws.com/ultraserver-"


def ultraserver_places(nodes, names):
    """Of `names`, the first four name one UltraServer (server-id-4) at positions 0-3 (node-id-4)
    and the fifth none; returns what the labels say."""
    labels = {n["metadata"]["name"]: n["metadata"].get("labels", {}) for n in nodes["items"]}
    us = [labels[n].get(ULTRASERVER_LABEL + "server-id-4") for n in names[:4]]
    positions = [labels[n].get(ULTRASERVER_LABEL + "node-id-4") for n in names[:4]]
    outsider = {k: v for k, v in labels[names[4]].items() if k.startswith(ULTRASERVER_LABEL)}
    require(us[0] and len(set(us)) == 1, f"the UltraServer nodes name different UltraServers: {us}")
    require(positions == ["0", "1", "2", "3"], f"positions are not 0 to 3: {positions}")
    require(not any(k.startswith(ULTRASERVER_LABEL + "server-id") for k in outsider),
            f"{names[4]} claims an UltraServer: {outsider}")
    return f"{us} {positions} {outsider}"


def top_devices_per_node(top, names, devices):
    """kubectl neuron top --json shows `devices` devices on each of `names`."""
    counts = {n["node"]: len(n["devices"]) for n in top["nodes"]}
    short = {name: counts.get(name) for name in names if counts.get(name) != devices}
    require(not short, f"want {devices} devices on each node, got {short}")
    return str(counts)


def finished_within(finished, since, limit):
    """A container's finishedAt (RFC 3339, whole seconds, so at most the true end) lies less than
    `limit` s after `since` (seconds since the epoch); returns the sentence to print."""
    at = datetime.datetime.fromisoformat(finished.replace("Z", "+00:00")).timestamp()
    delay = at - since
    require(delay < limit, f"finished {delay:.0f} s after, not within {limit} s")
    if delay < 0:  # the same second, truncated to below `since`
        return "finished within the same second (finishedAt has whole seconds)"
    return f"finished {delay:.0f} s (whole seconds) after"


# ---- DRA: slices, claims, the agent's /allocations and /metrics ----

def pool_counts(devices, chips, cores):
    """The pool (device name -> device, as dra_lib.sh's pool_devices prints it) has `chips`
    chips and `cores` cores."""
    have_chips = sum(name.startswith("neurondevice") for name in devices)
    have_cores = sum(name.startswith("neuroncore") for name in devices)
    require((have_chips, have_cores) == (chips, cores), f"{have_chips} chips, {have_cores} cores")


def trn2_chip5_attributes(devices):
    """neurondevice5 of a trn2.48xlarge carries AWS's attribute names and values, its memory and
    the counter of its cores."""
    device = devices["neurondevice5"]
    attributes = device["attributes"]
    want = {"deviceId": {"int": 5}, "resourceType": {"string": "neuron_device"},
            "instanceType": {"string": "trn2.48xlarge"}, "topology_x": {"int": 1},
            "topology8_id": {"int": 0}, "neuronDriverVersion": {"version": "2.24.7"}}
    wrong = {k: attributes.get(k) for k, v in want.items() if attributes.get(k) != v}
    require(not wrong, f"attributes {wrong}, want {want}")
    require("resource.aws.com/devicegroup4_id" in attributes, f"no devicegroup4_id: {attributes}")
    require(device["capacity"]["memory"] == {"value": "96Gi"}, f"capacity {device['capacity']}")
    counters = device["consumesCounters"][0]["counters"]
    require(counters == {"device5": {"value": "4"}}, f"counters {counters}")


def slice_device_index(slices, node, device):
    """"SLICE INDEX": where the driver's slice of `node` lists `device`."""
    for item in slices["items"]:
        spec = item["spec"]
        if spec.get("nodeName") == node and spec["driver"] == "neuron.aws.com":
            for index, entry in enumerate(spec.get("devices", [])):
                if entry["name"] == device:
                    return f'{item["metadata"]["name"]} {index}'
    raise CheckFailed(f"no slice of {node} lists {device}")


def device_attribute_is(devices, device, attribute, kind, value):
    have = devices[device]["attributes"].get(attribute)
    require(have == {kind: value}, f"{device} {attribute}: {have}, want {{{kind!r}: {value!r}}}")


def device_taints_are(devices, device, want):
    """The device's taints, as "key=value:effect,...", are `want` ("" for none)."""
    taints = devices[device].get("taints", [])
    have = ",".join(t["key"] + "=" + t.get("value", "") + ":" + t["effect"] for t in taints)
    require(have == want, f"{device} taints: {have!r}, want {want!r}")


def claim_cores(allocations):
    """Every core of every claim the agent has prepared."""
    return sorted(core for claim in allocations["claims"] for core in claim["cores"])


def claim_metrics_name_the_pod(metrics, cores, claim, node, pod, cores_per_chip):
    """/metrics names `pod` on exactly the claim's cores (torus_allocation_info), and every
    per-core family carries NVIDIA's dra_* labels: the claim and each core's own chip on the
    claim's cores, no claim on the others."""
    named, per_core = {}, {}
    for line in metrics.splitlines():
        labels = _labels(line)
        if line.startswith("torus_allocation_info{"):
            require(labels["resource"] == "neuron.aws.com", f"allocation of {labels}")
            named[int(labels["neuroncore"])] = labels["pod"]
        if line.startswith("neuroncore_memory_usage_tensors{"):
            per_core[int(labels["neuroncore"])] = labels
    require(set(named) == set(cores) and set(named.values()) == {pod},
            f"claim cores {sorted(cores)}, /metrics names {named}")
    for core in cores:
        got = {k: v for k, v in per_core.get(core, {}).items() if k.startswith("dra_")}
        want = {"dra_claim_name": claim, "dra_claim_namespace": "e2e",
                "dra_device_name": f"neurondevice{core // cores_per_chip}",
                "dra_pool_name": node, "dra_driver_name": "neuron.aws.com"}
        require(got == want, f"core {core}: {got}, want {want}")
    free = [core for core in per_core if core not in cores]
    require(free and all(per_core[c]["dra_claim_name"] == "" for c in free),
            "a free core names a claim")
    return f"claim cores {sorted(cores)} named {sorted(set(named.values()))}"


def chips_disjoint_from_first_claim(allocations, device_nodes, count):
    """A container's DEVICES= report (/dev/neuronN names) has `count` chips, none of them held by
    the agent's first prepared claim."""
    held = set(allocations["claims"][0]["devices"])
    got = {int(name[len("neuron"):]) for name in device_nodes.split()}
    require(len(got) == count and not held & got, f"held {sorted(held)}, got {sorted(got)}")
    return f"held {sorted(held)}, got {sorted(got)}"


def slice_device_count(slices):
    return str(sum(len(item["spec"].get("devices", [])) for item in slices["items"]))


def claim_devices_of(claims, pod, pool):
    """The devices of `pool` allocated to the claim `pod` owns, sorted ("" if none)."""
    for claim in claims["items"]:
        owners = [o["name"] for o in claim["metadata"].get("ownerReferences", [])]
        allocation = claim.get("status", {}).get("allocation") or {}
        results = allocation.get("devices", {}).get("results", [])
        if pod in owners:
            return " ".join(sorted({r["device"] for r in results if r["pool"] == pool}))
    return ""


# ---- command line ----

def _load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _stdin_json():
    return json.load(sys.stdin)


COMMANDS = {
    # name: (arguments, run(args) -> printed text or None)
    "expand-ids": ("IDS", lambda a: "\n".join(map(str, expand_ids(a[0])))),
    "compress-ids": ("(ids on stdin)", lambda a: compress_ids(expand_ids(sys.stdin.read()))),
    "pod-saw": ("REPORT_FILE RESOURCE COUNT CORES_PER_DEVICE NODE_DIR LNC",
                lambda a: pod_saw(open(a[0], encoding="utf-8").read(), a[1], int(a[2]), int(a[3]),
                                  a[4], a[5], os.environ.get("E2E_ANY_DEVICES") == "1")),
    "cores-held-by": ("POD (allocations on stdin)",
                      lambda a: "\n".join(map(str, cores_held_by(_stdin_json(), a[0])))),
    "pod-on-device": ("DEVICE CORES_PER_DEVICE (pods on stdin)",
                      lambda a: pod_on_device(_stdin_json(), int(a[0]), int(a[1])) or ""),
    "metrics-name-holders": ("METRICS_FILE ALLOCATIONS_FILE [GONE_POD...]",
                             lambda a: metrics_name_holders(open(a[0], encoding="utf-8").read(),
                                                            _load(a[1]), a[2:])),
    "victims-freed-exactly": ("NEW_IDS PODS_BEFORE_FILE PODS_NOW_FILE CORES_PER_DEVICE",
                              lambda a: victims_freed_exactly(a[0], _load(a[1]), _load(a[2]),
                                                              int(a[3]))),
    "extender-state-matches-pods": ("STATE_FILE PODS_FILE",
                                    lambda a: extender_state_matches_pods(_load(a[0]),
                                                                          _load(a[1]))),
    "neuron-pods-show": ("NAMESPACE/NAME IDS (kubectl neuron pods --json on stdin)",
                         lambda a: neuron_pods_show(_stdin_json(), a[0], a[1])),
    "top-names": ("POD=KIND:COUNT... (kubectl neuron top --json on stdin)",
                  lambda a: top_names(_stdin_json(), {
                      pod: (spec.split(":")[0], int(spec.split(":")[1]))
                      for pod, _, spec in (arg.partition("=") for arg in a)})),
    "audit-refusals": ("AUDIT_LOG USER_PREFIX [USER...]",
                       lambda a: _refusals(open(a[0], encoding="utf-8"), a[1], a[2:])),
    "node-forgotten": ("(the Node on stdin)", lambda a: node_forgotten(_stdin_json())),
    "ultraserver-places": ("NODE... (five: four of one UltraServer, then one outside; nodes on stdin)",
                           lambda a: ultraserver_places(_stdin_json(), a)),
    "top-devices-per-node": ("DEVICES NODE... (kubectl neuron top --json on stdin)",
                             lambda a: top_devices_per_node(_stdin_json(), a[1:], int(a[0]))),
    "finished-within": ("FINISHED_AT SINCE LIMIT",
                        lambda a: finished_within(a[0], float(a[1]), float(a[2]))),
    "pool-counts": ("CHIPS CORES (pool devices on stdin)",
                    lambda a: pool_counts(_stdin_json(), int(a[0]), int(a[1]))),
    "trn2-chip5-attributes": ("(pool devices on stdin)",
                              lambda a: trn2_chip5_attributes(_stdin_json())),
    "slice-device-index": ("NODE DEVICE (resourceslices on stdin)",
                           lambda a: slice_device_index(_stdin_json(), a[0], a[1])),
    "device-attribute-is": ("DEVICE ATTRIBUTE TYPE VALUE (pool devices on stdin)",
                            lambda a: device_attribute_is(_stdin_json(), *a[:4])),
    "device-taints-are": ("DEVICE KEY=VALUE:EFFECT,... (pool devices on stdin)",
                          lambda a: device_taints_are(_stdin_json(), a[0], a[1])),
    "claim-cores": ("(/allocations on stdin)",
                    lambda a: " ".join(map(str, claim_cores(_stdin_json())))),
    "claim-metrics-name-the-pod": ("METRICS_FILE CLAIM NODE POD CORES_PER_CHIP (/allocations on stdin)",
                                   lambda a: claim_metrics_name_the_pod(
                                       open(a[0], encoding="utf-8").read(),
                                       claim_cores(_stdin_json()), a[1], a[2], a[3], int(a[4]))),
    "chips-disjoint-from-first-claim": ("COUNT DEVICE_NODES (/allocations on stdin)",
                                        lambda a: chips_disjoint_from_first_claim(
                                            _stdin_json(), a[1], int(a[0]))),
    "slice-device-count": ("(resourceslices on stdin)",
                           lambda a: slice_device_count(_stdin_json())),
    "claim-devices-of": ("POD POOL (resourceclaims on stdin)",
                         lambda a: claim_devices_of(_stdin_json(), a[0], a[1])),
    "at-most-seconds-apart": ("START END LIMIT",
                              lambda a: at_most_seconds_apart(float(a[0]), float(a[1]),
                                                              float(a[2]))),
}


def _refusals(lines, prefix, users):
    refused = audit_refusals(lines, prefix, users)
    require(not refused, "\n".join("403: " + r for r in refused))


def main(argv):
    if len(argv) < 2 or argv[1] not in COMMANDS:
        asked = len(argv) > 1 and argv[1] in ("-h", "--help")
        out = sys.stdout if asked else sys.stderr
        print(__doc__.split("\n\n")[0], file=out)
        for name, (args, _) in sorted(COMMANDS.items()):
            print(f"  e2e_checks.py {name} {args}", file=out)
        return 0 if asked else 2
    try:
        printed = COMMANDS[argv[1]][1](argv[2:])
    except CheckFailed as failure:
        print(failure, file=sys.stderr)
        return 1
    except (IndexError, ValueError, KeyError, OSError, json.JSONDecodeError) as error:
        print(f"e2e_checks.py {argv[1]}: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    if printed:
        print(printed)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
