"""The collectives benchmarks' Python: mpi_report.py (collectives_vs_mpi.sh), report.py's settings
and last-error (collectives_vs_peers.sh), libccl.py and fi_version.py, on small made-up runs."""
import json
import os
import stat
import tempfile
import unittest
import zipfile

import bench_files

mpi_report, report, libccl, fi_version = (bench_files.load("peers", name) for name in
                                          ("mpi_report", "report", "libccl", "fi_version"))


def run(script, *args, stdin=""):
    return bench_files.run("peers", script, *args, stdin=stdin)


class MpiReportTest(unittest.TestCase):
    def test_the_median_skips_lines_that_are_not_json_and_fails_on_one_bad_check(self):
        runs = '{"busbw_GBps": 3, "check": "ok"}\nmpirun: warning\n{"busbw_GBps": 1, "check": "ok"}\n'
        self.assertEqual(run("mpi_report.py", "median", "busbw_GBps", stdin=runs).stdout, "2.0000 ok\n")
        runs += '{"busbw_GBps": 2, "check": "mismatch"}\n'
        self.assertEqual(mpi_report.median("busbw_GBps", runs.splitlines()), ("2.0000", "FAIL"))
        self.assertEqual(mpi_report.median("busbw_GBps", ["", "junk"]), ("nan", "FAIL"))

    def test_a_ratio_above_1_means_ours_is_faster(self):
        self.assertEqual(mpi_report.ratio("2", "4", "time_us"), "2.00x")
        self.assertEqual(mpi_report.ratio("6", "4", "busbw_GBps"), "1.50x")
        self.assertEqual(mpi_report.ratio("0", "4", "time_us"), "n/a")
        self.assertEqual(mpi_report.ratio("nan", "4", "busbw_GBps"), "nanx")

    def test_the_summary_sets_ours_against_open_mpi_and_the_memory_bound(self):
        self.assertEqual(run("mpi_report.py", "summary", "5", "4", "2", "3", "2").stdout,
                         "allreduce 2r 64MiB: 2.00x Open MPI (target >= 2x), 80% of the memory "
                         "bound 5.00 GB/s (target >= 50%)\n"
                         "reducescatter 2r 64MiB vs half an Open MPI allreduce: 1.50x\n")

    def test_the_plot_spec_has_both_sides_and_the_bound(self):
        spec = json.loads(run("mpi_report.py", "plot-spec", "x.png", "5.25", "2026-01-02", "8,64",
                              "0.1,0.5", "0.2,nan").stdout)
        self.assertEqual(spec["series"][0]["x"], [8.0, 64.0])
        self.assertEqual(spec["series"][1]["y"][0], 0.2)
        self.assertEqual(spec["hlines"][0]["y"], 5.25)
        self.assertIn("2026-01-02", spec["note"])
        self.assertEqual(run("mpi_report.py", "nope").returncode, 1)


class PeersReportTest(unittest.TestCase):
    def test_last_error_reads_the_last_run_only(self):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as results:
            results.write('{"error": "old"}\n{"time_us": 1}\n')
            results.flush()
            self.assertEqual(run("report.py", "last-error", results.name).stdout, "\n")
            results.write('{"error": "mpirun: no slots"}\n')
            results.flush()
            self.assertEqual(report.last_error(results.name), "mpirun: no slots")

    def test_settings_keep_who_ran_who_did_not_and_why(self):
        with tempfile.TemporaryDirectory() as work:
            not_run = os.path.join(work, "not-run.tsv")
            with open(not_run, "w") as f:
                f.write("mpich\tall\tpip failed: a\tb\n\n")
            path = os.path.join(work, "settings.json")
            done = run("report.py", "settings", path, "2.5", "10", "1.25", "5", "3", "100",
                       "summary.json", "plot.png", "plot.json", "ours openmpi", "ours@impi",
                       not_run, "short line", "ours: v1", "openmpi: v4")
            self.assertEqual(done.returncode, 0, done.stderr)
            with open(path) as f:
                written = json.load(f)
        self.assertEqual(written["memory_bound_GBps"], 2.5)
        self.assertEqual(written["runs"], 5)
        self.assertEqual(written["participants"],
                         {"shm": ["ours", "openmpi"], "tcp": ["ours@impi"], "sweep": ["ours", "openmpi"]})
        self.assertEqual(written["not_run"], [{"who": "mpich", "mode": "all", "error": "pip failed: a\tb"}])
        self.assertEqual(written["versions"], ["ours: v1", "openmpi: v4"])
        self.assertEqual(written["labels"]["ours"], "Torus (neuron-cc-bench)")
        self.assertEqual(list(written)[0], "memory_bound_GBps")


class PeerInstallTest(unittest.TestCase):
    def test_libccl_comes_out_of_the_wheel_executable(self):
        with tempfile.TemporaryDirectory() as venv:
            os.makedirs(os.path.join(venv, "wheels"))
            os.makedirs(os.path.join(venv, "lib"))
            wheel = os.path.join(venv, "wheels", "oneccl-1.2-py3-none-any.whl")
            with zipfile.ZipFile(wheel, "w") as z:
                z.writestr("oneccl-1.2.data/data/lib/libccl.so.2", b"\x7fELF...")
            done = run("libccl.py", venv, "1.2")
            self.assertEqual(done.returncode, 0, done.stderr)
            target = os.path.join(venv, "lib", "libccl.so.2")
            with open(target, "rb") as f:
                self.assertEqual(f.read(), b"\x7fELF...")
            self.assertTrue(os.stat(target).st_mode & stat.S_IXUSR)
            self.assertEqual(run("libccl.py", venv, "9.9").returncode, 1)  # no such wheel

    def test_fi_version_unpacks_major_and_minor(self):
        self.assertEqual(fi_version.version_text((1 << 16) | 17), "1.17")
        self.assertEqual(run("fi_version.py", "/nonexistent/libfabric.so.1").returncode, 1)


if __name__ == "__main__":
    unittest.main()
