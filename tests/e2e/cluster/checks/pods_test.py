"""The checks of one pod (checks/pods.py), its ids (ids.py) and the agent's /metrics
(metrics.py), each shown to pass on what it wants and to fail, naming why, on what it does not."""
import os
import tempfile
import unittest

from checks import CheckFailed, ids, metrics, pods


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
        self.assertEqual(ids.expand_ids("0-3,8"), [0, 1, 2, 3, 8])
        self.assertEqual(ids.expand_ids(""), [])
        self.assertEqual(ids.compress_ids([8, 3, 2, 1, 0, 10, 11]), "0-3,8,10-11")


def rules(*given):
    """The device probe's lines for a container given `given` (minors 0..31 probed)."""
    allowed = " ".join(str(d) for d in given)
    denied = " ".join(str(d) for d in range(pods.PROBED_MINORS) if d not in given)
    return f"\nALLOWED={allowed}\nDENIED={denied}"


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
        pods.pod_saw("CORES=4-11\nDEVICES=neuron1 neuron2\nLNC=2" + rules(1, 2), "neuroncore", 8,
                     4, self.node.name, "2")
        pods.pod_saw("CORES=0-3\nDEVICES=neuron0\nLNC=2" + rules(0), "neuron", 1, 4,
                     self.node.name, "2")

    def test_device_rules_that_open_more_or_fewer_devices_fail(self):
        cases = [
            # Allocate or a CDI spec granted a device too many.
            (rules(0, 1), "the device rules let the container open minors 0-1; it was given 0"),
            # The old bed: copies of /dev/null's numbers (1:3), so the probe's 1:3, 1:5, 1:7-9
            # (null, zero, full, random, urandom) open in every container.
            ("\nALLOWED=0 3 5 7 8 9\nDENIED=" + " ".join(
                str(m) for m in range(32) if m not in (0, 3, 5, 7, 8, 9)),
             "open minors 0,3,5,7-9"),
            ("", "no ALLOWED=/DENIED= lines"),
            (rules(0) + "\nPROBE_UNEXPECTED=mknod", "did not expect: mknod"),
            ("\nALLOWED=0\nDENIED=1 2", "refused minors 1-2"),
        ]
        for lines, reason in cases:
            with self.assertRaises(CheckFailed) as failed:
                pods.pod_saw("CORES=0-3\nDEVICES=neuron0\nLNC=2" + lines, "neuron", 1, 4,
                             self.node.name, "2")
            self.assertIn(reason, str(failed.exception))

    def test_a_probe_of_a_running_pod_wants_exactly_its_devices(self):
        pods.device_rules_report("DEVICES=neuron0 neuron1 " + rules(0, 1))
        with self.assertRaises(CheckFailed) as failed:
            pods.device_rules_report("DEVICES=neuron0 " + rules(0, 1))
        self.assertIn("open minors 0-1; it was given 0", str(failed.exception))
        with self.assertRaises(CheckFailed) as failed:
            pods.device_rules_report("DEVICES=" + rules())
        self.assertIn("no /dev/neuronN", str(failed.exception))

    def test_wrong_counts_devices_lnc_or_links_fail_by_name(self):
        cases = [
            ("CORES=4-10\nDEVICES=neuron1 neuron2\nLNC=2", "neuroncore", 8, "want 8"),
            ("CORES=4-11\nDEVICES=neuron1\nLNC=2", "neuroncore", 8, "devices [1] for cores"),
            ("CORES=4-11\nDEVICES=neuron1 neuron2\nLNC=1" + rules(1, 2), "neuroncore", 8,
             "want '2'"),
        ]
        for report, resource, count, reason in cases:
            with self.assertRaises(CheckFailed) as failed:
                pods.pod_saw(report, resource, count, 4, self.node.name, "2")
            self.assertIn(reason, str(failed.exception))
        with self.assertRaises(CheckFailed) as failed:  # 0 and 2 are not linked
            pods.pod_saw("CORES=0-3,8-11\nDEVICES=neuron0 neuron2\nLNC=2" + rules(0, 2), "neuron",
                         2, 4, self.node.name, "2")
        self.assertIn("not NeuronLink-connected", str(failed.exception))
        pods.pod_saw("CORES=0-3,8-11\nDEVICES=neuron0 neuron2\nLNC=2" + rules(0, 2), "neuron", 2,
                     4, self.node.name, "2", any_devices=True)


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
        self.assertEqual(metrics.metrics_name_holders(self.metrics, self.allocations, ["c"]),
                         "2 pods named on their cores")
        self.assertEqual(pods.cores_held_by(self.allocations, "e2e/a"), [0, 1, 2])

    def test_a_core_labelled_for_another_pod_or_a_deleted_pod_still_named_fail(self):
        wrong = self.metrics.replace('tensors{pod="b",neuroncore="4"}',
                                     'tensors{pod="a",neuroncore="4"}')
        with self.assertRaises(CheckFailed) as failed:
            metrics.metrics_name_holders(wrong, self.allocations)
        self.assertIn("b: cores [4] are labelled ['a']", str(failed.exception))
        with self.assertRaises(CheckFailed) as failed:
            metrics.metrics_name_holders(self.metrics, self.allocations, ["b"])
        self.assertIn("b is deleted but still named", str(failed.exception))

    def test_the_pod_on_a_device_is_the_running_one_whose_ids_start_there(self):
        listed = {"items": [pod("old", "4-7", deleting=True), pod("done", "4-7", phase="Succeeded"),
                            pod("here", "4-7"), pod("other", "8-11")]}
        self.assertEqual(pods.pod_on_device(listed, 1, 4), "here")
        self.assertIsNone(pods.pod_on_device(listed, 3, 4))


class PreemptionTest(unittest.TestCase):
    before = {"items": [pod("a", "0-3"), pod("b", "4-7"), pod("c", "1", resource="aws.amazon.com/neuron")]}

    def test_victims_holding_exactly_the_new_pods_cores_pass(self):
        now = {"items": [pod("a", "0-3"), pod("c", "1", resource="aws.amazon.com/neuron"),
                         pod("b", "4-7", deleting=True)]}
        pods.victims_freed_exactly("4-7", self.before, now, 4)

    def test_no_victim_or_a_victim_elsewhere_fails(self):
        with self.assertRaises(CheckFailed) as failed:
            pods.victims_freed_exactly("4-7", self.before, self.before, 4)
        self.assertIn("no pod was preempted", str(failed.exception))
        now = {"items": [pod("a", "0-3")]}  # b and c (device 1: cores 4-7) gone, c also holds 4-7
        pods.victims_freed_exactly("4-7", self.before, now, 4)
        now = {"items": [pod("b", "4-7"), pod("c", "1", resource="aws.amazon.com/neuron")]}
        with self.assertRaises(CheckFailed) as failed:
            pods.victims_freed_exactly("4-7", self.before, now, 4)
        self.assertIn("differ from the new pod's", str(failed.exception))


class ExtenderAndCliTest(unittest.TestCase):
    def test_extender_state_equals_the_live_pods_ids(self):
        listed = {"items": [pod("a", "0,1,2,3"), pod("b", "8", phase="Succeeded")]}
        pods.extender_state_matches_pods({"allocations": [{"pod": "e2e/a", "ids": "0-3"}]}, listed)
        with self.assertRaises(CheckFailed):
            pods.extender_state_matches_pods(
                {"allocations": [{"pod": "e2e/a", "ids": "0-3"}, {"pod": "e2e/b", "ids": "8"}]},
                listed)

    def test_kubectl_neuron_pods_and_top_show_what_is_held(self):
        shown = [{"namespace": "e2e", "name": "shown", "ids": [4, 5], "phase": "Running",
                  "allocated": "true"}]
        pods.neuron_pods_show(shown, "e2e/shown", "4-5")
        with self.assertRaises(CheckFailed):
            pods.neuron_pods_show(shown, "e2e/shown", "4-6")
        top = {"nodes": [{"health": "ok", "devices": [{}] * 16,
                          "pods": [{"pod": "shown", "cores": [0] * 8, "devices": []}]}]}
        pods.top_names(top, {"shown": ("cores", 8)})
        with self.assertRaises(CheckFailed):
            pods.top_names(top, {"shown": ("cores", 8), "shown-too": ("devices", 1)})


class ChipCoresTest(unittest.TestCase):
    def test_chip_cores_are_each_chips_block(self):
        self.assertEqual(ids.chip_cores(["neuron2", "neuron0"], 4), [0, 1, 2, 3, 8, 9, 10, 11])
        self.assertEqual(ids.chip_cores([], 4), [])


class WhyNotSucceededTest(unittest.TestCase):
    def test_a_refused_pod_says_what_kubelet_said(self):
        status = {"phase": "Failed", "reason": "UnexpectedAdmissionError",
                  "message": "Allocate failed ... Requested: 4, Available: 0"}
        self.assertEqual(pods.why_not_succeeded(status), status["message"])

    def test_a_waiting_pod_says_why_the_scheduler_left_it(self):
        status = {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/3 nodes are available: 3 Insufficient aws.amazon.com/neuron."}]}
        self.assertEqual(pods.why_not_succeeded(status), "not scheduled: 0/3 nodes are available: "
                                                         "3 Insufficient aws.amazon.com/neuron.")

    def test_a_scheduled_pod_waiting_on_its_node_says_nothing_it_does_not_know(self):
        status = {"phase": "Pending",
                  "conditions": [{"type": "PodScheduled", "status": "True"}]}
        self.assertEqual(pods.why_not_succeeded(status), "")


class SuccessorsAfterOldTest(unittest.TestCase):
    OLD = {"old-1": ("0-15", 130.0), "old-2": ("16-31", 131.0)}

    def test_successors_that_waited_for_the_old_containers_pass(self):
        new = {"new-1": ("16-31", 132.5), "new-2": ("0-15", 130.4)}
        said = pods.successors_after_old(self.OLD, new, 100.0, 25)
        self.assertIn("new-1 after old-2", said)

    def test_a_successor_that_started_under_a_running_old_container_fails(self):
        new = {"new-1": ("0-15", 120.0)}
        with self.assertRaisesRegex(CheckFailed, "new-1 started on cores 0-15.*old-1 still ran"):
            pods.successors_after_old(self.OLD, new, 100.0, 25)

    def test_an_old_container_that_stopped_at_once_proves_nothing(self):
        with self.assertRaisesRegex(CheckFailed, "old-1 was last seen 5.0 s after"):
            pods.successors_after_old({"old-1": ("0-15", 105.0)}, {"new-1": ("0-15", 130.0)},
                                      100.0, 25)

    def test_no_shared_core_checks_nothing(self):
        with self.assertRaisesRegex(CheckFailed, "nothing was checked"):
            pods.successors_after_old(self.OLD, {"new-1": ("32-47", 140.0)}, 100.0, 25)
