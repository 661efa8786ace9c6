"""No shell script tracked by git runs Python written inline (`python3 -c '...'`, `python3 - <<PY`,
`python3 <<PY`): such Python has no name, no test and no linter, and it grows. It belongs in a
named tool with its own tests (the end-to-end suites' tests/e2e/cluster/e2e_checks.py and its
checks/, scripts/*.py, tests/bench/**/*.py). A failure names each file and line.

One form stays allowed: `-c 'import module'` alone, which only asks whether a module is installed
(scripts/bench-venv.sh) and holds no logic to test."""
import os
import re
import subprocess
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

# The interpreter (bare, or a path ending in it, quoted or not), any options, then a program given
# on the command line (-c) or read from standard input (`-` or a here-document).
INLINE = re.compile(r"""\bpython3?["']?(\s+-[A-Za-z]+)*?\s+(-c\b|-(\s|$)|<<)""")
IMPORT_PROBE = re.compile(r"""\s-c\s+(['"])import [\w.]+\1""")
SHEBANG = re.compile(rb"^#!.*\b(ba|da|k|z)?sh\b")


def is_shell_script(root, path):
    if path.endswith((".sh", ".bash")):
        return True
    try:
        with open(os.path.join(root, path), "rb") as handle:
            return bool(SHEBANG.match(handle.readline()))
    except OSError:
        return False


def inline_python(root, paths):
    """"path:line: text" for each line of a shell script among `paths` that runs inline Python."""
    found = []
    for path in sorted(p for p in paths if is_shell_script(root, p)):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                code = line.strip()
                if code.startswith("#") or not INLINE.search(code) or IMPORT_PROBE.search(code):
                    continue
                found.append(f"{path}:{number}: {code}")
    return found


def tracked_files(root):
    listed = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                            timeout=60, check=True)
    return [p for p in listed.stdout.decode().split("\0") if p]


class InlinePythonTest(unittest.TestCase):
    def test_each_form_of_inline_python_is_found_with_its_file_and_line(self):
        root = self._tree({
            "a.sh": "ok\nk get x | python3 -c 'import json, sys; print(1)'\n",
            "cases/b.sh": "python3 - \"$DIR\" <<'PY'\nprint(1)\nPY\n",
            "c.bash": "python - <<EOF\nEOF\nx=$(python3 -u -c 'print(2)')\npython3 <<PY\nPY\n",
            ".ci/run": "#!/usr/bin/env bash\n\"$venv/bin/python\" -c \"print(3)\"\n",
        })
        found = inline_python(root, self.paths)
        self.assertEqual([f.split(": ")[0] for f in found],
                         [".ci/run:2", "a.sh:2", "c.bash:1", "c.bash:3", "c.bash:4", "cases/b.sh:1"])
        self.assertIn("a.sh:2: k get x | python3 -c 'import json, sys; print(1)'", found)

    def test_named_tools_comments_and_an_import_probe_pass(self):
        root = self._tree({
            "a.sh": "python3 tests/e2e/cluster/e2e_checks.py pod-on-device 3 4\n"
                    "python3 -m unittest discover\n# python3 -c was here once\n"
                    "\"$venv/bin/python\" -c 'import matplotlib' 2> /dev/null\n",
            "notes.md": "python3 -c 'print(1)'\n",
            "tool.py": "#!/usr/bin/env python3\nprint(\"python3 -c\")\n",
        })
        self.assertEqual(inline_python(root, self.paths), [])

    def test_no_tracked_shell_script_runs_inline_python(self):
        found = inline_python(ROOT, tracked_files(ROOT))
        self.assertEqual(found, [], "inline Python in shell; move it into a named, tested tool:\n"
                         + "\n".join(found))

    def _tree(self, files):
        root = self.enterContext(tempfile.TemporaryDirectory())
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w", encoding="utf-8") as handle:
                handle.write(text)
        self.paths = list(files)
        return root


if __name__ == "__main__":
    unittest.main()
