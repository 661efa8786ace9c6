#!/usr/bin/env python3
"""Fake Neuron nodes for the local cluster, driven by kwok (sourced by local-cluster.sh).

Usage: fake-nodes.py NEURON_LS TYPE:COUNT[,TYPE:COUNT...]

Prints a v1 List of Nodes that carry what the Torus node agent would publish on a real node of
that type (labels and the torus.dev/topology annotation, from `neuron-ls --simulate=TYPE
--node-metadata`, i.e. the agent's own code) and the capacity its device plugin would advertise.
They are tainted so that only pods that tolerate kwok's taint land there (the agent's DaemonSet
does not), and annotated for kwok, which keeps them Ready and runs their pods.
"""
import json
import subprocess
import sys


def published(neuron_ls, instance_type):
    out = subprocess.run(
        [neuron_ls, f"--simulate={instance_type}", "--node-metadata"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def fake_node(name, instance_type, metadata):
    topology = json.loads(metadata["annotations"]["torus.dev/topology"])
    cores = topology["devices"] * topology["coresPerDevice"]
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
              "node.kubernetes.io/instance-type": instance_type, "type": "kwok"}
    labels.update(metadata["labels"])
    annotations = {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}
    annotations.update(metadata["annotations"])
    resources = {"cpu": "192", "memory": "2Ti", "pods": "110",
                 "aws.amazon.com/neuron": str(topology["devices"]),
                 "aws.amazon.com/neuroncore": str(cores)}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {"taints": [{"key": "kwok.x-k8s.io/node", "value": "fake",
                             "effect": "NoSchedule"}]},
        "status": {"capacity": resources, "allocatable": resources},
    }


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    neuron_ls, spec = sys.argv[1], sys.argv[2]
    items = []
    for part in filter(None, spec.split(",")):
        instance_type, _, count = part.partition(":")
        if not count.isdigit() or int(count) < 1:
            sys.exit(f"fake-nodes: {part!r}: expected TYPE:COUNT, e.g. trn2.48xlarge:1000")
        try:
            metadata = published(neuron_ls, instance_type)
        except subprocess.CalledProcessError as error:
            sys.exit(f"fake-nodes: {instance_type}: {error.stderr.strip()}")
        slug = instance_type.replace(".", "-")
        items += [fake_node(f"kwok-{slug}-{i}", instance_type, metadata)
                  for i in range(int(count))]
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)


if __name__ == "__main__":
    main()
