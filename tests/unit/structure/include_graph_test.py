"""scripts/include-graph.py: it finds a cycle between folders and names the lines that make it,
it passes a tree without one, and Torus's own tree has none (the folders' arrows point one way);
it fails on a contract name spelled outside common/contracts/, and Torus spells each there only."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "include-graph.py")


def run(root, *args):
    return subprocess.run([sys.executable, SCRIPT, "--root", root, *args], capture_output=True,
                          text=True, timeout=60, check=False)


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as handle:
        handle.write(text)


class IncludeGraphTest(unittest.TestCase):
    def test_a_cycle_between_two_folders_fails_and_names_both_includes(self):
        with tempfile.TemporaryDirectory() as root:
            write(root, "common/a/one.h", '#include "common/b/two.h"\n')
            write(root, "common/b/two.h", '#include <vector>\n#include "common/a/one.h"\n')
            write(root, "common/c/three.h", '#include "common/a/one.h"\n')
            result = run(root, "--check")
            self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
            self.assertIn("include cycle between folders: common/a, common/b", result.stderr)
            self.assertIn("common/a/one.h:1 includes common/b/two.h", result.stderr)
            self.assertIn("common/b/two.h:2 includes common/a/one.h", result.stderr)
            self.assertNotIn("common/c", result.stderr)

    def test_arrows_one_way_pass_and_generated_headers_are_left_out(self):
        with tempfile.TemporaryDirectory() as root:
            write(root, "device-plugin/x.cc", '#include "common/a/one.h"\n#include "podresources/v1/api.pb.h"\n')
            write(root, "common/a/one.h", "#pragma once\n")
            result = run(root, "--check")
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("no include cycle among 2 folders (1 arrows)", result.stdout)
            drawing = run(root, "--mermaid")
            self.assertIn("device_plugin --> common_a", drawing.stdout)

    def test_the_drawings_in_architecture_md_are_todays(self):
        with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as handle:
            text = handle.read()
        drawings = re.findall(r"<!-- include-graph ([^>]*) -->\n```mermaid\n(.*?)```", text, re.S)
        self.assertGreaterEqual(len(drawings), 2)
        for args, drawn in drawings:
            today = run(ROOT, "--mermaid", *args.split())
            self.assertEqual(drawn, today.stdout,
                             f"docs/architecture.md: the drawing of '{args}' is stale; paste "
                             f"scripts/include-graph.py --mermaid {args}")

    def test_a_contract_literal_outside_contracts_fails_and_names_its_line_and_home(self):
        with tempfile.TemporaryDirectory() as root:
            write(root, "common/contracts/ultraserver_labels.h",
                  "inline constexpr std::string_view kUltraServerIdLabel =\n"
                  '    "neuron.amazonaws.com/ultraserver-server-id-4";\n')
            write(root, "common/contracts/opaque_config.h",
                  'inline constexpr std::string_view kNeuronConfigKind = "NeuronConfig";\n')
            write(root, "common/contracts/ultraserver_labels.cc",
                  'const char* k = "neuron.amazonaws.com/ultraserver-server-id-4";\n')
            write(root, "scheduler-extender/gang/domains.cc",
                  '// reads "server-id-4" (a comment: not a spelling)\n'
                  'auto a = label(prefix + "server-id-4");\n'
                  '/* "NeuronConfig" */ auto b = "/apis/neuron.aws.com/v1beta1/neuronultraservers";\n'
                  "auto c = '\"'; auto d = \"the server-id-4 label\";\n"
                  'auto e = "neuron.amazonaws.com/ultraserver-server-id-4";\n')
            result = run(root, "--check")
            self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
            self.assertIn('scheduler-extender/gang/domains.cc:2: "server-id-4" is a contract name: '
                          "use common/contracts/ultraserver_labels.h", result.stderr)
            self.assertIn('domains.cc:3: "/apis/neuron.aws.com/v1beta1/neuronultraservers"',
                          result.stderr)
            self.assertIn('domains.cc:5: "neuron.amazonaws.com/ultraserver-server-id-4" is a '
                          "contract name: use common/contracts/ultraserver_labels.h", result.stderr)
            self.assertNotIn("domains.cc:1", result.stderr)
            self.assertNotIn("NeuronConfig", result.stderr)
            self.assertNotIn("domains.cc:4", result.stderr, "prose that mentions a key is not a key")
            self.assertNotIn("common/contracts/ultraserver_labels.cc", result.stderr)

    def test_a_contract_headers_values_are_guarded_as_soon_as_it_declares_them(self):
        header = ('inline constexpr const char* kFamily = "torus_widgets_total";\n'
                  'inline constexpr std::string_view kPrefix = "widgets.example/";\n'
                  'inline constexpr const char* kPhase = "Pending";  // too generic to guard\n'
                  "inline constexpr const char* kSelector =\n"
                  '    "app in " "(a,b)";\n'
                  "inline constexpr int kCount = 4;\n"
                  'inline constexpr const char* kKey = "widgets";  // a plain word\n')
        product = ('auto a = "torus_widgets_total";\n'
                   'auto b = "widgets.example/blue";\n'
                   'auto c = "Pending";\n'
                   'auto d = "app in (a,b)";\n'
                   'auto e = "see widgets.example/ for more";\n'
                   'auto f = "widgets";\n')
        with tempfile.TemporaryDirectory() as root:
            write(root, "node-runtime/metrics/widgets.cc", product)
            self.assertEqual(run(root, "--check").returncode, 0, "no contract declares them yet")
            write(root, "common/contracts/widgets.h", header)
            result = run(root, "--check")
            self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
            for line in (1, 2, 4):
                self.assertIn(f"node-runtime/metrics/widgets.cc:{line}: ", result.stderr)
                self.assertIn("use common/contracts/widgets.h", result.stderr)
            self.assertNotIn("widgets.cc:3", result.stderr, "Pending is too generic to guard")
            self.assertNotIn("widgets.cc:5", result.stderr, "a prefix guards a literal's start")
            self.assertNotIn("widgets.cc:6", result.stderr, "a plain word is not guarded")

    def test_torus_spells_each_contract_literal_in_contracts_only(self):
        result = run(ROOT, "--check")
        self.assertNotIn("is a contract name", result.stderr)
        self.assertIn("every contract literal is spelled in common/contracts/ only", result.stdout)

    def test_torus_has_no_cycle_between_folders(self):
        result = run(ROOT, "--check")
        self.assertEqual(result.returncode, 0, result.stderr)


if __name__ == "__main__":
    unittest.main()
