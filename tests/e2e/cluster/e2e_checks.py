#!/usr/bin/env python3
"""Runs one of the end-to-end suites' named checks (the checks/ package) from a shell:

  e2e_checks.py metrics-name-holders METRICS ALLOCATIONS [GONE_POD...]
  k get pods -n e2e -o json | e2e_checks.py pod-on-device 3 4

A failed check prints its reason and exits 1; a usage error exits 2. `e2e_checks.py --help`
lists every check and its arguments.
"""
import json
import os
import sys

from checks import CheckFailed, require
from checks import cluster, debug_bundle, dra, exec_credential, files, ids, metrics, placers
from checks import pods, ultraserver


_load = files.read_json
_read = files.read_text


def _bytes(path):
    with open(path, "rb") as handle:
        return handle.read()


def _stdin_json():
    return json.load(sys.stdin)


def _refusals(path, prefix, users):
    with open(path, encoding="utf-8") as lines:
        refused = cluster.audit_refusals(lines, prefix, users)
    require(not refused, "\n".join("403: " + r for r in refused))


def _old_and_new(directory):
    """{pod: (cores, seconds)} of the old-* and the new-* files in `directory`."""
    found = {"old": {}, "new": {}}
    for name in sorted(os.listdir(directory)):
        kind, _, pod = name.partition("-")
        if kind in found:
            cores, seconds = _read(os.path.join(directory, name)).split()
            found[kind][pod] = (cores, float(seconds))
    return found["old"], found["new"]


def _yes(word):
    if word not in ("yes", "no"):
        raise ValueError(f"want yes or no, not {word!r}")
    return word == "yes"


COMMANDS = {
    # name: (arguments, run(args) -> printed text or None)
    # ---- ids ----
    "expand-ids": ("IDS", lambda a: "\n".join(map(str, ids.expand_ids(a[0])))),
    "compress-ids": ("(ids on stdin)",
                     lambda a: ids.compress_ids(ids.expand_ids(sys.stdin.read()))),
    "chip-cores": ("CORES_PER_CHIP CHIP... (/dev names: neuron4)",
                   lambda a: " ".join(map(str, ids.chip_cores(a[1:], int(a[0]))))),
    # ---- one pod ----
    "pod-saw": ("REPORT_FILE RESOURCE COUNT CORES_PER_DEVICE NODE_DIR LNC",
                lambda a: pods.pod_saw(_read(a[0]), a[1], int(a[2]), int(a[3]), a[4], a[5],
                                       os.environ.get("E2E_ANY_DEVICES") == "1")),
    "device-rules": ("(a neuron_device_probe report on stdin)",
                     lambda a: pods.device_rules_report(sys.stdin.read())),
    "cores-held-by": ("POD (allocations on stdin)",
                      lambda a: "\n".join(map(str, pods.cores_held_by(_stdin_json(), a[0])))),
    "pod-on-device": ("DEVICE CORES_PER_DEVICE (pods on stdin)",
                      lambda a: pods.pod_on_device(_stdin_json(), int(a[0]), int(a[1])) or ""),
    "successors-after-old": ("DIR DELETED_AT GRACE (DIR/old-POD, DIR/new-POD: 'CORES SECONDS')",
                             lambda a: pods.successors_after_old(
                                 *_old_and_new(a[0]), float(a[1]), float(a[2]))),
    "victims-freed-exactly": ("NEW_IDS PODS_BEFORE_FILE PODS_NOW_FILE CORES_PER_DEVICE",
                              lambda a: pods.victims_freed_exactly(a[0], _load(a[1]), _load(a[2]),
                                                                   int(a[3]))),
    "extender-state-matches-pods": ("STATE_FILE PODS_FILE",
                                    lambda a: pods.extender_state_matches_pods(_load(a[0]),
                                                                               _load(a[1]))),
    "neuron-pods-show": ("NAMESPACE/NAME IDS (kubectl neuron pods --json on stdin)",
                         lambda a: pods.neuron_pods_show(_stdin_json(), a[0], a[1])),
    "top-names": ("POD=KIND:COUNT... (kubectl neuron top --json on stdin)",
                  lambda a: pods.top_names(_stdin_json(), {
                      pod: (spec.split(":")[0], int(spec.split(":")[1]))
                      for pod, _, spec in (arg.partition("=") for arg in a)})),
    # ---- kubectl neuron debug's archive ----
    "debug-bundle-complete": ("UNPACKED_DIR DEVICE SERIAL",
                              lambda a: debug_bundle.bundle_complete(a[0], int(a[1]), a[2])),
    "debug-bundle-without-secrets": ("ARCHIVE TOKEN KUBECONFIG [EXEC_PLUGIN_TOKEN...]",
                                     lambda a: debug_bundle.bundle_without_secrets(
                                         _bytes(a[0]), a[1], _read(a[2]), a[3:])),
    # ---- an exec credential plugin's runs ----
    "exec-infos-as-kubectl-sends": ("SERVER (KUBERNETES_EXEC_INFO of each run, a line each, on stdin)",
                                    lambda a: exec_credential.exec_infos_as_kubectl_sends(
                                        sys.stdin.read(), a[0])),
    # ---- the agent's /metrics ----
    "metrics-name-holders": ("METRICS_FILE ALLOCATIONS_FILE [GONE_POD...]",
                             lambda a: metrics.metrics_name_holders(_read(a[0]), _load(a[1]),
                                                                    a[2:])),
    "claim-metrics-name-the-pod": (
        "METRICS_FILE CLAIM NODE POD CORES_PER_CHIP (/allocations on stdin)",
        lambda a: metrics.claim_metrics_name_the_pod(
            _read(a[0]), dra.claim_cores(_stdin_json()), a[1], a[2], a[3], int(a[4]))),
    # ---- the API server and the nodes ----
    "audit-refusals": ("AUDIT_LOG USER_PREFIX [USER...]", lambda a: _refusals(a[0], a[1], a[2:])),
    "node-forgotten": ("(the Node on stdin)", lambda a: cluster.node_forgotten(_stdin_json())),
    "server-version-is": ("PREFIX (kubectl version -o json on stdin)",
                          lambda a: cluster.server_version_is(_stdin_json(), a[0])),
    "ultraserver-places": ("NODE... (five: four of one UltraServer, then one outside; nodes on stdin)",
                           lambda a: cluster.ultraserver_places(_stdin_json(), a)),
    "top-devices-per-node": ("DEVICES NODE... (kubectl neuron top --json on stdin)",
                             lambda a: cluster.top_devices_per_node(_stdin_json(), a[1:],
                                                                    int(a[0]))),
    "health-unknown-is": ("CHIP... (kubectl neuron node --json on stdin)",
                          lambda a: cluster.health_unknown_is(_stdin_json(), [int(c) for c in a])),
    "finished-within": ("FINISHED_AT SINCE LIMIT",
                        lambda a: cluster.finished_within(a[0], float(a[1]), float(a[2]))),
    "at-most-seconds-apart": ("START END LIMIT",
                              lambda a: cluster.at_most_seconds_apart(float(a[0]), float(a[1]),
                                                                      float(a[2]))),
    # ---- DRA ----
    "pool-devices": ("NODE (resourceslices on stdin; prints the pool as JSON)",
                     lambda a: json.dumps(dra.pool_devices(_stdin_json(), a[0]))),
    "pool-counts": ("CHIPS CORES (pool devices on stdin)",
                    lambda a: dra.pool_counts(_stdin_json(), int(a[0]), int(a[1]))),
    "in-pool": ("DEVICE yes|no (pool devices on stdin)",
                lambda a: dra.in_pool(_stdin_json(), a[0], _yes(a[1]))),
    "whole-chips-only": ("CHIPS (pool devices on stdin)",
                         lambda a: dra.whole_chips_only(_stdin_json(), int(a[0]))),
    "node-device-without-counters": ("CHIPS (pool devices on stdin)",
                                     lambda a: dra.node_device_without_counters(_stdin_json(),
                                                                                int(a[0]))),
    "trn2-chip5-attributes": ("(pool devices on stdin)",
                              lambda a: dra.trn2_chip5_attributes(_stdin_json())),
    "slice-device-index": ("NODE DEVICE (resourceslices on stdin)",
                           lambda a: dra.slice_device_index(_stdin_json(), a[0], a[1])),
    "slice-device-count": ("(resourceslices on stdin)",
                           lambda a: dra.slice_device_count(_stdin_json())),
    "device-attribute-is": ("DEVICE ATTRIBUTE TYPE VALUE (pool devices on stdin)",
                            lambda a: dra.device_attribute_is(_stdin_json(), *a[:4])),
    "device-taints-are": ("DEVICE KEY=VALUE:EFFECT,... (pool devices on stdin)",
                          lambda a: dra.device_taints_are(_stdin_json(), a[0], a[1])),
    "device-taints-listed": ("DEVICE (resourceslices on stdin; prints key=value:effect ...)",
                             lambda a: dra.device_taints_listed(_stdin_json(), a[0])),
    "claim-results-of": ("POD (resourceclaims on stdin; prints REQUEST DRIVER DEVICE lines)",
                         lambda a: dra.claim_results_of(_stdin_json(), a[0])),
    "claim-devices-of": ("POD POOL (resourceclaims on stdin)",
                         lambda a: dra.claim_devices_of(_stdin_json(), a[0], a[1])),
    "ultraserver-environment": ("REPORT_FILE SIZE (the pod's Node on stdin)",
                                lambda a: dra.ultraserver_environment(_read(a[0]), _stdin_json(),
                                                                      int(a[1]))),
    "claim-cores": ("(/allocations on stdin)",
                    lambda a: " ".join(map(str, dra.claim_cores(_stdin_json())))),
    "prepared-claims-are": ("COUNT [CHIPS_EACH] (/allocations on stdin)",
                            lambda a: dra.prepared_claims_are(
                                _stdin_json(), int(a[0]), int(a[1]) if len(a) > 1 else None)),
    "checkpoint-idle": ("CHECKPOINT_FILE",
                        lambda a: dra.checkpoint_idle(json.loads(_read(a[0])))),
    "admin-claim-owns-nothing": ("NAMESPACE/CLAIM DEVICES (/allocations on stdin)",
                                 lambda a: dra.admin_claim_owns_nothing(_stdin_json(), a[0],
                                                                        int(a[1]))),
    "chips-disjoint-from-first-claim": ("COUNT DEVICE_NODES (/allocations on stdin)",
                                        lambda a: dra.chips_disjoint_from_first_claim(
                                            _stdin_json(), a[1], int(a[0]))),
    # ---- the UltraServer operator ----
    "ultraserver-built": ("NODE... (by node id; neuronultraservers on stdin)",
                          lambda a: ultraserver.ultraserver_built(_stdin_json(), a)),
    "allocation-leader": ("(neuronultraservers on stdin)",
                          lambda a: ultraserver.allocation_leader(_stdin_json())),
    "workload-tagged-nodes": ("NAMESPACE/WORKLOAD (resourceslices on stdin)",
                              lambda a: ultraserver.workload_tagged_nodes(_stdin_json(), a[0])),
    "every-device-reserved": ("(resourceslices on stdin)",
                              lambda a: ultraserver.every_device_reserved(_stdin_json())),
    "no-claim-allocated-for": ("NAMESPACE/WORKLOAD (resourceclaims on stdin)",
                               lambda a: ultraserver.no_claim_allocated_for(_stdin_json(), a[0])),
    "pods-on-nodes": ("NODE... (pods on stdin)",
                      lambda a: ultraserver.pods_on_nodes(_stdin_json(), a)),
    "pod-on-node": ("NODE (pods on stdin)", lambda a: ultraserver.pod_on_node(_stdin_json(), a[0])),
    "running-pods": ("(pods on stdin; prints uid@node of each Running one)",
                     lambda a: ultraserver.running_pods(_stdin_json())),
    # ---- the ecosystem's placers (Kueue, LeaderWorkerSet) ----
    "running-one-on-each": ("NODE... (pods on stdin)",
                            lambda a: placers.running_one_on_each(_stdin_json(), a)),
    "running-within": ("COUNT NODE... (pods on stdin)",
                       lambda a: placers.running_within(_stdin_json(), a[1:], int(a[0]))),
    "kueue-waiting-reason": ("JOB WANTED (workloads on stdin; prints the message)",
                             lambda a: placers.kueue_waiting_reason(_stdin_json(), a[0], a[1])),
    "unschedulable-by": ("POD_PREFIX WANTED (pods on stdin)",
                         lambda a: placers.unschedulable_by(_stdin_json(), a[0], a[1])),
}


def main(argv):
    if len(argv) < 2 or argv[1] not in COMMANDS:
        asked = len(argv) > 1 and argv[1] in ("-h", "--help")
        out = sys.stdout if asked else sys.stderr
        print(__doc__.split("\n\n")[0], file=out)
        for name, (args, _) in sorted(COMMANDS.items()):
            print(f"  e2e_checks.py {name} {args}", file=out)
        return 0 if asked else 2
    try:
        printed = COMMANDS[argv[1]][1](argv[2:])
    except CheckFailed as failure:
        print(failure, file=sys.stderr)
        return 1
    except (IndexError, ValueError, KeyError, OSError, json.JSONDecodeError) as error:
        print(f"e2e_checks.py {argv[1]}: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    if printed:
        print(printed)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
