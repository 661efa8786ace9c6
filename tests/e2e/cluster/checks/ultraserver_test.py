"""The UltraServer operator's checks (checks/ultraserver.py): each passes on what it wants and
fails, naming why, on what it does not."""
import unittest

from checks import CheckFailed, ultraserver


def slice_of(node, *devices):
    return {"spec": {"driver": "neuron.aws.com", "nodeName": node, "devices": list(devices)}}


def device(name, workload=None, taints=()):
    attributes = {"workloadId": {"string": workload}} if workload else {}
    return {"name": name, "attributes": attributes, "taints": [{"key": k} for k in taints]}


def pod(name, node, phase="Running", deleting=False):
    metadata = {"name": name, "uid": "uid-" + name}
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-28T00:00:00Z"
    return {"metadata": metadata, "spec": {"nodeName": node}, "status": {"phase": phase}}


class UltraServerTest(unittest.TestCase):
    def ultraservers(self, names, state="Ready", link="up"):
        topology = [{"nodeId": i, "nodeName": n, "linkStatusHorizontal": link}
                    for i, n in enumerate(names)]
        return {"items": [{"spec": {"instanceType": "trn2u.48xlarge", "topology": topology},
                           "status": {"state": state,
                                      "allocations": [{"leaderNodeName": names[0]}]}}]}

    def test_the_ultraserver_lists_its_nodes_by_node_id(self):
        names = ["a", "b", "c", "d"]
        ultraserver.ultraserver_built(self.ultraservers(names), names)
        self.assertEqual(ultraserver.allocation_leader(self.ultraservers(names)), "a")
        with self.assertRaisesRegex(CheckFailed, "topology"):
            ultraserver.ultraserver_built(self.ultraservers(["b", "a", "c", "d"]), names)
        with self.assertRaisesRegex(CheckFailed, "status"):
            ultraserver.ultraserver_built(self.ultraservers(names, state="Degraded"), names)
        with self.assertRaisesRegex(CheckFailed, "links not up"):
            ultraserver.ultraserver_built(self.ultraservers(names, link="down"), names)
        with self.assertRaisesRegex(CheckFailed, "0 NeuronUltraServer objects"):
            ultraserver.ultraserver_built({"items": []}, names)

    def test_nodes_tagged_whole_for_a_workload_and_the_reservation_taint(self):
        reserved = "neuron.aws.com/reserved"
        slices = {"items": [
            slice_of("a", device("d0", "e2e/w", [reserved]), device("d1", "e2e/w", [reserved])),
            slice_of("b", device("d0", "e2e/w", [reserved]), device("d1", None, [reserved])),
            slice_of("c", device("d0", "e2e/x", [reserved]))]}
        self.assertEqual(ultraserver.workload_tagged_nodes(slices, "e2e/w"), "a")
        self.assertEqual(ultraserver.workload_tagged_nodes(slices, "e2e/none"), "")
        ultraserver.every_device_reserved(slices)
        slices["items"].append(slice_of("d", device("d0")))
        with self.assertRaisesRegex(CheckFailed, r"\('d', 'd0'\)"):
            ultraserver.every_device_reserved(slices)

    def test_no_claim_of_a_waiting_workload_is_allocated(self):
        def claim(name, workload, allocated):
            return {"metadata": {"name": name,
                                 "annotations": {"neuron.aws.com/workload": workload}},
                    "status": {"allocation": {"devices": {}}} if allocated else {}}
        claims = {"items": [claim("one", "e2e/second", False), claim("two", "e2e/first", True)]}
        ultraserver.no_claim_allocated_for(claims, "e2e/second")
        claims["items"].append(claim("three", "e2e/second", True))
        with self.assertRaisesRegex(CheckFailed, r"\['three'\]"):
            ultraserver.no_claim_allocated_for(claims, "e2e/second")

    def test_a_workloads_pods_across_nodes(self):
        pods = {"items": [pod("p0", "a"), pod("p1", "b"), pod("gone", "c", deleting=True),
                          pod("done", "d", phase="Succeeded")]}
        ultraserver.pods_on_nodes({"items": pods["items"][:2]}, ["b", "a"])
        with self.assertRaisesRegex(CheckFailed, "pods on"):
            ultraserver.pods_on_nodes(pods, ["a", "b"])
        self.assertEqual(ultraserver.pod_on_node(pods, "b"), "p1")
        with self.assertRaisesRegex(CheckFailed, "no pod on e"):
            ultraserver.pod_on_node(pods, "e")
        self.assertEqual(ultraserver.running_pods(pods), "uid-p0@a uid-p1@b")


if __name__ == "__main__":
    unittest.main()
