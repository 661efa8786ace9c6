#!/usr/bin/env python3
"""The shipped AppArmor profile (deploy/apparmor/torus-node-agent) compiles with Debian's
apparmor_parser for the kernel features it ships (this kernel has no AppArmor to load it into), a
profile with an error is refused the same way (so the check can fail), and the profile grants the
agent what the chart gives its container: the same capabilities and kubelet's paths."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PROFILE = os.path.join(REPO, "deploy", "apparmor", "torus-node-agent")
VALUES = os.path.join(REPO, "helm", "torus", "values.yaml")
FEATURES = "/usr/share/apparmor-features/features"


def compile_profile(path):
    parser = shutil.which("apparmor_parser") or "/sbin/apparmor_parser"
    return subprocess.run(
        [parser, "--skip-kernel-load", "--skip-cache", "--quiet", "--features-file", FEATURES,
         "--stdout", path], capture_output=True, timeout=60)


class AppArmorProfileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not (shutil.which("apparmor_parser") or os.path.exists("/sbin/apparmor_parser")):
            raise RuntimeError("apparmor_parser not found: install Debian's apparmor package "
                               "(scripts/install-deps.sh)")
        with open(PROFILE) as profile:
            cls.text = profile.read()
        with open(VALUES) as values:
            cls.agent = yaml.safe_load(values)["nodeAgent"]

    def test_compiles(self):
        result = compile_profile(PROFILE)
        self.assertEqual(result.returncode, 0, result.stderr.decode())
        self.assertGreater(len(result.stdout), 1000)  # the compiled policy

    def test_an_error_is_refused(self):
        with tempfile.NamedTemporaryFile("w", suffix=".profile") as broken:
            broken.write(self.text.replace("capability syslog,", "capability syslog"))
            broken.flush()
            result = compile_profile(broken.name)
        self.assertNotEqual(result.returncode, 0)

    def test_grants_the_capabilities_the_chart_adds_and_no_other(self):
        granted = set(re.findall(r"^\s*capability (\w+),", self.text, re.MULTILINE))
        added = {c.lower() for c in self.agent["securityContext"]["capabilities"]["add"]}
        self.assertEqual(granted, added)

    def test_names_the_charts_kubelet_paths(self):
        for key in ("devicePlugins", "kubeletPlugins", "kubeletPluginsRegistry"):
            path = self.agent["hostPaths"][key]
            self.assertIn(f"  {path}/", self.text, key)
        self.assertIn(self.agent["hostPaths"]["podResources"] + "/kubelet.sock rw,", self.text)
        cdi = self.agent["hostPaths"]["cdi"]
        self.assertEqual(cdi, "/var/run/cdi")  # written as /{var/,}run/cdi: the resolved path
        self.assertIn("/{var/,}run/cdi/** rw,", self.text)

    def test_writes_under_sys_only_reset_files(self):
        writes = [line.strip() for line in self.text.splitlines()
                  if re.match(r"\s*/sys/\S+ \w*w", line)]
        self.assertEqual(writes, ["/sys/devices/virtual/neuron_device/neuron[0-9]*/reset w,"])


if __name__ == "__main__":
    unittest.main()
