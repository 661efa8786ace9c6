"""The checks of the API server and the nodes (checks/cluster.py): each passes on what it wants
and fails, naming why, on what it does not."""
import json
import unittest

from checks import CheckFailed, cluster


class ApiAndNodeTest(unittest.TestCase):
    def test_only_the_charts_identities_403s_are_refusals(self):
        lines = [json.dumps(e) for e in [
            {"user": {"username": "system:serviceaccount:kube-system:torus-node-agent"},
             "responseStatus": {"code": 403}, "verb": "patch", "requestURI": "/api/v1/nodes/x"},
            {"user": {"username": "system:serviceaccount:kube-system:torus-node-agent"},
             "responseStatus": {"code": 200}, "verb": "get", "requestURI": "/api/v1/nodes/x"},
            {"user": {"username": "system:serviceaccount:e2e:other"},
             "responseStatus": {"code": 403}, "verb": "get", "requestURI": "/api/v1/pods"},
            {"user": {"username": "system:serviceaccount:kube-system:torus-ultraserver-operator"},
             "responseStatus": {"code": 403, "message": 'resourceclaimtemplates.resource.k8s.io '
                                '"w" is forbidden: exceeded quota: no-templates'},
             "verb": "create", "requestURI": "/apis/resource.k8s.io/v1/namespaces/q/x"},
        ]]
        self.assertEqual(cluster.audit_refusals(lines, "system:serviceaccount:kube-system:torus"),
                         ["system:serviceaccount:kube-system:torus-node-agent patch /api/v1/nodes/x"])

    def test_a_node_with_a_torus_label_or_condition_is_not_forgotten(self):
        clean = {"metadata": {"labels": {"kubernetes.io/os": "linux"}}, "status": {"conditions": []}}
        cluster.node_forgotten(clean)
        for left in ({"metadata": {"labels": {"torus.dev/lnc": "2"}}, "status": {}},
                     {"metadata": {}, "status": {"conditions": [{"type": "NeuronHealthy"}]}}):
            with self.assertRaises(CheckFailed):
                cluster.node_forgotten(left)

    def test_seconds_apart(self):
        self.assertEqual(cluster.at_most_seconds_apart(10.0, 11.5, 2), "1.50 s")
        with self.assertRaises(CheckFailed):
            cluster.at_most_seconds_apart(10.0, 12.5, 2)


class NodesTest(unittest.TestCase):
    def test_four_nodes_of_one_ultraserver_and_one_outside(self):
        def node(name, us=None, position=None):
            labels = {"kubernetes.io/hostname": name}
            if us:
                labels[cluster.ULTRASERVER_LABEL + "server-id-4"] = us
                labels[cluster.ULTRASERVER_LABEL + "node-id-4"] = position
            return {"metadata": {"name": name, "labels": labels}}
        names = ["a", "b", "c", "d", "e"]
        good = [node(n, "us0", str(i)) for i, n in enumerate(names[:4])] + [node("e")]
        cluster.ultraserver_places({"items": good}, names)
        split = [node(n, "us0" if i < 2 else "us1", str(i)) for i, n in enumerate(names[:4])]
        with self.assertRaisesRegex(CheckFailed, "different UltraServers"):
            cluster.ultraserver_places({"items": split + [node("e")]}, names)
        swapped = [node(n, "us0", str(3 - i)) for i, n in enumerate(names[:4])]
        with self.assertRaisesRegex(CheckFailed, "positions"):
            cluster.ultraserver_places({"items": swapped + [node("e")]}, names)
        with self.assertRaisesRegex(CheckFailed, "e claims an UltraServer"):
            cluster.ultraserver_places({"items": good[:4] + [node("e", "us0", "4")]}, names)

    def test_top_shows_every_nodes_devices(self):
        top = {"nodes": [{"node": "a", "devices": [{}] * 16}, {"node": "b", "devices": [{}] * 15}]}
        cluster.top_devices_per_node(top, ["a"], 16)
        with self.assertRaisesRegex(CheckFailed, "'b': 15"):
            cluster.top_devices_per_node(top, ["a", "b"], 16)
        with self.assertRaisesRegex(CheckFailed, "'c': None"):
            cluster.top_devices_per_node(top, ["c"], 16)

    def test_finished_within(self):
        since = 1_800_000_000.4  # 2027-01-15T08:00:00.4Z
        self.assertEqual(cluster.finished_within("2027-01-15T08:00:01Z", since, 2),
                         "finished 1 s (whole seconds) after")
        self.assertEqual(cluster.finished_within("2027-01-15T08:00:00Z", since, 2),
                         "finished within the same second (finishedAt has whole seconds)")
        with self.assertRaisesRegex(CheckFailed, "not within 2"):
            cluster.finished_within("2027-01-15T08:00:03Z", since, 2)

    def test_the_server_version_prefix(self):
        version = {"serverVersion": {"gitVersion": "v1.34.4"}}
        cluster.server_version_is(version, "v1.34.")
        with self.assertRaisesRegex(CheckFailed, "the API server is v1.34.4, want v1.37"):
            cluster.server_version_is(version, "v1.37.")
