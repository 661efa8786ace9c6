"""e2e_checks.py, the command line the suites run checks with: what a check returns is printed,
a failed check exits 1 with its reason, bad usage exits 2."""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


# A pod holding device 1's cores (4 per device), as the API returns it.
RUNNING_ON_DEVICE_1 = {"metadata": {"name": "here", "annotations": {"AWS_NEURON_IDS": "4-7"}},
                       "status": {"phase": "Running"}}


class CommandLineTest(unittest.TestCase):
    def run_cli(self, *args, stdin=""):
        return subprocess.run([sys.executable, os.path.join(HERE, "e2e_checks.py"), *args],
                              input=stdin, capture_output=True, text=True, timeout=30, check=False)

    def test_a_failed_check_exits_1_with_its_reason_and_bad_usage_exits_2(self):
        done = self.run_cli("pod-on-device", "1", "4",
                            stdin=json.dumps({"items": [RUNNING_ON_DEVICE_1]}))
        self.assertEqual((done.returncode, done.stdout), (0, "here\n"))
        failed = self.run_cli("at-most-seconds-apart", "1", "5", "2")
        self.assertEqual(failed.returncode, 1)
        self.assertIn("4.00 s apart", failed.stderr)
        self.assertEqual(self.run_cli("no-such-check").returncode, 2)
        self.assertEqual(self.run_cli("pod-on-device", "x", "4", stdin="{}").returncode, 2)

    def test_checks_that_print_json_or_ids_print_them(self):
        slices = {"items": [{"spec": {"driver": "neuron.aws.com", "nodeName": "n1",
                                      "devices": [{"name": "neurondevice0"}]}}]}
        done = self.run_cli("pool-devices", "n1", stdin=json.dumps(slices))
        self.assertEqual(json.loads(done.stdout), {"neurondevice0": {"name": "neurondevice0"}})
        done = self.run_cli("chip-cores", "4", "neuron1")
        self.assertEqual(done.stdout, "4 5 6 7\n")

    def test_a_word_other_than_yes_or_no_is_bad_usage(self):
        pool = json.dumps({"neurondevice9": {}})
        self.assertEqual(self.run_cli("in-pool", "neurondevice9", "yes", stdin=pool).returncode, 0)
        self.assertEqual(self.run_cli("in-pool", "neurondevice9", "no", stdin=pool).returncode, 1)
        wrong = self.run_cli("in-pool", "neurondevice9", "true", stdin=pool)
        self.assertEqual(wrong.returncode, 2)
        self.assertIn("want yes or no", wrong.stderr)


if __name__ == "__main__":
    unittest.main()
