"""Id sets as the extender, kubelet and containers write them ("0-3,8")."""


def expand_ids(text):
    """"0-3,8" -> [0, 1, 2, 3, 8] (the order given)."""
    ids = []
    for part in filter(None, text.strip().split(",")):
        low, _, high = part.partition("-")
        ids.extend(range(int(low), int(high or low) + 1))
    return ids


def compress_ids(ids):
    """[0, 1, 2, 3, 8] -> "0-3,8", as the extender and kubectl-neuron print a set."""
    runs = []
    for i in sorted(set(ids)):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs)


def chip_cores(chips, cores_per_chip):
    """The cores of chips named /dev/neuronN ("neuron4"), sorted: N * cores_per_chip onwards."""
    return sorted(int(chip[len("neuron"):]) * cores_per_chip + k
                  for chip in chips for k in range(cores_per_chip))
