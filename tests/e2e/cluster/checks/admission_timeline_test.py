"""admission_timeline: what surrounded a failed pod's bind, and what kept an ended pod's ids
withheld, read from watch events."""
import json
import unittest

from checks import admission_timeline


def pod(name, resource, ids=None, node=None, phase="Pending"):
    # As the extender writes them at bind.
    annotations = {"AWS_NEURON_IDS": ids, "NEURON_RESOURCE_TYPE": resource} if ids else {}
    spec = {"containers": [{"resources": {"limits": {resource: "1"}}}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "annotations": annotations}, "spec": spec,
            "status": {"phase": phase}}


def node(tainted=False, unavailable=None):
    annotations = {}
    if unavailable is not None:
        annotations["torus.dev/kubelet-unavailable"] = json.dumps(unavailable)
    taints = [{"key": admission_timeline.RESTARTING_TAINT, "effect": "NoSchedule"}] if tainted else []
    return {"metadata": {"annotations": annotations}, "spec": {"taints": taints}}


CORE = "aws.amazon.com/neuroncore"
DEVICE = "aws.amazon.com/neuron"


class ExplainTest(unittest.TestCase):
    def test_names_the_taint_the_report_and_the_pods_that_held_its_cores(self):
        pods = [
            (1.0, pod("big", DEVICE, "0-1", "n", "Running")),      # cores 0-7 (4 per device)
            (2.0, pod("old", CORE, "8-9", "n", "Running")),
            (3.0, pod("old", CORE, "8-9", "n", "Succeeded")),
            (5.0, pod("victim", CORE, "6-9", "n")),
            (6.0, pod("victim", CORE, "6-9", "n", "Failed")),
            (7.0, pod("later", CORE, "6-9", "n", "Running")),
        ]
        nodes = [(0.5, node(unavailable={CORE: "0-7"})), (4.0, node(tainted=True)),
                 (4.5, node(unavailable={CORE: "0-5"}))]
        lines = admission_timeline.explain("victim", pods, nodes, [3.5], 4, 0.0)
        text = "\n".join(lines)
        self.assertIn("victim: bound at    5.0 s, cores 6-9", lines[0])
        self.assertIn("restarting taint absent", text)
        self.assertIn(f"kubelet-unavailable {CORE} 0-5 (overlap with this pod: none)", text)
        self.assertIn("taint added at    4.0 s", text)
        self.assertIn("taint removed at    4.5 s", text)
        self.assertIn("agent pod deleted at    3.5 s", text)
        self.assertIn("big (aws.amazon.com/neuron) held cores 6-7: bound    1.0 s, live at the bind",
                      text)
        self.assertIn("old (aws.amazon.com/neuroncore) held cores 8-9: bound    2.0 s, ended at "
                      "   3.0 s", text)
        self.assertNotIn("later", text)  # bound after it

    def test_a_device_pods_overlap_is_counted_in_devices(self):
        pods = [(1.0, pod("chip", DEVICE, "1", "n"))]
        nodes = [(0.0, node(unavailable={DEVICE: "1-2"}))]
        text = "\n".join(admission_timeline.explain("chip", pods, nodes, [], 4, 0.0))
        self.assertIn("cores 4-7", text)
        self.assertIn(f"kubelet-unavailable {DEVICE} 1-2 (overlap with this pod: 1)", text)

    def test_a_pod_never_bound_says_so(self):
        pods = [(1.0, pod("lost", CORE))]
        self.assertEqual(admission_timeline.explain("lost", pods, [], [], 4, 0.0),
                         ["lost: never seen bound by the watch"])


class ReleaseTimelineTest(unittest.TestCase):
    def test_each_report_that_changed_what_it_withholds_and_the_pods_bound_since(self):
        pods = [
            (1.0, pod("ended", CORE, "4-5", "n", "Running")),
            (2.0, pod("ended", CORE, "4-5", "n", "Succeeded")),
            (2.5, pod("next", CORE, "5-6", "n", "Running")),
        ]
        nodes = [(1.5, node(unavailable={DEVICE: "1"})), (2.2, node(unavailable={DEVICE: "1"})),
                 (2.4, node(unavailable={DEVICE: "1", CORE: "0"})), (3.0, node(unavailable={}))]
        lines = admission_timeline.release_timeline("ended", pods, nodes, 4, 0.0)
        self.assertEqual(lines, [
            "ended: ended at    2.0 s, cores 4-5 (aws.amazon.com/neuroncore)",
            "     2.2 s report withholds neuron 1, neuroncore -",
            "     3.0 s report withholds neuron -, neuroncore -",
            "  next (aws.amazon.com/neuroncore) bound    2.5 s on cores 5",
        ])

    def test_a_report_that_never_came_says_so(self):
        pods = [(1.0, pod("ended", CORE, "4", "n", "Succeeded"))]
        nodes = [(2.0, node(unavailable={DEVICE: "1"})), (30.0, node(unavailable={}))]
        lines = admission_timeline.release_timeline("ended", pods, nodes, 4, 0.0)
        self.assertEqual(lines[-1], "  still withheld 15 s later")


if __name__ == "__main__":
    unittest.main()
