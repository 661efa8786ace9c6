"""The API server and the nodes: audit refusals, what a removed chart leaves, UltraServer
labels across nodes, times between events."""
import datetime
import json

from checks import require


def audit_refusals(lines, users_prefix, exact_users=()):
    """The 403s the audit log records for the chart's identities, as "user verb uri" lines. A
    namespace's ResourceQuota refusing an object ("exceeded quota") is that tenant's limit, which
    the UltraServer operator meets on purpose in a test, not a permission the chart lacks."""
    refused = set()
    for line in lines:
        event = json.loads(line)
        user = event.get("user", {}).get("username", "")
        status = event.get("responseStatus", {})
        if "exceeded quota" in status.get("message", ""):
            continue
        if status.get("code", 0) == 403 and (user.startswith(users_prefix) or user in exact_users):
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


def health_unknown_is(node, chips):
    """kubectl neuron node --json lists exactly `chips` as the chips whose health is unknown."""
    unknown = node["devices"]["unknown"]
    require(unknown == chips, f"unknown: {unknown}, want {chips}")


def finished_within(finished, since, limit):
    """A container's finishedAt (RFC 3339, whole seconds, so at most the true end) lies less than
    `limit` s after `since` (seconds since the epoch); returns the sentence to print."""
    at = datetime.datetime.fromisoformat(finished.replace("Z", "+00:00")).timestamp()
    delay = at - since
    require(delay < limit, f"finished {delay:.0f} s after, not within {limit} s")
    if delay < 0:  # the same second, truncated to below `since`
        return "finished within the same second (finishedAt has whole seconds)"
    return f"finished {delay:.0f} s (whole seconds) after"


def server_version_is(version, prefix):
    """`kubectl version -o json`: the API server's gitVersion starts with `prefix`."""
    have = version["serverVersion"]["gitVersion"]
    require(have.startswith(prefix), f"the API server is {have}, want {prefix}*")
