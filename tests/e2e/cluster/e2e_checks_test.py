"""e2e_checks.py, the command line the suites run checks with: what a check returns is printed,
a failed check exits 1 with its reason, bad usage exits 2."""
import base64
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


# A pod holding device 1's cores (4 per device), as the API returns it.
RUNNING_ON_DEVICE_1 = {"metadata": {"name": "here", "annotations": {"AWS_NEURON_IDS": "4-7"}},
                       "status": {"phase": "Running"}}


class RunsCli:
    def run_cli(self, *args, stdin=""):
        return subprocess.run([sys.executable, os.path.join(HERE, "e2e_checks.py"), *args],
                              input=stdin, capture_output=True, text=True, timeout=30, check=False)


class CommandLineTest(RunsCli, unittest.TestCase):

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

    def test_health_unknown_is_compares_the_whole_list(self):
        node = json.dumps({"devices": {"unknown": [5]}})
        self.assertEqual(self.run_cli("health-unknown-is", "5", stdin=node).returncode, 0)
        none = json.dumps({"devices": {"unknown": []}})
        failed = self.run_cli("health-unknown-is", "5", stdin=none)
        self.assertEqual(failed.returncode, 1)
        self.assertIn("unknown: [], want [5]", failed.stderr)
        self.assertEqual(self.run_cli("health-unknown-is", "4", "5", stdin=node).returncode, 1)

    def test_device_taints_listed_prints_one_devices_taints_sorted(self):
        taint = {"key": "neuron.aws.com/ecc-uncorrected", "value": "mem", "effect": "NoExecute"}
        slices = {"items": [
            {"spec": {"devices": [{"name": "neurondevice3", "taints": [taint]}]}},
            {"spec": {"devices": [{"name": "neuronnode", "taints": [
                taint, {"key": "neuron.aws.com/a", "effect": "NoSchedule"}]}]}},
            {"spec": {}}]}
        done = self.run_cli("device-taints-listed", "neuronnode", stdin=json.dumps(slices))
        self.assertEqual((done.returncode, done.stdout),
                         (0, "neuron.aws.com/a=:NoSchedule "
                             "neuron.aws.com/ecc-uncorrected=mem:NoExecute\n"))
        untainted = {"items": [{"spec": {"devices": [{"name": "neuronnode"}]}}]}
        done = self.run_cli("device-taints-listed", "neuronnode", stdin=json.dumps(untainted))
        self.assertEqual((done.returncode, done.stdout), (0, ""))
        missing = self.run_cli("device-taints-listed", "neuronnode", stdin='{"items": []}')
        self.assertEqual(missing.returncode, 1)
        self.assertIn("0 devices named neuronnode", missing.stderr)

    def test_claim_results_of_prints_the_owned_claims_devices_across_drivers(self):
        def claim(owner, results):
            return {"metadata": {"ownerReferences": [{"name": owner}]},
                    "status": {"allocation": {"devices": {"results": results}}}}
        chip = {"request": "chip", "driver": "neuron.aws.com", "device": "neurondevice5"}
        nic = {"request": "nic", "driver": "efa.example.com", "device": "efa2"}
        claims = {"items": [claim("other", [nic]), claim("dra-paired", [chip, nic]),
                            {"metadata": {"ownerReferences": [{"name": "dra-paired"}]}}]}
        done = self.run_cli("claim-results-of", "dra-paired", stdin=json.dumps(claims))
        self.assertEqual((done.returncode, done.stdout),
                         (0, "chip neuron.aws.com neurondevice5\nnic efa.example.com efa2\n"))
        done = self.run_cli("claim-results-of", "nobody", stdin=json.dumps(claims))
        self.assertEqual((done.returncode, done.stdout), (0, ""))


def write(path, content):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(content if isinstance(content, str) else json.dumps(content))


def unpacked_bundle(root, device=3, serial="SER3"):
    """A minimal archive of `device`, unpacked under `root`, that passes debug-bundle-complete."""
    top = os.path.join(root, "neuron-debug-node-1")
    parts = {
        "agent/state.json": {"devices": [{"health": {
            "state": "unhealthy", "problems": [{"code": "SRAM_UNCORRECTABLE_ERROR"}]}}]},
        "agent/kernel-log.txt": "NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR "
                                f"instance-id=i-0e2e0000000000003 serial-num={serial}\n",
        "agent/metrics.txt": "torus_device_health_state 1\n",
        "agent/allocations.json": {},
        "agent/log.txt": "agent ready\n",
        f"devices/neuron{device}/driver.json": {},
        f"devices/neuron{device}/sys/core_count": "8\n",
        "cluster/node.json": {"status": {"conditions": [{"type": "NeuronHealth"}]}},
        "cluster/events.json": [],
        "cluster/pods.json": [{"metadata": {"name": "debugged"}}],
        "cluster/claims.json": [],
        "cluster/slices.json": [],
    }
    for name, content in parts.items():
        write(os.path.join(top, name), content)
    manifest = {"device": device, "parts": [
        {"file": name, "bytes": os.path.getsize(os.path.join(top, name))} for name in parts]}
    write(os.path.join(top, "manifest.json"), manifest)
    return top


class DebugBundleTest(RunsCli, unittest.TestCase):
    def test_debug_bundle_complete_passes_a_whole_archive_and_names_what_is_missing(self):
        with tempfile.TemporaryDirectory() as root:
            top = unpacked_bundle(root)
            done = self.run_cli("debug-bundle-complete", root, "3", "SER3")
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(self.run_cli("debug-bundle-complete", root, "3", "SER4").returncode, 1)
            self.assertEqual(self.run_cli("debug-bundle-complete", root, "4", "SER3").returncode, 1)
            write(os.path.join(top, "cluster/pods.json"), [])
            failed = self.run_cli("debug-bundle-complete", root, "3", "SER3")
            self.assertEqual(failed.returncode, 1)
            self.assertIn("cluster/pods.json has 2 bytes", failed.stderr)

    def test_debug_bundle_without_secrets_finds_the_token_the_key_and_any_jwt(self):
        key = "-----BEGIN EC KEY-----\nMHcCAQEEIKeyBody\n-----END EC KEY-----\n"
        kubeconfig = ("users:\n- name: e2e\n  user:\n    token: kubeconfig-token\n"
                      f"    client-key-data: {base64.b64encode(key.encode()).decode()}\n")
        cases = [  # (what the archive holds, exit code)
            (b"a clean archive", 0),
            (b"...agent-token...", 1),
            (b"token kubeconfig-token", 1),
            (b"MHcCAQEEIKeyBody", 1),
            (b"eyJhbGci.eyJzdWIi.sig", 1),
            (b"-----BEGIN RSA PRIVATE KEY-----", 1),
            (b'{"kind":"Secret"}', 1),
        ]
        with tempfile.TemporaryDirectory() as root:
            write(os.path.join(root, "kubeconfig"), kubeconfig)
            for held, code in cases:
                with open(os.path.join(root, "bundle.tar"), "wb") as handle:
                    handle.write(held)
                done = self.run_cli("debug-bundle-without-secrets",
                                    os.path.join(root, "bundle.tar"), "agent-token",
                                    os.path.join(root, "kubeconfig"))
                self.assertEqual(done.returncode, code, (held, done.stderr))

    def test_debug_bundle_without_secrets_finds_an_exec_plugins_tokens(self):
        with tempfile.TemporaryDirectory() as root:
            write(os.path.join(root, "kubeconfig"), "users: []\n")
            for held, code in [(b"a clean archive", 0), (b"...renewed-token...", 1),
                               (b"...revoked-token...", 1), (b'"kind":"ExecCredential"', 1)]:
                with open(os.path.join(root, "bundle.tar"), "wb") as handle:
                    handle.write(held)
                done = self.run_cli("debug-bundle-without-secrets",
                                    os.path.join(root, "bundle.tar"), "agent-token",
                                    os.path.join(root, "kubeconfig"), "revoked-token",
                                    "renewed-token")
                self.assertEqual(done.returncode, code, (held, done.stderr))
            empty = self.run_cli("debug-bundle-without-secrets", os.path.join(root, "bundle.tar"),
                                 "agent-token", os.path.join(root, "kubeconfig"), "")
            self.assertEqual(empty.returncode, 1)


if __name__ == "__main__":
    unittest.main()
