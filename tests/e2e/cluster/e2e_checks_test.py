"""The end-to-end suites' named checks (e2e_checks.py; not inspect.py, which would shadow the
standard library's module for every script in this folder), each shown to pass on what it wants
and to fail, naming why, on what it does not: a suite's check cannot pass by accident."""
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import e2e_checks as checks  # noqa: E402


def pod(name, ids=None, phase="Running", resource=None, namespace="e2e", deleting=False):
    annotations = {}
    if ids is not None:
        annotations["AWS_NEURON_IDS"] = ids
    if resource:
        annotations["NEURON_RESOURCE_TYPE"] = resource
    metadata = {"name": name, "namespace": namespace, "annotations": annotations}
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-28T00:00:00Z"
    return {"metadata": metadata, "status": {"phase": phase}}


class IdsTest(unittest.TestCase):
    def test_ids_expand_and_compress_both_ways(self):
        self.assertEqual(checks.expand_ids("0-3,8"), [0, 1, 2, 3, 8])
        self.assertEqual(checks.expand_ids(""), [])
        self.assertEqual(checks.compress_ids([8, 3, 2, 1, 0, 10, 11]), "0-3,8,10-11")


class PodSawTest(unittest.TestCase):
    def setUp(self):
        self.node = tempfile.TemporaryDirectory()
        # A ring of four devices: 0-1-2-3-0.
        for device in range(4):
            path = os.path.join(self.node.name, "sys/class/neuron_device", f"neuron{device}")
            os.makedirs(path)
            with open(os.path.join(path, "connected_devices"), "w", encoding="utf-8") as handle:
                handle.write(f"{(device + 1) % 4}, {(device + 3) % 4}")

    def tearDown(self):
        self.node.cleanup()

    def test_a_container_with_what_it_asked_passes(self):
        checks.pod_saw("CORES=4-11\nDEVICES=neuron1 neuron2\nLNC=2", "neuroncore", 8, 4,
                       self.node.name, "2")
        checks.pod_saw("CORES=0-3\nDEVICES=neuron0\nLNC=2", "neuron", 1, 4, self.node.name, "2")

    def test_wrong_counts_devices_lnc_or_links_fail_by_name(self):
        cases = [
            ("CORES=4-10\nDEVICES=neuron1 neuron2\nLNC=2", "neuroncore", 8, "want 8"),
            ("CORES=4-11\nDEVICES=neuron1\nLNC=2", "neuroncore", 8, "devices [1] for cores"),
            ("CORES=4-11\nDEVICES=neuron1 neuron2\nLNC=1", "neuroncore", 8, "want '2'"),
        ]
        for report, resource, count, reason in cases:
            with self.assertRaises(checks.CheckFailed) as failed:
                checks.pod_saw(report, resource, count, 4, self.node.name, "2")
            self.assertIn(reason, str(failed.exception))
        with self.assertRaises(checks.CheckFailed) as failed:  # 0 and 2 are not linked
            checks.pod_saw("CORES=0-3,8-11\nDEVICES=neuron0 neuron2\nLNC=2", "neuron", 2, 4,
                           self.node.name, "2")
        self.assertIn("not NeuronLink-connected", str(failed.exception))
        checks.pod_saw("CORES=0-3,8-11\nDEVICES=neuron0 neuron2\nLNC=2", "neuron", 2, 4,
                       self.node.name, "2", any_devices=True)


class AgentTest(unittest.TestCase):
    allocations = {"holders": [
        {"pod": "e2e/a", "container": "app", "cores": [0, 1]},
        {"pod": "e2e/a", "container": "app", "cores": [2]},
        {"pod": "e2e/b", "container": "app", "cores": [4]},
    ]}
    metrics = "\n".join([
        'torus_allocation_info{pod="a",neuroncore="0"} 1',
        'torus_allocation_info{pod="a",neuroncore="1"} 1',
        'torus_allocation_info{pod="a",neuroncore="2"} 1',
        'torus_allocation_info{pod="b",neuroncore="4"} 1',
        'neuroncore_memory_usage_tensors{pod="a",neuroncore="0"} 0',
        'neuroncore_memory_usage_tensors{pod="a",neuroncore="1"} 0',
        'neuroncore_memory_usage_tensors{pod="a",neuroncore="2"} 0',
        'neuroncore_memory_usage_tensors{pod="b",neuroncore="4"} 0',
    ])

    def test_metrics_that_name_each_holder_on_its_cores_pass(self):
        self.assertEqual(checks.metrics_name_holders(self.metrics, self.allocations, ["c"]),
                         "2 pods named on their cores")
        self.assertEqual(checks.cores_held_by(self.allocations, "e2e/a"), [0, 1, 2])

    def test_a_core_labelled_for_another_pod_or_a_deleted_pod_still_named_fail(self):
        wrong = self.metrics.replace('tensors{pod="b",neuroncore="4"}',
                                     'tensors{pod="a",neuroncore="4"}')
        with self.assertRaises(checks.CheckFailed) as failed:
            checks.metrics_name_holders(wrong, self.allocations)
        self.assertIn("b: cores [4] are labelled ['a']", str(failed.exception))
        with self.assertRaises(checks.CheckFailed) as failed:
            checks.metrics_name_holders(self.metrics, self.allocations, ["b"])
        self.assertIn("b is deleted but still named", str(failed.exception))

    def test_the_pod_on_a_device_is_the_running_one_whose_ids_start_there(self):
        pods = {"items": [pod("old", "4-7", deleting=True), pod("done", "4-7", phase="Succeeded"),
                          pod("here", "4-7"), pod("other", "8-11")]}
        self.assertEqual(checks.pod_on_device(pods, 1, 4), "here")
        self.assertIsNone(checks.pod_on_device(pods, 3, 4))


class PreemptionTest(unittest.TestCase):
    before = {"items": [pod("a", "0-3"), pod("b", "4-7"), pod("c", "1", resource="aws.amazon.com/neuron")]}

    def test_victims_holding_exactly_the_new_pods_cores_pass(self):
        now = {"items": [pod("a", "0-3"), pod("c", "1", resource="aws.amazon.com/neuron"),
                         pod("b", "4-7", deleting=True)]}
        checks.victims_freed_exactly("4-7", self.before, now, 4)

    def test_no_victim_or_a_victim_elsewhere_fails(self):
        with self.assertRaises(checks.CheckFailed) as failed:
            checks.victims_freed_exactly("4-7", self.before, self.before, 4)
        self.assertIn("no pod was preempted", str(failed.exception))
        now = {"items": [pod("a", "0-3")]}  # b and c (device 1: cores 4-7) gone, c also holds 4-7
        checks.victims_freed_exactly("4-7", self.before, now, 4)
        now = {"items": [pod("b", "4-7"), pod("c", "1", resource="aws.amazon.com/neuron")]}
        with self.assertRaises(checks.CheckFailed) as failed:
            checks.victims_freed_exactly("4-7", self.before, now, 4)
        self.assertIn("differ from the new pod's", str(failed.exception))


class ExtenderAndCliTest(unittest.TestCase):
    def test_extender_state_equals_the_live_pods_ids(self):
        pods = {"items": [pod("a", "0,1,2,3"), pod("b", "8", phase="Succeeded")]}
        checks.extender_state_matches_pods({"allocations": [{"pod": "e2e/a", "ids": "0-3"}]}, pods)
        with self.assertRaises(checks.CheckFailed):
            checks.extender_state_matches_pods(
                {"allocations": [{"pod": "e2e/a", "ids": "0-3"}, {"pod": "e2e/b", "ids": "8"}]},
                pods)

    def test_kubectl_neuron_pods_and_top_show_what_is_held(self):
        shown = [{"namespace": "e2e", "name": "shown", "ids": [4, 5], "phase": "Running",
                  "allocated": "true"}]
        checks.neuron_pods_show(shown, "e2e/shown", "4-5")
        with self.assertRaises(checks.CheckFailed):
            checks.neuron_pods_show(shown, "e2e/shown", "4-6")
        top = {"nodes": [{"health": "ok", "devices": [{}] * 16,
                          "pods": [{"pod": "shown", "cores": [0] * 8, "devices": []}]}]}
        checks.top_names(top, {"shown": ("cores", 8)})
        with self.assertRaises(checks.CheckFailed):
            checks.top_names(top, {"shown": ("cores", 8), "shown-too": ("devices", 1)})


class ApiAndNodeTest(unittest.TestCase):
    def test_only_the_charts_identities_403s_are_refusals(self):
        lines = [json.dumps(e) for e in [
            {"user": {"username": "system:serviceaccount:kube-system:torus-node-agent"},
             "responseStatus": {"code": 403}, "verb": "patch", "requestURI": "/api/v1/nodes/x"},
            {"user": {"username": "system:serviceaccount:kube-system:torus-node-agent"},
             "responseStatus": {"code": 200}, "verb": "get", "requestURI": "/api/v1/nodes/x"},
            {"user": {"username": "system:serviceaccount:e2e:other"},
             "responseStatus": {"code": 403}, "verb": "get", "requestURI": "/api/v1/pods"},
        ]]
        self.assertEqual(checks.audit_refusals(lines, "system:serviceaccount:kube-system:torus"),
                         ["system:serviceaccount:kube-system:torus-node-agent patch /api/v1/nodes/x"])

    def test_a_node_with_a_torus_label_or_condition_is_not_forgotten(self):
        clean = {"metadata": {"labels": {"kubernetes.io/os": "linux"}}, "status": {"conditions": []}}
        checks.node_forgotten(clean)
        for left in ({"metadata": {"labels": {"torus.dev/lnc": "2"}}, "status": {}},
                     {"metadata": {}, "status": {"conditions": [{"type": "NeuronHealthy"}]}}):
            with self.assertRaises(checks.CheckFailed):
                checks.node_forgotten(left)

    def test_seconds_apart(self):
        self.assertEqual(checks.at_most_seconds_apart(10.0, 11.5, 2), "1.50 s")
        with self.assertRaises(checks.CheckFailed):
            checks.at_most_seconds_apart(10.0, 12.5, 2)


class CommandLineTest(unittest.TestCase):
    def run_cli(self, *args, stdin=""):
        return subprocess.run([sys.executable, os.path.join(HERE, "e2e_checks.py"), *args],
                              input=stdin, capture_output=True, text=True, timeout=30, check=False)

    def test_four_nodes_of_one_ultraserver_and_one_outside(self):
        def node(name, us=None, position=None):
            labels = {"kubernetes.io/hostname": name}
            if us:
                labels[checks.ULTRASERVER_LABEL + "server-id-4"] = us
                labels[checks.ULTRASERVER_LABEL + "node-id-4"] = position
            return {"metadata": {"name": name, "labels": labels}}
        names = ["a", "b", "c", "d", "e"]
        good = [node(n, "us0", str(i)) for i, n in enumerate(names[:4])] + [node("e")]
        checks.ultraserver_places({"items": good}, names)
        split = [node(n, "us0" if i < 2 else "us1", str(i)) for i, n in enumerate(names[:4])]
        with self.assertRaisesRegex(checks.CheckFailed, "different UltraServers"):
            checks.ultraserver_places({"items": split + [node("e")]}, names)
        swapped = [node(n, "us0", str(3 - i)) for i, n in enumerate(names[:4])]
        with self.assertRaisesRegex(checks.CheckFailed, "positions"):
            checks.ultraserver_places({"items": swapped + [node("e")]}, names)
        with self.assertRaisesRegex(checks.CheckFailed, "e claims an UltraServer"):
            checks.ultraserver_places({"items": good[:4] + [node("e", "us0", "4")]}, names)

    def test_top_shows_every_nodes_devices(self):
        top = {"nodes": [{"node": "a", "devices": [{}] * 16}, {"node": "b", "devices": [{}] * 15}]}
        checks.top_devices_per_node(top, ["a"], 16)
        with self.assertRaisesRegex(checks.CheckFailed, "'b': 15"):
            checks.top_devices_per_node(top, ["a", "b"], 16)
        with self.assertRaisesRegex(checks.CheckFailed, "'c': None"):
            checks.top_devices_per_node(top, ["c"], 16)

    def test_finished_within(self):
        since = 1_800_000_000.4  # 2027-01-15T08:00:00.4Z
        self.assertEqual(checks.finished_within("2027-01-15T08:00:01Z", since, 2),
                         "finished 1 s (whole seconds) after")
        self.assertEqual(checks.finished_within("2027-01-15T08:00:00Z", since, 2),
                         "finished within the same second (finishedAt has whole seconds)")
        with self.assertRaisesRegex(checks.CheckFailed, "not within 2"):
            checks.finished_within("2027-01-15T08:00:03Z", since, 2)

    # ---- DRA ----

    def pool(self):
        devices = {f"neurondevice{i}": {"attributes": {}} for i in range(16)}
        devices.update({f"neuroncore{i}": {"attributes": {}} for i in range(64)})
        devices["neurondevice5"] = {
            "attributes": {"deviceId": {"int": 5}, "resourceType": {"string": "neuron_device"},
                           "instanceType": {"string": "trn2.48xlarge"}, "topology_x": {"int": 1},
                           "topology8_id": {"int": 0}, "neuronDriverVersion": {"version": "2.24.7"},
                           "resource.aws.com/devicegroup4_id": {"int": 1}},
            "capacity": {"memory": {"value": "96Gi"}},
            "consumesCounters": [{"counters": {"device5": {"value": "4"}}}],
            "taints": [{"key": "neuron.aws.com/unhealthy", "value": "UncorrectedECC",
                        "effect": "NoSchedule"}]}
        return devices

    def test_a_pool_of_16_chips_and_64_cores_with_awss_attributes(self):
        devices = self.pool()
        checks.pool_counts(devices, 16, 64)
        with self.assertRaisesRegex(checks.CheckFailed, "16 chips, 64 cores"):
            checks.pool_counts(devices, 16, 128)
        checks.trn2_chip5_attributes(devices)
        checks.device_attribute_is(devices, "neurondevice5", "instanceType", "string",
                                   "trn2.48xlarge")
        devices["neurondevice5"]["attributes"]["instanceType"] = {"string": "edited-by-hand"}
        with self.assertRaisesRegex(checks.CheckFailed, "instanceType"):
            checks.trn2_chip5_attributes(devices)
        with self.assertRaisesRegex(checks.CheckFailed, "edited-by-hand"):
            checks.device_attribute_is(devices, "neurondevice5", "instanceType", "string",
                                       "trn2.48xlarge")

    def test_taints_read_as_key_value_effect(self):
        devices = self.pool()
        checks.device_taints_are(devices, "neurondevice5",
                                 "neuron.aws.com/unhealthy=UncorrectedECC:NoSchedule")
        checks.device_taints_are(devices, "neurondevice8", "")
        with self.assertRaisesRegex(checks.CheckFailed, "want ''"):
            checks.device_taints_are(devices, "neurondevice5", "")

    def test_slices_index_count_and_claims(self):
        slices = {"items": [
            {"metadata": {"name": "other"}, "spec": {"nodeName": "n2", "driver": "neuron.aws.com",
                                                     "devices": [{"name": "neurondevice5"}]}},
            {"metadata": {"name": "mine"}, "spec": {"nodeName": "n1", "driver": "neuron.aws.com",
                                                    "devices": [{"name": "neurondevice4"},
                                                                {"name": "neurondevice5"}]}}]}
        self.assertEqual(checks.slice_device_index(slices, "n1", "neurondevice5"), "mine 1")
        with self.assertRaisesRegex(checks.CheckFailed, "no slice of n3"):
            checks.slice_device_index(slices, "n3", "neurondevice5")
        self.assertEqual(checks.slice_device_count(slices), "3")
        claims = {"items": [{"metadata": {"ownerReferences": [{"name": "p"}]},
                             "status": {"allocation": {"devices": {"results": [
                                 {"pool": "n1", "device": "neurondevice1"},
                                 {"pool": "n1", "device": "neurondevice0"},
                                 {"pool": "n2", "device": "neurondevice3"}]}}}},
                            {"metadata": {}, "status": {}}]}
        self.assertEqual(checks.claim_devices_of(claims, "p", "n1"), "neurondevice0 neurondevice1")
        self.assertEqual(checks.claim_devices_of(claims, "q", "n1"), "")

    def test_claim_cores_metrics_and_disjoint_chips(self):
        allocations = {"claims": [{"cores": [8, 9, 10, 11], "devices": [2]}]}
        self.assertEqual(checks.claim_cores(allocations), [8, 9, 10, 11])

        def metrics(pod_on_core_9="held", claim_on_free=""):
            lines = []
            for core in range(12):
                mine = core >= 8
                if mine:
                    pod = pod_on_core_9 if core == 9 else "held"
                    lines.append(f'torus_allocation_info{{resource="neuron.aws.com",'
                                 f'neuroncore="{core}",pod="{pod}"}} 1')
                claim = "c" if mine else claim_on_free
                device = f"neurondevice{core // 4}" if mine else ""
                lines.append(f'neuroncore_memory_usage_tensors{{neuroncore="{core}",'
                             f'dra_claim_name="{claim}",dra_claim_namespace="{"e2e" if mine else ""}",'
                             f'dra_device_name="{device}",dra_pool_name="{"n" if mine else ""}",'
                             f'dra_driver_name="{"neuron.aws.com" if mine else ""}"}} 0')
            return "\n".join(lines)
        checks.claim_metrics_name_the_pod(metrics(), [8, 9, 10, 11], "c", "n", "held", 4)
        with self.assertRaisesRegex(checks.CheckFailed, "names"):
            checks.claim_metrics_name_the_pod(metrics("other"), [8, 9, 10, 11], "c", "n", "held", 4)
        with self.assertRaisesRegex(checks.CheckFailed, "a free core names a claim"):
            checks.claim_metrics_name_the_pod(metrics(claim_on_free="c"), [8, 9, 10, 11], "c",
                                              "n", "held", 4)
        self.assertEqual(checks.chips_disjoint_from_first_claim(
            allocations, "neuron0 neuron1 neuron3 neuron4", 4), "held [2], got [0, 1, 3, 4]")
        with self.assertRaisesRegex(checks.CheckFailed, "held"):
            checks.chips_disjoint_from_first_claim(allocations, "neuron0 neuron1 neuron2 neuron3", 4)

    def test_a_failed_check_exits_1_with_its_reason_and_bad_usage_exits_2(self):
        done = self.run_cli("pod-on-device", "1", "4",
                            stdin=json.dumps({"items": [pod("here", "4-7")]}))
        self.assertEqual((done.returncode, done.stdout), (0, "here\n"))
        failed = self.run_cli("at-most-seconds-apart", "1", "5", "2")
        self.assertEqual(failed.returncode, 1)
        self.assertIn("4.00 s apart", failed.stderr)
        self.assertEqual(self.run_cli("no-such-check").returncode, 2)
        self.assertEqual(self.run_cli("pod-on-device", "x", "4", stdin="{}").returncode, 2)


if __name__ == "__main__":
    unittest.main()
