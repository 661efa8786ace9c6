"""scripts/local-cluster.sh's command line: every option parse_options (scripts/cluster/options.sh)
knows is in --help and the other way round; bad values and unknown words exit 2 naming them; and
each sourced helper's header names the globals it reads from the others. No cluster needed."""
import os
import re
import subprocess
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "local-cluster.sh")
CLUSTER = os.path.join(ROOT, "scripts", "cluster")
# Set by bash or the environment, not by another helper.
SHELL_VARIABLES = {"BASH_REMATCH", "BASH_SOURCE", "HOME", "IFS", "PATH", "SECONDS", "XDG_CACHE_HOME"}


def run(*args):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TORUS_CACHE=cache)
        return subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True, timeout=30,
                              check=False, env=env)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def parsed_options():
    """The options parse_options has a branch for (case patterns that start with --)."""
    body = read(os.path.join(CLUSTER, "options.sh")).split("parse_options() {", 1)[1]
    patterns = re.findall(r"^ +([-\w=*| ]+)\)", body, re.M)
    return {word.split("=")[0] for p in patterns for word in p.split(" | ") if word.startswith("--")}


def documented_options(help_text):
    return set(re.findall(r"^ +(?:-h, )?(--[\w-]+)", help_text, re.M))


def reads_paragraph(text):
    """The "# Reads:" paragraph of a helper's header comment (up to "# Sets:" or its end)."""
    lines, inside = [], False
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        inside = (inside or line.startswith("# Reads:")) and not line.startswith("# Sets:")
        if inside:
            lines.append(line)
    return "\n".join(lines)


class OptionsTest(unittest.TestCase):
    def test_help_names_every_option_parsed_and_no_other(self):
        done = run("--help")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(documented_options(done.stdout), parsed_options())
        self.assertGreaterEqual(len(parsed_options()), 18)
        for command in ("up [options]", "status", "down", "image", "restart NAME", "stop NAME",
                        "shell NODE"):
            self.assertIn(f"scripts/local-cluster.sh {command}", done.stdout)
        self.assertEqual(run("up", "--dra", "--help").stdout, done.stdout)

    def test_no_command_prints_the_help_and_fails(self):
        done = run()
        self.assertEqual(done.returncode, 1)
        self.assertIn("Options of `up`:", done.stdout)

    def test_a_bad_value_exits_2_naming_the_option_and_what_it_takes(self):
        for option, value, want in (
                ("--placers", "kueue,volcano", "kueue, lws or both (kueue,lws)"),
                ("--control-plane-qps", "150", "QPS:BURST (e.g. 150:300)"),
                ("--node-monitor-grace-period", "50", "a duration such as 50s or 2m"),
                ("--fake-node-lease-seconds", "0", "whole seconds"),
                ("--scheduler-feature-gates", "Gate=on",
                 "Name=true|false,... (e.g. SchedulerPreQueueingHints=true)")):
            with self.subTest(option=option):
                done = run("up", f"{option}={value}")
                self.assertEqual(done.returncode, 2)
                self.assertEqual(done.stderr, f"local-cluster: {option} takes {want}, not '{value}'\n")

    def test_unknown_words_exit_2(self):
        done = run("up", "--node=trn2.48xlarge:1")
        self.assertEqual((done.returncode, done.stderr),
                         (2, "local-cluster: unknown argument '--node=trn2.48xlarge:1' (see --help)\n"))
        done = run("launch")
        self.assertEqual(done.returncode, 2)
        self.assertIn("unknown command 'launch' (up, down, status, image, restart, stop, start, shell)",
                      done.stderr)

    def test_state_under_a_directory_each_node_replaces_is_refused(self):
        done = run("up", "--state-dir=/proc/torus")
        self.assertEqual(done.returncode, 2)
        self.assertIn("is under /dev, /sys or /proc", done.stderr)

    def test_status_of_an_empty_state_directory_says_so(self):
        with tempfile.TemporaryDirectory() as state:
            done = run("status", f"--state-dir={state}")
        self.assertEqual((done.returncode, done.stdout), (1, f"no local cluster in {state}\n"))


class HelperHeadersTest(unittest.TestCase):
    def test_each_helper_header_names_the_globals_it_reads(self):
        for name in sorted(os.listdir(CLUSTER)):
            if not name.endswith(".sh") or name == "build-components.sh":
                continue  # build-components.sh is a program of its own, not sourced
            text = read(os.path.join(CLUSTER, name))
            code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
            used = set(re.findall(r"\$\{?!?([A-Z][A-Z0-9_]*)", code))
            # A heredoc's NAME=$NAME lines write a file; they assign nothing.
            statements = re.sub(r"<<-?'?(\w+)'?\n.*?\n\1\n", "\n", code, flags=re.S)
            assigned = set(re.findall(r"(?:^|[\s;(])(?:local |: \"\$\{)?([A-Z][A-Z0-9_]*)(?:\+?=|:=)",
                                      statements, re.M))
            said = set(re.findall(r"\b[A-Z][A-Z0-9_]+\b", reads_paragraph(text)))
            with self.subTest(helper=name):
                self.assertEqual(sorted(used - assigned - SHELL_VARIABLES - said), [],
                                 f"scripts/cluster/{name}: name these in its header comment")


if __name__ == "__main__":
    unittest.main()
