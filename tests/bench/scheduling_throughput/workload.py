"""What scheduling_throughput.sh creates on the cluster: the pods it measures and the ResourceSlices
of the fake trn2 nodes for its DRA runs, each printed as one v1 List for `kubectl create -f -`.

  workload.py pods NAMESPACE SCHEDULER COUNT KIND   COUNT pods that only fit fake nodes. KIND
                                                    mixed: sizes of 1-16 cores and 1 or 4 devices;
                                                    neuron4: aws.amazon.com/neuron 4 on trn2; dra4:
                                                    a ResourceClaim from the template
                                                    four-connected-chips on trn2; neuron16: a whole
                                                    trn2 (aws.amazon.com/neuron 16); gang16: the
                                                    same in gangs of 4 (torus.dev/gang job-NNNN)
  workload.py slices TEMPLATE < NODE-NAMES          TEMPLATE (neuron-ls --resource-slices=
                                                    FAKE-NODE-NAME) once per node name on stdin
"""
import json
import sys

# Pods per gang in the gang16 run: a job of four whole nodes.
GANG_SIZE = 4

# The mixed run's sizes, taken in turn: cores of one device up to a whole trn2 device group, and
# whole devices.
MIXED_SIZES = [("neuroncore", 1), ("neuroncore", 2), ("neuroncore", 4), ("neuroncore", 8),
               ("neuroncore", 16), ("neuron", 1), ("neuron", 4)]


def pods(namespace, scheduler, count, kind):
    """A List of `count` pods named p00000... for `scheduler`, tolerating kwok's taint."""
    if kind == "gang16" and count % GANG_SIZE:
        sys.exit(f"workload.py: {count} pods do not make gangs of {GANG_SIZE}")
    items = []
    for i in range(count):
        if kind == "mixed":
            resource, n = MIXED_SIZES[i % len(MIXED_SIZES)]
        else:
            resource, n = ("neuron", 16) if kind in ("neuron16", "gang16") else ("neuron", 4)
        selector = {"type": "kwok"}
        if kind != "mixed":
            selector["node.kubernetes.io/instance-type"] = "trn2.48xlarge"
        container = {"name": "app", "image": "fake"}
        spec = {
            "schedulerName": scheduler,
            "nodeSelector": selector,
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists",
                             "effect": "NoSchedule"}],
            "containers": [container],
        }
        if kind == "dra4":
            container["resources"] = {"claims": [{"name": "chips"}]}
            spec["resourceClaims"] = [{"name": "chips",
                                       "resourceClaimTemplateName": "four-connected-chips"}]
        else:
            container["resources"] = {"limits": {f"aws.amazon.com/{resource}": str(n)}}
        metadata = {"name": f"p{i:05d}", "namespace": namespace}
        if kind == "gang16":
            metadata["labels"] = {"torus.dev/gang": f"job-{i // GANG_SIZE:04d}",
                                  "torus.dev/gang-size": str(GANG_SIZE)}
        items.append({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
    return {"apiVersion": "v1", "kind": "List", "items": items}


def slices(template, node_names):
    """The driver's slices of `template` for each node, FAKE-NODE-NAME replaced by its name."""
    items = []
    for name in node_names:
        items += json.loads(template.replace("FAKE-NODE-NAME", name))["items"]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def main(argv):
    if len(argv) == 5 and argv[0] == "pods":
        print(json.dumps(pods(argv[1], argv[2], int(argv[3]), argv[4])))
    elif len(argv) == 2 and argv[0] == "slices":
        print(json.dumps(slices(argv[1], sys.stdin.read().split())))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
