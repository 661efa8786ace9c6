#!/usr/bin/env python3
"""Fake Neuron nodes for the local cluster, driven by kwok (run by fake_nodes.sh).

Usage: fake-nodes.py NEURON_LS [--fake-nodes=TYPE:COUNT,...] [--dra-nodes=TYPE:COUNT,...]

Prints one v1 List. --fake-nodes: Nodes that carry what the Torus node agent would publish on a
real node of that type (labels and the torus.dev/topology annotation, from `neuron-ls
--simulate=TYPE --node-metadata`, i.e. the agent's own code) and the capacity its device plugin
would advertise. --dra-nodes: DRA nodes instead, labelled torus.dev/neuron-mode=dra, with no
device-plugin capacity, followed by the ResourceSlices the DRA driver would publish for each
(`neuron-ls --simulate=TYPE --resource-slices=NODE`, the driver's own slice builder).
They are tainted so that only pods that tolerate kwok's taint land there (the agent's DaemonSet
does not), and annotated for kwok, which keeps them Ready and runs their pods.
"""
import json
import subprocess
import sys

ULTRASERVER_LABEL = "neuron.amazonaws.com/ultraserver-server-id-4"


def neuron_ls(binary, *args):
    return subprocess.run([binary, *args], check=True, capture_output=True, text=True).stdout


def fake_node(name, instance_type, metadata, dra):
    topology = json.loads(metadata["annotations"]["torus.dev/topology"])
    cores = topology["devices"] * topology["coresPerDevice"]
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
              "node.kubernetes.io/instance-type": instance_type, "type": "kwok"}
    labels.update(metadata["labels"])
    annotations = {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}
    annotations.update(metadata["annotations"])
    resources = {"cpu": "192", "memory": "2Ti", "pods": "110"}
    if dra:
        labels["torus.dev/neuron-mode"] = "dra"
    else:
        resources["aws.amazon.com/neuron"] = str(topology["devices"])
        resources["aws.amazon.com/neuroncore"] = str(cores)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {"taints": [{"key": "kwok.x-k8s.io/node", "value": "fake",
                             "effect": "NoSchedule"}]},
        "status": {"capacity": resources, "allocatable": resources},
    }


def fake_nodes(binary, spec, dra):
    """The Nodes of one TYPE:COUNT,... spec, and (for DRA nodes) their ResourceSlices."""
    option = "--dra-nodes" if dra else "--fake-nodes"
    nodes, slices = [], []
    for part in filter(None, spec.split(",")):
        instance_type, _, count = part.partition(":")
        if not count.isdigit() or int(count) < 1:
            sys.exit(f"{option}: {part!r}: expected TYPE:COUNT, e.g. trn2.48xlarge:1000")
        try:
            metadata = json.loads(
                neuron_ls(binary, f"--simulate={instance_type}", "--node-metadata"))
            # One template per type; each node's copy differs only in its name.
            template = neuron_ls(binary, f"--simulate={instance_type}",
                                 "--resource-slices=FAKE-NODE-NAME") if dra else ""
        except subprocess.CalledProcessError as error:
            sys.exit(f"{option}: {instance_type}: {error.stderr.strip()}")
        if dra and ULTRASERVER_LABEL in metadata["labels"]:
            # The simulator places every node at the same UltraServer position, so fake
            # UltraServer nodes would all claim one server and node id.
            sys.exit(f"{option}: {instance_type} is an UltraServer node type: fake DRA nodes "
                     "of it would all claim the same UltraServer position; use another type")
        slug = instance_type.replace(".", "-")
        prefix = f"kwok-dra-{slug}" if dra else f"kwok-{slug}"
        for i in range(int(count)):
            name = f"{prefix}-{i}"
            nodes.append(fake_node(name, instance_type, metadata, dra))
            if dra:
                slices += json.loads(template.replace("FAKE-NODE-NAME", name))["items"]
    return nodes, slices


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary, specs = sys.argv[1], {"--fake-nodes": "", "--dra-nodes": ""}
    for arg in sys.argv[2:]:
        option, _, spec = arg.partition("=")
        if option not in specs:
            sys.exit(__doc__)
        specs[option] = spec
    plugin_nodes, _ = fake_nodes(binary, specs["--fake-nodes"], dra=False)
    dra_nodes, slices = fake_nodes(binary, specs["--dra-nodes"], dra=True)
    items = plugin_nodes + dra_nodes + slices
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)


if __name__ == "__main__":
    main()
