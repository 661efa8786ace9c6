"""scheduler_perf templates from Torus's own output, for dra_scheduler_perf.sh.

  templates.py slices PREFIX DIR < SLICES       the driver's slices of a trn2.48xlarge named NODE
                                                (neuron-ls --resource-slices=NODE) as
                                                DIR/PREFIX-<k>.yaml, one per slice; prints how many
  templates.py device-classes DIR < MANIFESTS   the chart's chip and core DeviceClasses (helm
                                                template output) as DIR/torus-class-chip.yaml and
                                                DIR/torus-class-core.yaml

Each slice's node becomes upstream's scheduler-perf-dra-<index>, and every NeuronLink group id gets
the index in front, so no two nodes share one (as node names make them differ on a real cluster).
scheduler_perf reads JSON as YAML and fills {{.Index}} per node.
"""
import json
import re
import sys

CLASS_FILES = (("chip.neuron.aws.com", "torus-class-chip"), ("core.neuron.aws.com", "torus-class-core"))


def slice_template(item):
    """One slice as a template: the node name and group ids made per node."""
    text = json.dumps(item, indent=1)
    text = text.replace("\"NODE", "\"scheduler-perf-dra-{{.Index}}")
    return re.sub(r"(\"resource\.aws\.com/devicegroup\d+_id\": \{\s*\"string\": \")",
                  r"\1{{.Index}}-", text)


def write_slices(prefix, out, slice_list):
    slices = slice_list["items"]
    for k, item in enumerate(slices):
        with open(f"{out}/{prefix}-{k}.yaml", "w") as file:
            file.write(slice_template(item) + "\n")
    return len(slices)


def write_device_classes(out, manifests):
    for document in manifests.split("\n---"):
        for name, file in CLASS_FILES:
            if f"name: {name}\n" in document:
                with open(f"{out}/{file}.yaml", "w") as f:
                    f.write(document.strip() + "\n")


def main(argv):
    if len(argv) == 3 and argv[0] == "slices":
        print(write_slices(argv[1], argv[2], json.load(sys.stdin)))
    elif len(argv) == 2 and argv[0] == "device-classes":
        write_device_classes(argv[1], sys.stdin.read())
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
