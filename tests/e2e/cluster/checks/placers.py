"""The ecosystem's placers on Torus's labels: what Kueue says of a Job it holds back, and why the
scheduler leaves a LeaderWorkerSet group's pods Pending."""
from checks import require


def running_one_on_each(pods, names):
    """The pods are Running, one on each node of `names`."""
    placed = sorted((p["spec"].get("nodeName", ""), p["status"].get("phase")) for p in pods["items"])
    require(placed == [(name, "Running") for name in sorted(names)],
            f"pods (node, phase) {placed}, want one Running on each of {sorted(names)}")


def running_within(pods, names, count):
    """`count` pods, every one Running on a node of `names`."""
    placed = sorted((p["metadata"]["name"], p["spec"].get("nodeName", ""), p["status"].get("phase"))
                    for p in pods["items"])
    require(len(placed) == count, f"{len(placed)} pods, want {count}: {placed}")
    outside = [pod for pod in placed if pod[1] not in names or pod[2] != "Running"]
    require(not outside, f"not Running within {sorted(names)}: {outside}")


def kueue_waiting_reason(workloads, job, wanted):
    """The Workload Kueue made for Job `job` reserves no quota, and its QuotaReserved condition's
    message contains `wanted` (what keeps it out); prints that message."""
    mine = [w for w in workloads["items"]
            if any(o.get("kind") == "Job" and o.get("name") == job
                   for o in w["metadata"].get("ownerReferences", []))]
    require(len(mine) == 1, f"{len(mine)} Workloads owned by Job {job}")
    conditions = {c["type"]: c for c in mine[0].get("status", {}).get("conditions", [])}
    reserved = conditions.get("QuotaReserved")
    require(reserved is not None, f"Workload {mine[0]['metadata']['name']} has no QuotaReserved "
                                  f"condition yet (conditions: {sorted(conditions)})")
    require(reserved["status"] == "False",
            f"Workload {mine[0]['metadata']['name']} reserved quota: {reserved.get('message')}")
    require(wanted in reserved.get("message", ""),
            f"QuotaReserved=False says {reserved.get('message')!r}, not {wanted!r}")
    return reserved["message"]


def unschedulable_by(pods, prefix, wanted):
    """Every pod named `prefix`* (at least one) is Pending, unscheduled, and the scheduler's
    PodScheduled=False message for it contains `wanted`."""
    mine = [p for p in pods["items"] if p["metadata"]["name"].startswith(prefix)]
    require(mine, f"no pod named {prefix}*")
    for pod in mine:
        name = pod["metadata"]["name"]
        require(not pod["spec"].get("nodeName"), f"{name} is on {pod['spec'].get('nodeName')}")
        scheduled = [c for c in pod.get("status", {}).get("conditions", [])
                     if c["type"] == "PodScheduled"]
        require(scheduled and scheduled[0]["status"] == "False"
                and scheduled[0].get("reason") == "Unschedulable",
                f"{name}: not judged unschedulable yet ({scheduled})")
        require(wanted in scheduled[0].get("message", ""),
                f"{name}: {scheduled[0].get('message')!r} does not say {wanted!r}")
