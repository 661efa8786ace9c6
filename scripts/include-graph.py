#!/usr/bin/env python3
"""The folder include graph of Torus's source, from its #include lines.

A folder is the directory of a source file ("scheduler-extender/server"); an arrow A -> B means
some file in A includes a file in B. Tests, generated protos and system headers are left out.

  scripts/include-graph.py                 list the arrows and any cycle; exit 1 on a cycle
  scripts/include-graph.py --check         only check: exit 1, naming each cycle and the include
                                           lines that make it, and each contract literal (below)
                                           spelled outside common/contracts/
  scripts/include-graph.py --mermaid       the graph as a Mermaid flowchart, arrows implied by
                                           others left out (docs/architecture.md holds it)
  scripts/include-graph.py --depth 2       folders cut to two path parts ("node-runtime/collectives")
  scripts/include-graph.py --under node-runtime/collectives --mermaid
                                           only the folders inside one room
  scripts/include-graph.py --root DIR      another checkout

The wire has one home: every key and name that crosses a process boundary is spelled in
common/contracts/, whose writers and readers the other folders call. --check fails on a string
literal in product source elsewhere that is one of them, so a new reader cannot spell its own
copy. What is guarded is read from the contracts themselves: every `inline constexpr` string
value in common/contracts/*.h (a literal that is one, or for a prefix ending in "/", "-" or "_",
one that starts with it), less GENERIC and plain words, plus PRIVATE_KEYS. Comments are not
read.

docs/architecture.md holds the drawings; each follows a line <!-- include-graph ARGS --> naming
the arguments that made it, and tests/unit/structure checks it is what the script draws today.
"""
import argparse
import os
import re
import sys
from collections import defaultdict

SOURCE_ROOTS = ("common", "device-plugin", "dra-driver", "node-runtime", "scheduler-extender",
                "ultraserver-operator", "kubectl-neuron")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
CONTRACTS = "common/contracts/"

# Contract values too generic to guard: names that other code spells for reasons of its own (a
# Kubernetes phase or taint effect, a sysfs name, another format's key). Each is still declared
# once in its contract; only the check leaves it alone. A value that is one plain lowercase word
# ("pod", "devices": the agent's metric labels and report keys) is a word before it is a name,
# and is left alone too.
GENERIC = {
    "Pending", "NoSchedule", "NoExecute", "None",  # pod phase, taint effects
    "neuron_device", "neuron_core",  # sysfs names too, not only DRA resourceTypes
    "instance_type",  # a label of many exporters, and the agent's config
    "logical_neuroncore_config",  # AWS neuron-ls's JSON key too, not only a metric label
    "kernelLog",  # the agent's config key too, not only a report key
    "app.kubernetes.io/component", "node-agent",  # Kubernetes' label; the chart's container
}
PLAIN_WORD = re.compile(r"[a-z]+")
# Keys and names that only the contracts' own .cc files spell (the fields of the formats they
# read and write, with no constant of their own), by the header that owns them.
PRIVATE_KEYS = {
    "ultraserver_labels.h": ["server-id-2", "server-id-4", "node-id-2", "node-id-4"],
    "opaque_config.h": ["ultraserverMode", "logicalNeuronCore"],
    "neuron_ultraserver.h": ["workloadRef", "allocatedNodes", "ultraserverIndex",
                             "leaderNodeName"],
    "topology_annotation.h": ["coresPerDevice"],
}
# Held anywhere in a literal (a resource's plural in an API path).
PRIVATE_WITHIN = {"neuron_ultraserver.h": ["neuronultraserver"]}
CONSTANT = re.compile(r'inline\s+constexpr\s[^=;]*=\s*((?:"(?:[^"\\\n]|\\.)*"\s*)+);')


def contract_values(root):
    """{value: header} for each literal guarded as it is, and {prefix: header} for each guarded as
    a literal's start: the inline constexpr string values of common/contracts/*.h, less GENERIC
    and plain words, plus PRIVATE_KEYS."""
    exact = {key: owner for owner, keys in PRIVATE_KEYS.items() for key in keys}
    prefixes = {}
    directory = os.path.join(root, CONTRACTS)
    names = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    for name in (n for n in names if n.endswith(".h")):
        with open(os.path.join(directory, name), encoding="utf-8") as handle:
            text = handle.read()
        for match in CONSTANT.finditer(text):
            value = "".join(literal for _, literal in string_literals(match.group(1)))
            if not value or value in GENERIC or PLAIN_WORD.fullmatch(value):
                continue
            (prefixes if value.endswith(("/", "-", "_")) else exact).setdefault(value, name)
    return exact, prefixes


def source_files(root):
    for top in SOURCE_ROOTS:
        for directory, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if name.endswith((".h", ".cc", ".c")):
                    yield os.path.relpath(os.path.join(directory, name), root)


def folder_of(path, depth):
    parts = os.path.dirname(path).split("/")
    return "/".join(parts[:depth]) if depth else "/".join(parts)


def folder_edges(root, depth=0):
    """{(from_folder, to_folder): [(file, line_number, included)]} for folders that differ."""
    edges = defaultdict(list)
    folders = set()
    for path in source_files(root):
        source = folder_of(path, depth)
        folders.add(source)
        with open(os.path.join(root, path), encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                included = match.group(1)
                if not included.startswith(tuple(top + "/" for top in SOURCE_ROOTS)):
                    continue  # generated protos ("podresources/v1/api.pb.h") and the like
                target = folder_of(included, depth)
                if target != source:
                    edges[(source, target)].append((path, number, included))
    return folders, edges


def string_literals(text):
    """(line_number, contents) of each "..." literal outside comments and character literals."""
    found, i, line, n = [], 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        elif text.startswith("//", i):
            i = text.find("\n", i)
            if i < 0:
                break
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            line += text.count("\n", i, end)
            i = end
            continue
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if c == '"':
                found.append((line, text[i + 1:j]))
            i = j + 1
            continue
        i += 1
    return found


def contract_violations(root):
    """[(file, line, literal, owner)] for contract literals spelled outside common/contracts/."""
    exact, prefixes = contract_values(root)
    found = []
    for path in source_files(root):
        if path.startswith(CONTRACTS):
            continue
        with open(os.path.join(root, path), encoding="utf-8") as handle:
            literals = string_literals(handle.read())
        for number, literal in literals:
            owner = (exact.get(literal)
                     or next((o for key, o in prefixes.items() if literal.startswith(key)), None)
                     or next((o for o, keys in PRIVATE_WITHIN.items()
                              if any(key in literal for key in keys)), None))
            if owner is not None:
                found.append((path, number, literal, owner))
    return found


def cycles(folders, edges):
    """Strongly connected components with more than one folder (Tarjan), each sorted."""
    graph = defaultdict(set)
    for source, target in edges:
        graph[source].add(target)
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(folders | set(graph)):
        if node not in index:
            visit(node)
    return found


def without_implied(edges):
    """The arrows no longer path implies (a transitive reduction; the graph has no cycle)."""
    graph = defaultdict(set)
    for source, target in edges:
        graph[source].add(target)

    def reachable(start, skip_target):
        seen, frontier = set(), [n for n in graph[start] if n != skip_target]
        while frontier:
            node = frontier.pop()
            if node in seen:
                continue
            seen.add(node)
            frontier.extend(graph[node])
        return seen

    return {(s, t): sites for (s, t), sites in edges.items() if t not in reachable(s, t)}


def mermaid(folders, edges):
    """Top-level rooms as subgraphs, folders as nodes, the arrows no other path implies."""
    def node_id(folder):
        return re.sub(r"[^A-Za-z0-9]", "_", folder)

    lines = ["flowchart TD"]
    by_top = defaultdict(list)
    for folder in sorted(folders):
        by_top[folder.split("/")[0]].append(folder)
    for top, members in sorted(by_top.items()):
        lines.append(f"  subgraph {node_id(top)}_room[{top}]")
        for folder in members:
            label = folder[len(top) + 1:] if folder != top else top
            lines.append(f"    {node_id(folder)}[{label}]")
        lines.append("  end")
    for source, target in sorted(without_implied(edges)):
        lines.append(f"  {node_id(source)} --> {node_id(target)}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--check", action="store_true", help="only report cycles")
    parser.add_argument("--mermaid", action="store_true", help="print a Mermaid flowchart")
    parser.add_argument("--depth", type=int, default=0,
                        help="cut folders to this many path parts (0: whole folders)")
    parser.add_argument("--under", default="", help="only folders inside this one")
    args = parser.parse_args()
    folders, edges = folder_edges(args.root, args.depth)
    if args.under:
        inside = lambda folder: folder == args.under or folder.startswith(args.under + "/")
        folders = {f for f in folders if inside(f)}
        edges = {k: v for k, v in edges.items() if inside(k[0]) and inside(k[1])}
    found = cycles(folders, edges)
    if args.mermaid:
        print(mermaid(folders, edges))
    elif not args.check:
        # Every arrow, also those another path implies: this is the list to grep.
        for (source, target), sites in sorted(edges.items()):
            print(f"{source} -> {target}  ({len(sites)} include{'s' if len(sites) > 1 else ''})")
    for component in found:
        print("include cycle between folders: " + ", ".join(component), file=sys.stderr)
        members = set(component)
        for (source, target), sites in sorted(edges.items()):
            if source in members and target in members:
                for path, number, included in sites:
                    print(f"  {path}:{number} includes {included}", file=sys.stderr)
    if args.check and not found:
        print(f"no include cycle among {len(folders)} folders ({len(edges)} arrows)")
    spelled = contract_violations(args.root) if args.check else []
    for path, number, literal, owner in spelled:
        print(f'{path}:{number}: "{literal}" is a contract name: use {CONTRACTS}{owner}',
              file=sys.stderr)
    if args.check and not spelled:
        print(f"every contract literal is spelled in {CONTRACTS} only")
    return 1 if found or spelled else 0


if __name__ == "__main__":
    sys.exit(main())
