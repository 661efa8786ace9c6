"""docs/driver-interface.md lists every path component, file and ioctl through which the product
reads the Neuron driver: a name the product composes into a driver path, a counter it reads or an
ioctl it issues, missing from the page, fails here. Every product file that reaches the driver's
files is one of the readers scanned, so a new reader cannot slip past the list."""
import os
import re
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DOC = os.path.join(ROOT, "docs", "driver-interface.md")

# The product files that read the driver's sysfs, /dev, kernel log or ioctls.
READERS = [
    "node-runtime/discovery/discovery_roots.h",
    "node-runtime/discovery/device_scan.cc",
    "node-runtime/discovery/discover_node.cc",
    "node-runtime/discovery/driver_counters.h",
    "node-runtime/discovery/lnc_config.cc",
    "node-runtime/discovery/neuronlink_attributes.h",
    "node-runtime/discovery/pci_functions.cc",
    "node-runtime/discovery/ultraserver.cc",
    "node-runtime/discovery/kernel_ring.cc",
    "node-runtime/discovery/driver_bdf_query.cc",
    "node-runtime/reset/core_reset.cc",
    "node-runtime/health/deep_check/device_memory.cc",
    "node-runtime/health/deep_check/link_judgement.cc",
    "node-runtime/metrics/device_stats.cc",
    "node-runtime/agent/debug_report.cc",
    "node-runtime/agent/node_agent.cc",
]
# Files whose every string literal is a driver name (counter and attribute tables).
NAME_TABLES = {"node-runtime/discovery/driver_counters.h", "node-runtime/discovery/ultraserver.cc"}
# What marks a file as reaching the driver's files or ioctls.
REACH = re.compile(r"\broots\.sys\b|\bneuronClass\(\)|\bdeviceDir\(|\bresetFile\(|::ioctl\(")
PRODUCT_DIRS = ["common", "device-plugin", "dra-driver", "node-runtime", "scheduler-extender",
                "kubectl-neuron"]


def source_text(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        return re.sub(r"//[^\n]*", "", handle.read())


def names_read(path):
    """The path components `path` composes (a literal beside the `/` of std::filesystem) and, for
    the name tables, every literal; plus the driver ioctls it names."""
    text = source_text(path)
    names = set(re.findall(r'/\s*"([A-Za-z0-9_.\-]+)"', text))
    names |= set(re.findall(r'"([A-Za-z0-9_.\-]+)"\s*/', text))
    if path in NAME_TABLES:
        names |= set(re.findall(r'"([a-z0-9_]+)"', text))
    for own in {path, re.sub(r"\.cc$", ".h", path)}:
        if os.path.exists(os.path.join(ROOT, own)):
            with open(os.path.join(ROOT, own), encoding="utf-8") as handle:
                names |= set(re.findall(r"\bNEURON_IOCTL_[A-Z0-9_]+", handle.read()))
    return names


def missing_from(doc, names):
    return sorted(name for name in names
                  if not re.search(r"(?<![A-Za-z0-9_\-])" + re.escape(name) + r"(?![A-Za-z0-9_\-])",
                                   doc))


class DriverInterfaceTest(unittest.TestCase):
    def setUp(self):
        with open(DOC, encoding="utf-8") as handle:
            self.doc = handle.read()

    def test_every_name_the_product_reads_is_listed(self):
        for path in READERS:
            with self.subTest(reader=path):
                self.assertEqual(missing_from(self.doc, names_read(path)), [],
                                 f"{path} reads these, docs/driver-interface.md lists them not")

    def test_the_scan_finds_names_and_a_missing_one_fails(self):
        names = names_read("node-runtime/discovery/discovery_roots.h")
        self.assertIn("neuron-driver", names)
        self.assertIn("NEURON_IOCTL_DEVICE_BDF_EXT",
                      names_read("node-runtime/discovery/driver_bdf_query.cc"))
        self.assertIn("mem_ecc_repairable_uncorrected",
                      names_read("node-runtime/discovery/driver_counters.h"))
        self.assertEqual(missing_from(self.doc.replace("neuron-driver", "x"), names),
                         ["neuron-driver"])

    def test_every_file_that_reaches_the_driver_is_a_scanned_reader(self):
        unlisted = []
        for top in PRODUCT_DIRS:
            for directory, _, files in os.walk(os.path.join(ROOT, top)):
                for name in files:
                    if not name.endswith((".cc", ".h")):
                        continue
                    path = os.path.relpath(os.path.join(directory, name), ROOT)
                    if "/simulator/" in path or path in READERS:
                        continue
                    if REACH.search(source_text(path)):
                        unlisted.append(path)
        self.assertEqual(unlisted, [], "add them to READERS (and their names to the page)")

    def test_every_reader_is_named_on_the_page(self):
        for path in READERS:
            short = path.split("node-runtime/", 1)[-1]
            with self.subTest(reader=path):
                self.assertTrue(short.split("/", 1)[0] in self.doc or short in self.doc, path)


if __name__ == "__main__":
    unittest.main()
