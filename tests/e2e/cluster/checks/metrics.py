"""The agent's /metrics: which pod and which DRA claim each core's series name."""
import re

from checks import require


def labels_of(line):
    return dict(re.findall(r'(\w+)="([^"]*)"', line))


def metrics_name_holders(metrics, allocations, gone=()):
    """Every pod kubelet lists in /allocations has exactly its cores in torus_allocation_info and
    its name on those cores' series; the `gone` pods appear nowhere. Returns a summary."""
    info, tensors = {}, {}
    for line in metrics.splitlines():
        if line.startswith("torus_allocation_info{"):
            labels = labels_of(line)
            info.setdefault(labels["pod"], set()).add(int(labels["neuroncore"]))
        elif line.startswith("neuroncore_memory_usage_tensors{"):
            labels = labels_of(line)
            tensors[int(labels["neuroncore"])] = labels["pod"]
    pods = {}
    for holder in allocations["holders"]:  # one entry per NUMA node of a container
        pods.setdefault(holder["pod"].split("/", 1)[1], set()).update(holder["cores"])
    require(len(pods) >= 2, f"want several pods, kubelet lists {sorted(pods)}")
    for pod, cores in pods.items():
        require(info.get(pod) == cores,
                f"{pod}: kubelet lists cores {sorted(cores)}, metrics {sorted(info.get(pod, []))}")
        wrong = [c for c in cores if tensors.get(c) != pod]
        require(not wrong, f"{pod}: cores {wrong} are labelled {[tensors.get(c) for c in wrong]}")
    for pod in gone:
        require(f'pod="{pod}"' not in metrics, f"{pod} is deleted but still named in /metrics")
    return f"{len(pods)} pods named on their cores"


def claim_metrics_name_the_pod(metrics, cores, claim, node, pod, cores_per_chip):
    """/metrics names `pod` on exactly the claim's cores (torus_allocation_info), and every
    per-core family carries NVIDIA's dra_* labels: the claim and each core's own chip on the
    claim's cores, no claim on the others."""
    named, per_core = {}, {}
    for line in metrics.splitlines():
        labels = labels_of(line)
        if line.startswith("torus_allocation_info{"):
            require(labels["resource"] == "neuron.aws.com", f"allocation of {labels}")
            named[int(labels["neuroncore"])] = labels["pod"]
        if line.startswith("neuroncore_memory_usage_tensors{"):
            per_core[int(labels["neuroncore"])] = labels
    require(set(named) == set(cores) and set(named.values()) == {pod},
            f"claim cores {sorted(cores)}, /metrics names {named}")
    for core in cores:
        got = {k: v for k, v in per_core.get(core, {}).items() if k.startswith("dra_")}
        want = {"dra_claim_name": claim, "dra_claim_namespace": "e2e",
                "dra_device_name": f"neurondevice{core // cores_per_chip}",
                "dra_pool_name": node, "dra_driver_name": "neuron.aws.com"}
        require(got == want, f"core {core}: {got}, want {want}")
    free = [core for core in per_core if core not in cores]
    require(free and all(per_core[c]["dra_claim_name"] == "" for c in free),
            "a free core names a claim")
    return f"claim cores {sorted(cores)} named {sorted(set(named.values()))}"
