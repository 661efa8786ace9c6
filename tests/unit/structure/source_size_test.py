"""No product source file is over 400 lines: a file has one job, and past 400 lines it usually
holds two. Product source is the C and C++ under the product's folders,
not tests/. A failure names each file and its line count, largest first, so the split starts
where it is most needed."""
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PRODUCT_DIRS = ("common/", "node-runtime/", "device-plugin/", "dra-driver/",
                "scheduler-extender/", "ultraserver-operator/", "kubectl-neuron/")
SOURCE_SUFFIXES = (".cc", ".h", ".c", ".cpp", ".hpp")
MAX_LINES = 400


def line_count(path):
    """Lines as `wc -l` counts them (newlines)."""
    with open(path, "rb") as handle:
        return handle.read().count(b"\n")


def oversized(root, paths, limit=MAX_LINES):
    """"path: N lines" for each product source file among `paths` over `limit`, largest first."""
    sources = [p for p in paths if p.startswith(PRODUCT_DIRS) and p.endswith(SOURCE_SUFFIXES)]
    counted = [(line_count(os.path.join(root, p)), p) for p in sources]
    return [f"{p}: {n} lines" for n, p in sorted(counted, key=lambda c: (-c[0], c[1]))
            if n > limit]


def tracked_files(root):
    listed = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                            timeout=60, check=True)
    return [p for p in listed.stdout.decode().split("\0")
            if p and os.path.isfile(os.path.join(root, p))]


class SourceSizeTest(unittest.TestCase):
    def test_files_over_the_limit_are_named_with_their_counts_largest_first(self):
        files = {"dra-driver/big.cc": 402, "common/base/bigger.h": 450,
                 "node-runtime/at_limit.cc": 400, "tests/unit/huge_test.cc": 900,
                 "scripts/tool.py": 900, "ultraserver-operator/app/notes.md": 900}
        root = self.enterContext(tempfile.TemporaryDirectory())
        for path, lines in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w", encoding="utf-8") as handle:
                handle.write("x\n" * lines)
        self.assertEqual(oversized(root, list(files)),
                         ["common/base/bigger.h: 450 lines", "dra-driver/big.cc: 402 lines"])

    def test_no_product_source_file_is_over_400_lines(self):
        found = oversized(ROOT, tracked_files(ROOT))
        self.assertEqual(found, [], f"over {MAX_LINES} lines; split each by what it does:\n"
                         + "\n".join(found))


if __name__ == "__main__":
    unittest.main()
