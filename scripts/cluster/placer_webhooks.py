#!/usr/bin/env python3
"""A placer's admission webhook configurations, rewritten for the local cluster (placers.sh).

  placer_webhooks.py NAME MANIFEST PORT CA_FILE LABEL > webhooks.yaml

MANIFEST is the placer's config/manifests.yaml of webhook configurations. Each is renamed
NAME-<its name> (its metadata otherwise dropped), and each webhook calls
https://127.0.0.1:PORT on the path its Service named, trusting CA_FILE (nothing in the local
cluster implements Services), only in namespaces labelled LABEL (key=value), so the rest of the
cluster never waits on it.
"""
import base64
import sys

import yaml


def rewrite(name, configurations, port, ca, label):
    """The configurations (parsed YAML documents, None for empty ones) for a placer on PORT."""
    key, value = label.split("=")
    kept = [c for c in configurations if c]
    for configuration in kept:
        configuration["metadata"] = {"name": f"{name}-{configuration['metadata']['name']}"}
        for webhook in configuration["webhooks"]:
            path = webhook["clientConfig"]["service"]["path"]
            webhook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca}
            webhook["namespaceSelector"] = {"matchLabels": {key: value}}
    return kept


def main(argv):
    if len(argv) != 5:
        sys.exit(__doc__)
    name, manifest, port, ca_file, label = argv
    with open(ca_file, "rb") as f:
        ca = base64.b64encode(f.read()).decode()
    with open(manifest) as f:
        configurations = rewrite(name, list(yaml.safe_load_all(f)), port, ca, label)
    yaml.safe_dump_all(configurations, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
