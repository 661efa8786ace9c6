"""scripts/cluster/'s Python helpers: free_port.py prints a port one can listen on, and
placer_webhooks.py points a placer's webhooks at 127.0.0.1 in labelled namespaces only."""
import base64
import os
import socket
import subprocess
import sys
import tempfile
import unittest

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CLUSTER = os.path.join(ROOT, "scripts", "cluster")


def run(script, *args):
    return subprocess.run([sys.executable, os.path.join(CLUSTER, script), *args],
                          capture_output=True, text=True, timeout=30, check=False)


MANIFEST = """---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
  labels: {app: kueue}
webhooks:
- name: mjob.kb.io
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-batch-v1-job}
  namespaceSelector:
    matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- name: vjob.kb.io
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate-batch-v1-job}
- name: vworkload.kb.io
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate-workload}
"""


class FreePortTest(unittest.TestCase):
    def test_the_port_printed_can_be_listened_on(self):
        done = run("free_port.py")
        self.assertEqual(done.returncode, 0, done.stderr)
        port = int(done.stdout)
        self.assertGreater(port, 0)
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
            s.listen()
        self.assertEqual(run("free_port.py", "extra").returncode, 1)


class PlacerWebhooksTest(unittest.TestCase):
    def test_each_webhook_calls_localhost_trusts_the_ca_and_acts_in_labelled_namespaces(self):
        with tempfile.TemporaryDirectory() as work:
            manifest, ca = os.path.join(work, "manifests.yaml"), os.path.join(work, "ca.crt")
            with open(manifest, "w") as f:
                f.write(MANIFEST)
            with open(ca, "wb") as f:
                f.write(b"-----BEGIN CERTIFICATE-----\n")
            done = run("placer_webhooks.py", "kueue", manifest, "8443", ca, "torus.dev/placers=enabled")
        self.assertEqual(done.returncode, 0, done.stderr)
        mutating, validating = yaml.safe_load_all(done.stdout)
        self.assertEqual(mutating["metadata"], {"name": "kueue-mutating-webhook-configuration"})
        self.assertEqual(validating["metadata"], {"name": "kueue-validating-webhook-configuration"})
        webhook = validating["webhooks"][1]
        self.assertEqual(webhook["clientConfig"],
                         {"url": "https://127.0.0.1:8443/validate-workload",
                          "caBundle": base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode()})
        self.assertEqual(mutating["webhooks"][0]["namespaceSelector"],
                         {"matchLabels": {"torus.dev/placers": "enabled"}})

    def test_a_missing_manifest_fails(self):
        self.assertNotEqual(run("placer_webhooks.py", "lws", "/nonexistent", "1", "/nonexistent",
                                "a=b").returncode, 0)
        self.assertEqual(run("placer_webhooks.py", "lws").returncode, 1)


if __name__ == "__main__":
    unittest.main()
