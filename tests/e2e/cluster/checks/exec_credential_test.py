"""exec_credential.py's check passes what client-go sends and names what differs."""
import json
import unittest

from checks import CheckFailed
from checks.exec_credential import exec_infos_as_kubectl_sends

SERVER = "https://10.87.0.1:6443"
GOOD = {"kind": "ExecCredential", "apiVersion": "client.authentication.k8s.io/v1",
        "spec": {"interactive": False,
                 "cluster": {"server": SERVER, "certificate-authority-data": "LS0tLS1CRUdJTg=="}}}


def lines(*infos):
    return "".join(json.dumps(info) + "\n" for info in infos)


class ExecInfosTest(unittest.TestCase):
    def test_what_client_go_sends_passes(self):
        exec_infos_as_kubectl_sends(lines(GOOD, GOOD), SERVER)

    def test_each_difference_is_named(self):
        cases = [  # (runs, words in the reason)
            ("", "never ran"),
            (lines({**GOOD, "apiVersion": "client.authentication.k8s.io/v1beta1"}), "not a"),
            (lines(GOOD, {**GOOD, "spec": {**GOOD["spec"], "interactive": True}}),
             "run 2: interactive"),
            (lines({**GOOD, "spec": {"interactive": False}}), "cluster.server None"),
            (lines({**GOOD, "spec": {"interactive": False, "cluster": {
                "server": SERVER, "certificate-authority-data": "-----BEGIN CERTIFICATE-----"}}}),
             "not base64"),
        ]
        for runs, reason in cases:
            with self.assertRaises(CheckFailed) as failed:
                exec_infos_as_kubectl_sends(runs, SERVER)
            self.assertIn(reason, str(failed.exception))


if __name__ == "__main__":
    unittest.main()
