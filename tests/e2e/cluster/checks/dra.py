"""DRA: the pool in the driver's ResourceSlices, claims, and the agent's /allocations."""

from checks import CheckFailed, require
from checks.cluster import ULTRASERVER_LABEL

DRIVER = "neuron.aws.com"
# NEURON_RT_ULTRASERVER_MODE for an UltraServer partition of this many nodes: the driver's mode
# code (X4 = 1, X2V = 3; common/contracts/container_env.h), not the count.
ULTRASERVER_MODES = {4: "1", 2: "3"}


# ---- the pool ----

def pool_devices(slices, node):
    """The pool of `node` as the API holds it: the devices of the driver's slices, by name."""
    devices = {}
    for item in slices["items"]:
        spec = item["spec"]
        if spec["driver"] == DRIVER and spec.get("nodeName") == node:
            devices.update({device["name"]: device for device in spec.get("devices", [])})
    return devices


def in_pool(devices, device, want):
    """`device` is in the pool (`want` True) or left out of it (False)."""
    require((device in devices) == want, f"{device} in the pool: {device in devices}, want {want}")


def whole_chips_only(devices, chips):
    """`chips` chips, no core partitions, and no chip consumes counters (what a pool is where the
    API server drops partitionable devices)."""
    pool_counts(devices, chips, 0)
    counting = sorted(n for n, d in devices.items() if "consumesCounters" in d)
    require(not counting, f"{counting} still consume counters")


def node_device_without_counters(devices, chips):
    """AWS's UltraServer node device (neuronnode, resourceType neuron_node) beside `chips` chips,
    consuming no counters (an API server without partitionable devices drops them)."""
    require("neuronnode" in devices, "no neuronnode among " + ", ".join(sorted(devices)[:5]))
    node = devices["neuronnode"]
    kind = node["attributes"].get("resourceType")
    require(kind == {"string": "neuron_node"}, f"neuronnode resourceType {kind}")
    require("consumesCounters" not in node, "the node device consumes counters the API dropped")
    have = sum(name.startswith("neurondevice") for name in devices)
    require(have == chips, f"{have} chips beside it, want {chips}")


def pool_counts(devices, chips, cores):
    """The pool (device name -> device, as pool_devices returns it) has `chips`
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


def chips_disjoint_from_first_claim(allocations, device_nodes, count):
    """A container's DEVICES= report (/dev/neuronN names) has `count` chips, none of them held by
    the agent's first prepared claim."""
    held = set(allocations["claims"][0]["devices"])
    got = {int(name[len("neuron"):]) for name in device_nodes.split()}
    require(len(got) == count and not held & got, f"held {sorted(held)}, got {sorted(got)}")
    return f"held {sorted(held)}, got {sorted(got)}"


def slice_device_count(slices):
    return str(sum(len(item["spec"].get("devices", [])) for item in slices["items"]))


def device_taints_listed(slices, device):
    """The taints of the one device named `device` in `slices` (any driver's), sorted and joined
    by spaces as "key=value:effect" (what a shell greps; "" for none)."""
    devices = [d for item in slices["items"] for d in item["spec"].get("devices", [])]
    named = [d for d in devices if d["name"] == device]
    require(len(named) == 1, f"{len(named)} devices named {device} in the slices, want 1")
    return " ".join(sorted(t["key"] + "=" + t.get("value", "") + ":" + t["effect"]
                           for t in named[0].get("taints", [])))


def claim_results_of(claims, pod):
    """"REQUEST DRIVER DEVICE" lines, one per device allocated to the claims `pod` owns, in the
    allocation's order ("" if none): what a shell greps for a pairing across drivers."""
    lines = []
    for claim in claims["items"]:
        owners = [o["name"] for o in claim["metadata"].get("ownerReferences", [])]
        if pod in owners:
            allocation = claim.get("status", {}).get("allocation", {})
            for result in allocation.get("devices", {}).get("results", []):
                lines.append(f'{result["request"]} {result["driver"]} {result["device"]}')
    return "\n".join(lines)


def claim_devices_of(claims, pod, pool):
    """The devices of `pool` allocated to the claim `pod` owns, sorted ("" if none)."""
    for claim in claims["items"]:
        owners = [o["name"] for o in claim["metadata"].get("ownerReferences", [])]
        allocation = claim.get("status", {}).get("allocation") or {}
        results = allocation.get("devices", {}).get("results", [])
        if pod in owners:
            return " ".join(sorted({r["device"] for r in results if r["pool"] == pool}))
    return ""


def ultraserver_environment(report, node, size):
    """A container's report names the UltraServer variables of a `size`-node partition with the
    server and node ids `node`'s labels publish for that size. Returns both sides."""
    labels = node["metadata"].get("labels", {})
    want = {"NEURON_RT_ULTRASERVER_MODE": ULTRASERVER_MODES[size],
            "NEURON_RT_ULTRASERVER_NODE_ID": labels.get(f"{ULTRASERVER_LABEL}node-id-{size}"),
            "NEURON_RT_ULTRASERVER_SERVER_ID": labels.get(f"{ULTRASERVER_LABEL}server-id-{size}")}
    have = dict(line.split("=", 1) for line in report.splitlines()
                if line.startswith("NEURON_RT_ULTRASERVER_"))
    seen = f"container: {have}, labels: {want}"
    require(have == want, seen)
    return seen


# ---- what the agent prepared (/allocations) ----

def prepared_claims_are(allocations, count, chips_each=None):
    """The agent has `count` prepared claims, each owning `chips_each` chips when given."""
    claims = allocations["claims"]
    require(len(claims) == count, f"the agent has {len(claims)} prepared claims, want {count}")
    if chips_each is not None:
        owned = [len(claim["devices"]) for claim in claims]
        require(all(n == chips_each for n in owned), f"chips owned per claim: {owned}")


def checkpoint_idle(checkpoint):
    """The driver's checkpoint lists no prepared claim and no chip waiting for its reset: with no
    pod on the node the driver has nothing left to write to it."""
    data = checkpoint["data"]
    claims, pending = sorted(data.get("claims", {})), data.get("pendingReset", [])
    require(not claims and not pending,
            f"the checkpoint still lists claims {claims} and chips to reset {pending}")


def admin_claim_owns_nothing(allocations, claim, devices):
    """The admin-access claim `claim` ("namespace/name") is prepared with `devices` devices and
    owns no chip and no core: it resets nothing when it goes. Returns what it saw."""
    by_name = {c["claim"]: c for c in allocations["claims"]}
    require(claim in by_name, f"no prepared claim {claim}: {sorted(by_name)}")
    monitor = by_name[claim]
    seen = f"{claim}: {len(monitor['deviceNames'])} devices, owns chips {monitor['devices']}"
    require(len(monitor["deviceNames"]) == devices and monitor["devices"] == []
            and monitor["cores"] == [], seen + f", cores {monitor['cores']}")
    return seen
