"""Why a stress pod failed admission, from what the API showed around its bind: the node's
restarting taint and torus.dev/kubelet-unavailable at that moment, the pods that held its cores
(still live, or ended only shortly before), and the agent's restarts. Printed by
admission_stress.py for each failed pod, so a failure on a machine one cannot log into (CI) says
which side was late."""
import json

from checks.ids import compress_ids, expand_ids
from checks.pods import cores_of

RESTARTING_TAINT = "torus.dev/device-plugin-restarting"
RECENT = 15.0  # seconds before the bind in which an ended pod may still be live in kubelet


def _node_at(node_events, at):
    """The last Node object seen at or before `at` (None before the first)."""
    seen = None
    for when, node in node_events:
        if when > at:
            break
        seen = node
    return seen


def _tainted(node):
    return any(t.get("key") == RESTARTING_TAINT for t in node.get("spec", {}).get("taints") or [])


def taint_changes(node_events):
    """[(time, present)] each time the restarting taint appeared or went."""
    changes = []
    for when, node in node_events:
        present = _tainted(node)
        if not changes or changes[-1][1] != present:
            changes.append((when, present))
    return changes


def pod_lifetimes(pod_events, cores_per_device):
    """name -> {bound, ended, cores, resource}: first time the API showed it on a node, first time
    it showed it Succeeded/Failed or deleted (None while live), the cores it was given."""
    pods = {}
    for when, pod in pod_events:
        name = pod["metadata"]["name"]
        entry = pods.setdefault(name, {"bound": None, "ended": None, "cores": set(),
                                       "resource": ""})
        limits = pod["spec"]["containers"][0]["resources"].get("limits", {})
        entry["resource"] = next(iter(limits), "")
        if pod["spec"].get("nodeName") and entry["bound"] is None:
            entry["bound"] = when
        cores = cores_of(pod, cores_per_device)
        if cores:
            entry["cores"] = cores
        if entry["ended"] is None and pod["status"].get("phase") in ("Succeeded", "Failed"):
            entry["ended"] = when
    return pods


def withheld_by_report(node):
    """(neuron devices, neuroncore cores) the agent's torus.dev/kubelet-unavailable report on a
    Node object withholds from kubelet; None when the node carries no report."""
    text = node["metadata"].get("annotations", {}).get("torus.dev/kubelet-unavailable")
    if not text:
        return None
    told = json.loads(text)
    return (set(expand_ids(told.get("aws.amazon.com/neuron", ""))),
            set(expand_ids(told.get("aws.amazon.com/neuroncore", ""))))


def _since(when, began):
    return f"{when - began:6.1f} s"


def explain(name, pod_events, node_events, restarts, cores_per_device, began):
    """Lines saying what surrounded the bind of pod `name` (times in s since `began`)."""
    pods = pod_lifetimes(pod_events, cores_per_device)
    me = pods.get(name)
    if me is None or me["bound"] is None:
        return [f"{name}: never seen bound by the watch"]
    bound = me["bound"]

    def rel(when):
        return _since(when, began)

    lines = [f"{name}: bound at {rel(bound)}, cores {compress_ids(me['cores']) or '?'} "
             f"({me['resource']})"]
    node = _node_at(node_events, bound)
    if node is None:
        lines.append("  node: not seen yet")
    else:
        devices, cores = withheld_by_report(node) or (set(), set())
        if me["resource"] == "aws.amazon.com/neuron":
            withheld, mine = devices, {c // cores_per_device for c in me["cores"]}
        else:
            withheld, mine = cores, me["cores"]
        lines.append(f"  node at the bind: restarting taint "
                     f"{'present' if _tainted(node) else 'absent'}; kubelet-unavailable "
                     f"{me['resource']} {compress_ids(withheld) or '-'}"
                     f" (overlap with this pod: {compress_ids(withheld & mine) or 'none'})")
    for when, present in taint_changes(node_events):
        if abs(when - bound) <= 60:
            lines.append(f"  taint {'added' if present else 'removed'} at {rel(when)}")
    for when in restarts:
        if abs(when - bound) <= 60:
            lines.append(f"  agent pod deleted at {rel(when)}")
    for other, entry in sorted(pods.items()):
        if other == name or entry["bound"] is None or entry["bound"] > bound:
            continue
        shared = entry["cores"] & me["cores"]
        if not shared:
            continue
        if entry["ended"] is None or entry["ended"] > bound:
            state = "live at the bind"
        elif bound - entry["ended"] <= RECENT:
            state = f"ended at {rel(entry['ended'])}"
        else:
            continue
        lines.append(f"  {other} ({entry['resource']}) held cores {compress_ids(shared)}: "
                     f"bound {rel(entry['bound'])}, {state}")
    return lines


def release_timeline(name, pod_events, node_events, cores_per_device, began, span=15.0):
    """Lines saying what followed the end of pod `name` until the agent's report stopped
    withholding its cores (times in s since `began`, at most `span` s): each report that changed
    what it withholds of them, and the pods bound meanwhile on any of them."""
    pods = pod_lifetimes(pod_events, cores_per_device)
    me = pods.get(name)
    if me is None or me["ended"] is None:
        return [f"{name}: never seen ended by the watch"]
    ended = me["ended"]

    def rel(when):
        return _since(when, began)

    mine_devices = {c // cores_per_device for c in me["cores"]}
    lines = [f"{name}: ended at {rel(ended)}, cores {compress_ids(me['cores']) or '?'} "
             f"({me['resource']})"]
    last = None
    for when, node in node_events:
        if when < ended:
            continue
        if when > ended + span:
            lines.append(f"  still withheld {span:.0f} s later")
            break
        devices, cores = withheld_by_report(node) or (set(), set())
        still = (compress_ids(devices & mine_devices), compress_ids(cores & me["cores"]))
        if still == last:
            continue
        last = still
        lines.append(f"  {rel(when)} report withholds neuron {still[0] or '-'}, "
                     f"neuroncore {still[1] or '-'}")
        if still == ("", ""):
            break
    for other, entry in sorted(pods.items()):
        if other == name or entry["bound"] is None:
            continue
        if ended <= entry["bound"] <= ended + span and entry["cores"] & me["cores"]:
            lines.append(f"  {other} ({entry['resource']}) bound {rel(entry['bound'])} on cores "
                         f"{compress_ids(entry['cores'] & me['cores'])}")
    return lines
