"""The DRA checks (checks/dra.py) and the agent's claim metrics (metrics.py): each passes on what
it wants and fails, naming why, on what it does not."""
import unittest

from checks import CheckFailed, dra, metrics


class PoolTest(unittest.TestCase):
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
        dra.pool_counts(devices, 16, 64)
        with self.assertRaisesRegex(CheckFailed, "16 chips, 64 cores"):
            dra.pool_counts(devices, 16, 128)
        dra.trn2_chip5_attributes(devices)
        dra.device_attribute_is(devices, "neurondevice5", "instanceType", "string",
                                   "trn2.48xlarge")
        devices["neurondevice5"]["attributes"]["instanceType"] = {"string": "edited-by-hand"}
        with self.assertRaisesRegex(CheckFailed, "instanceType"):
            dra.trn2_chip5_attributes(devices)
        with self.assertRaisesRegex(CheckFailed, "edited-by-hand"):
            dra.device_attribute_is(devices, "neurondevice5", "instanceType", "string",
                                       "trn2.48xlarge")

    def test_taints_read_as_key_value_effect(self):
        devices = self.pool()
        dra.device_taints_are(devices, "neurondevice5",
                                 "neuron.aws.com/unhealthy=UncorrectedECC:NoSchedule")
        dra.device_taints_are(devices, "neurondevice8", "")
        with self.assertRaisesRegex(CheckFailed, "want ''"):
            dra.device_taints_are(devices, "neurondevice5", "")

    def test_slices_index_count_and_claims(self):
        slices = {"items": [
            {"metadata": {"name": "other"}, "spec": {"nodeName": "n2", "driver": "neuron.aws.com",
                                                     "devices": [{"name": "neurondevice5"}]}},
            {"metadata": {"name": "mine"}, "spec": {"nodeName": "n1", "driver": "neuron.aws.com",
                                                    "devices": [{"name": "neurondevice4"},
                                                                {"name": "neurondevice5"}]}}]}
        self.assertEqual(dra.slice_device_index(slices, "n1", "neurondevice5"), "mine 1")
        with self.assertRaisesRegex(CheckFailed, "no slice of n3"):
            dra.slice_device_index(slices, "n3", "neurondevice5")
        self.assertEqual(dra.slice_device_count(slices), "3")
        claims = {"items": [{"metadata": {"ownerReferences": [{"name": "p"}]},
                             "status": {"allocation": {"devices": {"results": [
                                 {"pool": "n1", "device": "neurondevice1"},
                                 {"pool": "n1", "device": "neurondevice0"},
                                 {"pool": "n2", "device": "neurondevice3"}]}}}},
                            {"metadata": {}, "status": {}}]}
        self.assertEqual(dra.claim_devices_of(claims, "p", "n1"), "neurondevice0 neurondevice1")
        self.assertEqual(dra.claim_devices_of(claims, "q", "n1"), "")

    def test_claim_cores_metrics_and_disjoint_chips(self):
        allocations = {"claims": [{"cores": [8, 9, 10, 11], "devices": [2]}]}
        self.assertEqual(dra.claim_cores(allocations), [8, 9, 10, 11])

        def series(pod_on_core_9="held", claim_on_free=""):
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
        metrics.claim_metrics_name_the_pod(series(), [8, 9, 10, 11], "c", "n", "held", 4)
        with self.assertRaisesRegex(CheckFailed, "names"):
            metrics.claim_metrics_name_the_pod(series("other"), [8, 9, 10, 11], "c", "n", "held", 4)
        with self.assertRaisesRegex(CheckFailed, "a free core names a claim"):
            metrics.claim_metrics_name_the_pod(series(claim_on_free="c"), [8, 9, 10, 11], "c",
                                              "n", "held", 4)
        self.assertEqual(dra.chips_disjoint_from_first_claim(
            allocations, "neuron0 neuron1 neuron3 neuron4", 4), "held [2], got [0, 1, 3, 4]")
        with self.assertRaisesRegex(CheckFailed, "held"):
            dra.chips_disjoint_from_first_claim(allocations, "neuron0 neuron1 neuron2 neuron3", 4)

    def test_the_pool_of_a_node_and_what_is_in_it(self):
        slices = {"items": [
            {"spec": {"driver": "neuron.aws.com", "nodeName": "n1",
                      "devices": [{"name": "neurondevice0"}, {"name": "neurondevice1"}]}},
            {"spec": {"driver": "neuron.aws.com", "nodeName": "n1",
                      "devices": [{"name": "neuronnode"}]}},
            {"spec": {"driver": "neuron.aws.com", "nodeName": "n2",
                      "devices": [{"name": "neurondevice7"}]}},
            {"spec": {"driver": "gpu.example.com", "nodeName": "n1",
                      "devices": [{"name": "gpu0"}]}}]}
        pool = dra.pool_devices(slices, "n1")
        self.assertEqual(sorted(pool), ["neurondevice0", "neurondevice1", "neuronnode"])
        dra.in_pool(pool, "neurondevice1", True)
        dra.in_pool(pool, "neurondevice7", False)
        with self.assertRaisesRegex(CheckFailed, "neurondevice7 in the pool: False, want True"):
            dra.in_pool(pool, "neurondevice7", True)

    def test_whole_chips_and_a_node_device_without_counters(self):
        chips = {f"neurondevice{i}": {"attributes": {}} for i in range(16)}
        node = {"attributes": {"resourceType": {"string": "neuron_node"}}}
        dra.whole_chips_only(chips, 16)
        dra.node_device_without_counters({**chips, "neuronnode": node}, 16)
        with self.assertRaisesRegex(CheckFailed, "16 chips, 1 cores"):
            dra.whole_chips_only({**chips, "neuroncore0": {}}, 16)
        counting = {**chips, "neurondevice3": {"consumesCounters": []}}
        with self.assertRaisesRegex(CheckFailed, r"\['neurondevice3'\] still consume counters"):
            dra.whole_chips_only(counting, 16)
        with self.assertRaisesRegex(CheckFailed, "no neuronnode"):
            dra.node_device_without_counters(chips, 16)
        with self.assertRaisesRegex(CheckFailed, "consumes counters"):
            dra.node_device_without_counters(
                {**chips, "neuronnode": {**node, "consumesCounters": []}}, 16)

    def test_ultraserver_environment_of_the_partition_size(self):
        prefix = "neuron.amazonaws.com/ultraserver-"
        node = {"metadata": {"labels": {prefix + "node-id-2": "1", prefix + "server-id-2": "us0-b",
                                        prefix + "node-id-4": "3", prefix + "server-id-4": "us0"}}}
        pair = ("DEVICES=neuron0\nNEURON_RT_ULTRASERVER_MODE=3\n"
                "NEURON_RT_ULTRASERVER_NODE_ID=1\nNEURON_RT_ULTRASERVER_SERVER_ID=us0-b\n")
        dra.ultraserver_environment(pair, node, 2)
        with self.assertRaisesRegex(CheckFailed, "container"):
            dra.ultraserver_environment(pair, node, 4)
        with self.assertRaisesRegex(CheckFailed, "labels"):
            dra.ultraserver_environment("DEVICES=neuron0\n", node, 2)

    def test_checkpoint_idle(self):
        dra.checkpoint_idle({"version": 2, "data": {"claims": {}, "pendingReset": [],
                                                    "unresetCores": [4]}})
        with self.assertRaisesRegex(CheckFailed, r"chips to reset \[0, 1\]"):
            dra.checkpoint_idle({"data": {"claims": {}, "pendingReset": [0, 1]}})
        with self.assertRaisesRegex(CheckFailed, r"claims \['uid-1'\]"):
            dra.checkpoint_idle({"data": {"claims": {"uid-1": {}}, "pendingReset": []}})

    def test_prepared_claims_and_an_admin_claim_that_owns_nothing(self):
        allocations = {"claims": [
            {"claim": "e2e/work", "deviceNames": ["neurondevice3"], "devices": [3],
             "cores": [12, 13, 14, 15]},
            {"claim": "admin/monitor", "deviceNames": [f"neurondevice{i}" for i in range(16)],
             "devices": [], "cores": []}]}
        dra.prepared_claims_are(allocations, 2)
        with self.assertRaisesRegex(CheckFailed, "2 prepared claims, want 1"):
            dra.prepared_claims_are(allocations, 1)
        dra.prepared_claims_are({"claims": allocations["claims"][:1]}, 1, 1)
        with self.assertRaisesRegex(CheckFailed, r"chips owned per claim: \[1, 0\]"):
            dra.prepared_claims_are(allocations, 2, 1)
        dra.admin_claim_owns_nothing(allocations, "admin/monitor", 16)
        with self.assertRaisesRegex(CheckFailed, "owns chips"):
            dra.admin_claim_owns_nothing(allocations, "e2e/work", 1)
        with self.assertRaisesRegex(CheckFailed, "no prepared claim admin/other"):
            dra.admin_claim_owns_nothing(allocations, "admin/other", 16)
