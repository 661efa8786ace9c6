"""NeuronLink connectivity of a device set, for the real-cluster test and benchmark."""


def connected(devices, neighbours_of):
    """Whether `devices` form one connected group; neighbours_of(d) gives d's linked devices."""
    members = set(devices)
    if not members:
        return False
    start = next(iter(members))
    reached, frontier = {start}, [start]
    while frontier:
        for neighbour in set(neighbours_of(frontier.pop())) & members:
            if neighbour not in reached:
                reached.add(neighbour)
                frontier.append(neighbour)
    return reached == members
