"""tests/bench/dra_scheduler_perf/: the driver's slices and the chart's DeviceClasses made into
scheduler_perf templates, and the table read from scheduler_perf's result files."""
import json
import os
import tempfile
import unittest

import bench_files


def run(script, *args, stdin=""):
    return bench_files.run("dra_scheduler_perf", script, *args, stdin=stdin)


SLICE = {"spec": {"nodeName": "NODE", "pool": {"name": "NODE"}, "devices": [{
    "name": "neurondevice0",
    "attributes": {"resource.aws.com/devicegroup4_id": {"string": "g0"},
                   "resource.aws.com/devicegroup16_id": {"string": "g1"}}}]}}

CLASSES = """---
# Source: torus/templates/dra-deviceclasses.yaml
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: chip.neuron.aws.com
spec: {}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: core.neuron.aws.com
spec: {}
"""


def result(name, average):
    return {"labels": {"Metric": "SchedulingThroughput", "Name": f"BenchmarkPerfScheduling/{name}/test"},
            "data": {"Average": average}}


def write_results(directory, items):
    with open(os.path.join(directory, "dra.json"), "w") as f:
        json.dump({"dataItems": items + [{"labels": {"Metric": "other", "Name": "x"}, "data": {}}]}, f)


TORUS_ROWS = {"ReferenceDevices/one_of_16": 100, "TorusChips/one_chip": 50,
              "ReferenceDevices/match4_of_16": 80, "TorusConnectedChips/four_connected": 40,
              "ReferenceDevices/one_of_80": 60, "TorusCores/one_core": 30,
              "TorusChipsOnPartitionedNodes/one_chip": 20}


class TemplatesTest(unittest.TestCase):
    def test_each_slice_is_one_template_with_the_node_and_group_ids_per_index(self):
        with tempfile.TemporaryDirectory() as out:
            done = run("templates.py", "slices", "torus-slice-cores", out,
                       stdin=json.dumps({"items": [SLICE, SLICE]}))
            self.assertEqual((done.returncode, done.stdout), (0, "2\n"), done.stderr)
            self.assertEqual(sorted(os.listdir(out)), ["torus-slice-cores-0.yaml", "torus-slice-cores-1.yaml"])
            with open(os.path.join(out, "torus-slice-cores-1.yaml")) as f:
                template = json.load(f)
        self.assertEqual(template["spec"]["nodeName"], "scheduler-perf-dra-{{.Index}}")
        self.assertEqual(template["spec"]["pool"]["name"], "scheduler-perf-dra-{{.Index}}")
        attributes = template["spec"]["devices"][0]["attributes"]
        self.assertEqual(attributes["resource.aws.com/devicegroup4_id"]["string"], "{{.Index}}-g0")
        self.assertEqual(attributes["resource.aws.com/devicegroup16_id"]["string"], "{{.Index}}-g1")

    def test_the_chart_classes_are_one_file_each(self):
        with tempfile.TemporaryDirectory() as out:
            self.assertEqual(run("templates.py", "device-classes", out, stdin=CLASSES).returncode, 0)
            with open(os.path.join(out, "torus-class-core.yaml")) as f:
                core = f.read()
            self.assertTrue(core.startswith("apiVersion: resource.k8s.io/v1\n"))
            self.assertIn("name: core.neuron.aws.com\n", core)
            self.assertNotIn("chip", core)
            with open(os.path.join(out, "torus-class-chip.yaml")) as f:
                self.assertIn("# Source", f.read())
        self.assertEqual(run("templates.py", "slices").returncode, 1)


class ReportTest(unittest.TestCase):
    def test_torus_cases_are_set_against_their_reference_and_the_baseline(self):
        with tempfile.TemporaryDirectory() as results, tempfile.TemporaryDirectory() as baseline:
            write_results(results, [result(n, v) for n, v in TORUS_ROWS.items()] +
                          [result("Partitionable/empty_500nodes", 15)])
            write_results(baseline, [result("TorusChips/one_chip", 25)])
            done = run("report.py", results, baseline)
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.splitlines()
        self.assertEqual(lines[0], "")
        self.assertEqual(lines[1].split(), ["workload", "pods/s", "vs", "reference", "baseline", "vs", "baseline"])
        self.assertEqual(lines[4], f"{'Torus: 1 chip of a trn2 (16 chips)':<48}     50.0         0.50x"
                                   "      25.0        2.00x")
        self.assertEqual(lines[-1], "Torus's cores against upstream's partitionable workload: 2.00x")

    def test_a_missing_torus_case_is_named_and_fails(self):
        rows = dict(TORUS_ROWS)
        del rows["TorusCores/one_core"]
        with tempfile.TemporaryDirectory() as results, tempfile.TemporaryDirectory() as baseline:
            write_results(results, [result(n, v) for n, v in rows.items()])
            done = run("report.py", results, baseline)
        self.assertEqual(done.returncode, 1)
        self.assertEqual(done.stderr, "no result for TorusCores/one_core\n")
        self.assertNotIn("baseline", done.stdout)


if __name__ == "__main__":
    unittest.main()
