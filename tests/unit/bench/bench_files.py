"""What the tests of tests/bench/'s Python share: each file loaded as a module by its path (they
are scripts in folders, not a package), and run as the benchmark scripts run it."""
import importlib.util
import os
import subprocess
import sys

BENCH = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "bench"))


def load(folder, name):
    """tests/bench/FOLDER/NAME.py as a module."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH, folder, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(folder, script, *args, stdin=""):
    """python3 tests/bench/FOLDER/SCRIPT ARGS... with STDIN, bounded."""
    return subprocess.run([sys.executable, os.path.join(BENCH, folder, script), *args], input=stdin,
                          capture_output=True, text=True, timeout=30, check=False)
