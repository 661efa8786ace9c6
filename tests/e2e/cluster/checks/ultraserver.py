"""The UltraServer operator: the NeuronUltraServer it builds, the devices a workload's reservation
tags and taints, and the pods of a workload across the nodes."""
from checks import require
from checks.dra import DRIVER

RESERVED_TAINT = "neuron.aws.com/reserved"


def ultraserver_built(ultraservers, names):
    """One NeuronUltraServer, Ready, of trn2u.48xlarge, listing `names` by node id (0 first)
    with every horizontal link up."""
    items = ultraservers["items"]
    require(len(items) == 1, f"{len(items)} NeuronUltraServer objects")
    spec, status = items[0]["spec"], items[0].get("status", {})
    nodes = sorted((t["nodeId"], t["nodeName"]) for t in spec["topology"])
    require(nodes == list(enumerate(names)), f"topology {nodes}, want {list(enumerate(names))}")
    require(spec["instanceType"] == "trn2u.48xlarge", f"instanceType {spec['instanceType']}")
    require(status.get("state") == "Ready", f"status {status}")
    down = [t["nodeName"] for t in spec["topology"] if t["linkStatusHorizontal"] != "up"]
    require(not down, f"horizontal links not up on {down}")


def allocation_leader(ultraservers):
    """The leader node of the (only) UltraServer's first allocation."""
    return ultraservers["items"][0]["status"]["allocations"][0]["leaderNodeName"]


def workload_tagged_nodes(slices, workload):
    """The nodes every one of whose devices carries workloadId `workload` ("namespace/name"),
    sorted and space-separated."""
    tagged = {}
    for item in slices["items"]:
        spec = item["spec"]
        if spec["driver"] != DRIVER:
            continue
        for device in spec.get("devices", []):
            tag = device.get("attributes", {}).get("workloadId", {}).get("string")
            tagged.setdefault(spec["nodeName"], set()).add(tag == workload)
    return " ".join(sorted(node for node, tags in tagged.items() if tags == {True}))


def every_device_reserved(slices):
    """Every device of every slice carries the reservation's taint."""
    bare = [(item["spec"].get("nodeName"), device["name"])
            for item in slices["items"] for device in item["spec"].get("devices", [])
            if RESERVED_TAINT not in [t["key"] for t in device.get("taints", [])]]
    require(not bare, f"devices without {RESERVED_TAINT}: {bare[:5]}")


def no_claim_allocated_for(claims, workload):
    """No ResourceClaim annotated for `workload` ("namespace/name") is allocated."""
    allocated = [c["metadata"]["name"] for c in claims["items"]
                 if c["metadata"].get("annotations", {}).get("neuron.aws.com/workload") == workload
                 and c.get("status", {}).get("allocation")]
    require(not allocated, f"claims of {workload} allocated: {allocated}")


# ---- a workload's pods ----

def pods_on_nodes(pods, names):
    """The pods run one on each of `names`."""
    nodes = sorted(p["spec"].get("nodeName", "") for p in pods["items"])
    require(nodes == sorted(names), f"pods on {nodes}, want {sorted(names)}")


def pod_on_node(pods, node):
    """The name of the pod on `node` (none: fails)."""
    on = [p["metadata"]["name"] for p in pods["items"] if p["spec"].get("nodeName") == node]
    require(on, f"no pod on {node}")
    return on[0]


def running_pods(pods):
    """"uid@node" of the Running pods not being deleted, sorted and space-separated."""
    return " ".join(sorted(p["metadata"]["uid"] + "@" + p["spec"]["nodeName"]
                           for p in pods["items"]
                           if p["status"].get("phase") == "Running"
                           and not p["metadata"].get("deletionTimestamp")))
