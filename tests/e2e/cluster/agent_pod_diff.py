#!/usr/bin/env python3
"""The node agent's pod as the local cluster installs it against the chart's production render.

    agent_pod_diff.py PRODUCTION.yaml LOCAL.yaml

Both are `helm template` outputs. Every part of the agent's pod that decides what it may touch —
volumes, mounts, capabilities and security context, arguments, host namespaces — must be the
same; only the image, the API address (extraEnv) and the host network (the local cluster has no
Service proxy) may differ. Prints each difference; exits 1 on one that is not allowed.
"""
import sys

import yaml

ALLOWED = {"image", "imagePullPolicy", "hostNetwork", "dnsPolicy"}
ALLOWED_ENV = {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}


def agent_pods(path):
    pods = {}
    with open(path) as stream:
        for doc in yaml.safe_load_all(stream):
            if not doc or doc.get("kind") != "DaemonSet":
                continue
            component = doc["metadata"]["labels"].get("app.kubernetes.io/component", "")
            if component.startswith("node-agent"):
                pods[component] = doc["spec"]["template"]["spec"]
    return pods


def flatten(value, prefix=""):
    """Leaves of a pod spec as path -> value, lists of named items keyed by name."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from flatten(item, f"{prefix}.{key}" if prefix else key)
    elif isinstance(value, list) and all(isinstance(v, dict) and "name" in v for v in value):
        for item in value:
            yield from flatten(item, f"{prefix}[{item['name']}]")
    else:
        yield prefix, value


def allowed(path):
    for part in path.split("."):
        if part.split("[")[0] in ALLOWED:
            return True
        if part.startswith("env[") and part[4:-1] in ALLOWED_ENV:
            return True
    return False


def main():
    production, local = agent_pods(sys.argv[1]), agent_pods(sys.argv[2])
    if not production or set(local) - set(production):
        print(f"agent DaemonSets: production {sorted(production)}, local {sorted(local)}")
        return 1
    bad = 0
    for component, spec in local.items():
        want, have = dict(flatten(production[component])), dict(flatten(spec))
        for path in sorted(set(want) | set(have)):
            if want.get(path) == have.get(path):
                continue
            verdict = "allowed" if allowed(path) else "NOT ALLOWED"
            bad += verdict != "allowed"
            print(f"{component} {path}: production {want.get(path)!r}, local {have.get(path)!r} ({verdict})")
    print(f"{len(local)} agent pod(s) compared; {bad} difference(s) not allowed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
