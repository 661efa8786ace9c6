"""The placers' checks (checks/placers.py): each passes on what it wants and fails, naming why,
on what it does not."""
import unittest

from checks import CheckFailed, placers


def pod(name, node="", phase="Pending", scheduled=None):
    conditions = [{"type": "PodScheduled", **scheduled}] if scheduled else []
    return {"metadata": {"name": name}, "spec": {"nodeName": node} if node else {},
            "status": {"phase": phase, "conditions": conditions}}


def workload(job, *conditions):
    return {"metadata": {"name": "job-" + job + "-1a2b3",
                         "ownerReferences": [{"kind": "Job", "name": job}]},
            "status": {"conditions": list(conditions)}}


TOPOLOGY_SAYS = ('couldn\'t assign flavors to pod set main: topology "neuron-ultraserver" '
                 "doesn't allow to fit any of 4 pod(s)")


class PlacersTest(unittest.TestCase):
    def test_running_one_on_each_node(self):
        pods = {"items": [pod("a", "n1", "Running"), pod("b", "n2", "Running")]}
        placers.running_one_on_each(pods, ["n2", "n1"])
        with self.assertRaisesRegex(CheckFailed, "want one Running on each"):
            placers.running_one_on_each(pods, ["n1", "n3"])
        pending = {"items": [pod("a", "n1", "Running"), pod("b", "n2", "Pending")]}
        with self.assertRaisesRegex(CheckFailed, "Pending"):
            placers.running_one_on_each(pending, ["n1", "n2"])

    def test_running_within_some_nodes(self):
        pods = {"items": [pod("a", "n1", "Running"), pod("b", "n1", "Running")]}
        placers.running_within(pods, ["n1", "n2"], 2)
        with self.assertRaisesRegex(CheckFailed, "3 pods, want 2"):
            placers.running_within({"items": pods["items"] + [pod("c", "n2", "Running")]},
                                   ["n1", "n2"], 2)
        with self.assertRaisesRegex(CheckFailed, "not Running within"):
            placers.running_within(pods, ["n2"], 2)
        pending = {"items": [pod("a", "n1", "Running"), pod("b", "n1")]}
        with self.assertRaisesRegex(CheckFailed, "not Running within"):
            placers.running_within(pending, ["n1"], 2)

    def test_the_waiting_reason_is_kueues_message_naming_the_topology(self):
        waiting = workload("second", {"type": "QuotaReserved", "status": "False",
                                      "message": TOPOLOGY_SAYS})
        others = workload("first", {"type": "QuotaReserved", "status": "True", "message": ""})
        found = placers.kueue_waiting_reason({"items": [others, waiting]}, "second",
                                             "neuron-ultraserver")
        self.assertEqual(found, TOPOLOGY_SAYS)

    def test_an_admitted_or_unjudged_workload_is_not_waiting(self):
        admitted = workload("second", {"type": "QuotaReserved", "status": "True",
                                       "message": "Quota reserved in ClusterQueue"})
        with self.assertRaisesRegex(CheckFailed, "reserved quota"):
            placers.kueue_waiting_reason({"items": [admitted]}, "second", "topology")
        with self.assertRaisesRegex(CheckFailed, "no QuotaReserved"):
            placers.kueue_waiting_reason({"items": [workload("second")]}, "second", "topology")
        with self.assertRaisesRegex(CheckFailed, "0 Workloads"):
            placers.kueue_waiting_reason({"items": [admitted]}, "third", "topology")
        other_reason = workload("second", {"type": "QuotaReserved", "status": "False",
                                           "message": "insufficient quota"})
        with self.assertRaisesRegex(CheckFailed, "not 'neuron-ultraserver'"):
            placers.kueue_waiting_reason({"items": [other_reason]}, "second",
                                         "neuron-ultraserver")

    def test_unschedulable_by_wants_every_matching_pod_refused_for_that_reason(self):
        refused = {"status": "False", "reason": "Unschedulable",
                   "message": "0/5 nodes are available: 4 node(s) didn't match pod anti-affinity rules."}
        pods = {"items": [pod("group-1", scheduled=refused), pod("group-1-1", scheduled=refused),
                          pod("group-0", "n1", "Running")]}
        placers.unschedulable_by(pods, "group-1", "anti-affinity")
        with self.assertRaisesRegex(CheckFailed, "does not say 'Insufficient'"):
            placers.unschedulable_by(pods, "group-1", "Insufficient")
        with self.assertRaisesRegex(CheckFailed, "is on n1"):
            placers.unschedulable_by(pods, "group-0", "anti-affinity")
        with self.assertRaisesRegex(CheckFailed, "no pod named"):
            placers.unschedulable_by(pods, "other", "anti-affinity")
        unjudged = {"items": [pod("group-1")]}
        with self.assertRaisesRegex(CheckFailed, "not judged unschedulable yet"):
            placers.unschedulable_by(unjudged, "group-1", "anti-affinity")


if __name__ == "__main__":
    unittest.main()
