"""tests/bench/scheduling_throughput/: the pods and slices the benchmark creates, and each figure
it prints, from small made-up cluster state."""
import json
import os
import tempfile
import unittest

import bench_files

workload = bench_files.load("scheduling_throughput", "workload")
report = bench_files.load("scheduling_throughput", "report")
watch_pods = bench_files.load("scheduling_throughput", "watch_pods")


def run(script, *args, stdin=""):
    return bench_files.run("scheduling_throughput", script, *args, stdin=stdin)


def scheduled(name, at):
    return {"metadata": {"name": name},
            "status": {"conditions": [{"type": "PodScheduled", "status": "True",
                                       "lastTransitionTime": at}]}}


# Four devices in a ring 0-1-2-3-0 with 2 cores each: {0, 2} is not connected, {0, 1} is.
RING = {"coresPerDevice": 2, "links": [[1, 3], [0, 2], [1, 3], [2, 0]]}


class WorkloadTest(unittest.TestCase):
    def test_mixed_pods_take_the_sizes_in_turn_and_only_fit_fake_nodes(self):
        pods = workload.pods("ns", "neuron-scheduler", 8, "mixed")["items"]
        self.assertEqual([p["metadata"]["name"] for p in pods][:2], ["p00000", "p00001"])
        limits = [p["spec"]["containers"][0]["resources"]["limits"] for p in pods]
        self.assertEqual(limits[0], {"aws.amazon.com/neuroncore": "1"})
        self.assertEqual(limits[6], {"aws.amazon.com/neuron": "4"})
        self.assertEqual(limits[7], {"aws.amazon.com/neuroncore": "1"})
        self.assertEqual(pods[0]["spec"]["nodeSelector"], {"type": "kwok"})
        self.assertEqual(pods[0]["spec"]["schedulerName"], "neuron-scheduler")

    def test_four_chip_pods_ask_trn2_by_limit_or_by_claim(self):
        neuron4 = workload.pods("ns", "s", 1, "neuron4")["items"][0]["spec"]
        self.assertEqual(neuron4["nodeSelector"]["node.kubernetes.io/instance-type"], "trn2.48xlarge")
        self.assertEqual(neuron4["containers"][0]["resources"]["limits"], {"aws.amazon.com/neuron": "4"})
        dra4 = workload.pods("ns", "s", 1, "dra4")["items"][0]["spec"]
        self.assertEqual(dra4["resourceClaims"],
                         [{"name": "chips", "resourceClaimTemplateName": "four-connected-chips"}])
        self.assertEqual(dra4["containers"][0]["resources"], {"claims": [{"name": "chips"}]})

    def test_the_command_line_prints_one_list_and_bad_usage_exits_1(self):
        done = run("workload.py", "pods", "ns", "s", "3", "mixed")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(len(json.loads(done.stdout)["items"]), 3)
        template = json.dumps({"items": [{"spec": {"nodeName": "FAKE-NODE-NAME"}}]})
        done = run("workload.py", "slices", template, stdin="a\nb\n")
        self.assertEqual([i["spec"]["nodeName"] for i in json.loads(done.stdout)["items"]], ["a", "b"])
        self.assertEqual(run("workload.py", "pods", "ns").returncode, 1)


class ReportTest(unittest.TestCase):
    def test_span_counts_the_last_second(self):
        pods = {"items": [scheduled("a", "2026-01-01T00:00:00Z"), scheduled("b", "2026-01-01T00:00:03Z"),
                          {"metadata": {"name": "pending"}}]}
        self.assertEqual(report.span(pods), (2, 4.0, 0.5))
        self.assertEqual(run("report.py", "span", stdin=json.dumps(pods)).stdout, "2 4.0 0.5\n")

    def test_latency_runs_from_creation_or_the_resume_whichever_is_later_to_ready(self):
        def pod(created, ready=None):
            conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": ready}] \
                if ready else [{"type": "Ready", "status": "False", "lastTransitionTime": created}]
            return {"metadata": {"creationTimestamp": created}, "status": {"conditions": conditions}}
        resumed = report.timestamp("2026-01-01T00:00:10Z") + 0.6  # 1 s resolution: its second
        pods = {"items": [pod("2026-01-01T00:00:01Z", "2026-01-01T00:00:12Z"),  # waited from 10
                          pod("2026-01-01T00:00:20Z", "2026-01-01T00:00:21Z"),  # created later
                          pod("2026-01-01T00:00:02Z", "2026-01-01T00:00:40Z"),
                          pod("2026-01-01T00:00:03Z")]}  # not Ready: left out
        self.assertEqual(report.latency(pods, resumed), (2.0, 30.0, 3))
        self.assertEqual(run("report.py", "latency", str(resumed), stdin=json.dumps(pods)).stdout,
                         "2.0 30.0 3\n")
        self.assertEqual(report.latency({"items": [pod("2026-01-01T00:00:03Z")]}, resumed)[2], 0)

    def test_api_waits_are_the_growth_between_two_snapshots(self):
        before = ['apiserver_flowcontrol_request_wait_duration_seconds_sum{priority_level="workload-low"} 1',
                  'apiserver_flowcontrol_request_wait_duration_seconds_count{priority_level="workload-low"} 10']
        after = ['apiserver_flowcontrol_request_wait_duration_seconds_sum{priority_level="workload-low"} 3',
                 'apiserver_flowcontrol_request_wait_duration_seconds_count{priority_level="workload-low"} 20',
                 'apiserver_request_duration_seconds_sum{resource="pods",subresource="binding",verb="POST"} 0.5',
                 'apiserver_request_duration_seconds_count{resource="pods",subresource="binding",verb="POST"} 100',
                 'apiserver_request_duration_seconds_count{resource="pods",verb="GET"} 7',
                 'apiserver_request_duration_seconds_sum{resource="resourceclaims",verb="LIST"} 3',
                 'apiserver_request_duration_seconds_count{resource="resourceclaims",verb="LIST"} 150',
                 'apiserver_request_duration_seconds_count{resource="pods",verb="WATCH"} 500']
        # Background traffic (under 100 requests) and watches are left out.
        self.assertEqual(report.api_waits(report.read_metrics(before), report.read_metrics(after)),
                         ["queued_at_workload-low 10 200.0", "served_LIST_resourceclaims 150 20.0",
                          "served_POST_pods/binding 100 5.0"])

    def test_scheduler_cycle_is_the_attempts_and_mean_times_between_snapshots(self):
        before = ['scheduler_schedule_attempts_total{profile="p",result="scheduled"} 10',
                  'scheduler_scheduling_attempt_duration_seconds_sum{profile="p",result="scheduled"} 1']
        after = ['scheduler_schedule_attempts_total{profile="p",result="scheduled"} 110',
                 'scheduler_schedule_attempts_total{profile="p",result="unschedulable"} 3',
                 'scheduler_scheduling_attempt_duration_seconds_sum{profile="p",result="scheduled"} 2.5',
                 'scheduler_scheduling_algorithm_duration_seconds_sum 1.2',
                 'scheduler_scheduling_algorithm_duration_seconds_count 120',
                 'scheduler_framework_extension_point_duration_seconds_sum{extension_point="PreFilter",profile="p",status="Success"} 0.1',
                 'scheduler_framework_extension_point_duration_seconds_sum{extension_point="Score",profile="p",status="Success"} 0.001',
                 'scheduler_batch_attempts_total{profile="p",result="hint_used"} 4']
        self.assertEqual(
            report.scheduler_cycle(report.scheduler_figures(before), report.scheduler_figures(after)),
            "100 scheduled, 3 unschedulable, 0 errors; 4 on a batching hint; per scheduled pod: "
            "algorithm 10.0 ms (PreFilter 1.0; the rest is Filter and extenders), attempt to its "
            "bind 15 ms")
        # A scheduler that scheduled nothing has no times to give.
        self.assertEqual(report.scheduler_cycle({}, {}),
                         "0 scheduled, 0 unschedulable, 0 errors; 0 on a batching hint")

    def test_extender_time_is_the_mean_per_verb_and_the_binds_refused_between_snapshots(self):
        before = ['torus_extender_request_duration_seconds_sum{verb="filter"} 1',
                  'torus_extender_request_duration_seconds_count{verb="filter"} 500',
                  'torus_extender_request_duration_seconds_count{verb="bind"} 0']
        after = ['torus_extender_request_duration_seconds_sum{verb="filter"} 3',
                 'torus_extender_request_duration_seconds_count{verb="filter"} 1500',
                 'torus_extender_request_duration_seconds_sum{verb="bind"} 100',
                 'torus_extender_request_duration_seconds_count{verb="bind"} 1000',
                 'torus_extender_requests_total{verb="bind",result="error"} 4']
        self.assertEqual(report.extender_time(report.extender_figures(before), after),
                         "bind 100.0 ms x 1000, filter 2.0 ms x 1000; "
                         "binds refused: 4 of 1000 (4.0 per 1,000)")
        gangs = after + ['torus_extender_gang_filters_total{outcome="moved"} 7',
                         'torus_extender_gang_filters_total{outcome="placed"} 3',
                         'torus_extender_gang_filters_total{outcome="raced"} 0']
        self.assertTrue(report.extender_time(report.extender_figures(before), gangs)
                        .endswith("; gang filters: moved 7, placed 3"))

    def test_extender_placements_are_valid_when_asked_and_connected(self):
        nodes = {"n": RING}

        def pod(resource, count, ids, node="n"):
            return {"metadata": {"annotations": {"AWS_NEURON_IDS": ids}},
                    "spec": {"nodeName": node,
                             "containers": [{"resources": {"limits": {resource: count}}}]}}
        pods = [pod("aws.amazon.com/neuron", "2", "0,1"),        # connected devices
                pod("aws.amazon.com/neuron", "2", "0,2"),        # not connected
                pod("aws.amazon.com/neuroncore", "4", "0,1,2,3"),  # devices 0 and 1
                pod("aws.amazon.com/neuron", "2", "0"),          # fewer than asked
                pod("aws.amazon.com/neuron", "1", "0", node="gone")]
        placed = report.placements(nodes, pods, [], "extender")
        self.assertEqual(placed[2], ("n", 2, [0, 1]))
        self.assertEqual(report.valid_count(nodes, placed), 2)

    def test_a_gang_is_valid_only_whole_and_on_nodes_of_its_own(self):
        def member(gang, name):
            return {"metadata": {"name": name, "labels": {"torus.dev/gang": gang,
                                                          "torus.dev/gang-size": "2"}}}
        pods = [member("whole", "a"), member("whole", "b"), member("part", "c"),
                member("part", "d"), member("shared", "e"), member("shared", "f")]
        placed = [("n1", 1, [0]), ("n2", 1, [0]), ("n1", 1, [1]), (None, 0, []),
                  ("n3", 1, [0]), ("n3", 1, [1])]
        kept = report.whole_gangs_only(pods, placed)
        self.assertEqual(kept[:2], placed[:2])
        self.assertEqual(kept[2:], [(None, 0, [])] * 4)

    def test_workload_gangs_are_whole_trn2_nodes_in_fours(self):
        items = workload.pods("ns", "s", 8, "gang16")["items"]
        labels = [p["metadata"]["labels"] for p in items]
        self.assertEqual([l["torus.dev/gang"] for l in labels], ["job-0000"] * 4 + ["job-0001"] * 4)
        self.assertEqual(labels[0]["torus.dev/gang-size"], "4")
        self.assertEqual(items[0]["spec"]["containers"][0]["resources"]["limits"],
                         {"aws.amazon.com/neuron": "16"})
        self.assertNotIn("labels", workload.pods("ns", "s", 1, "neuron16")["items"][0]["metadata"])
        self.assertNotEqual(run("workload.py", "pods", "ns", "s", "6", "gang16").returncode, 0)

    def test_dra_placements_are_four_chips_of_the_pods_own_node(self):
        nodes = {"n": {"links": [[1], [0, 2], [1, 3], [2]]}}
        pods = [{"metadata": {"name": "p"}, "spec": {"nodeName": "n"}}]

        def claim(pool, chips):
            return {"status": {"reservedFor": [{"resource": "pods", "name": "p"}],
                               "allocation": {"devices": {"results": [
                                   {"pool": pool, "device": f"neurondevice{c}"} for c in chips]}}}}
        placed = report.placements(nodes, pods, [claim("n", [0, 1, 2, 3]), claim("other", [0, 1, 2, 3]),
                                                 claim("n", [0, 1, 2])], "dra")
        self.assertEqual(placed, [("n", 4, [0, 1, 2, 3]), ("n", 4, []), ("n", 4, [0, 1, 2])])
        self.assertEqual(report.valid_count(nodes, placed), 1)

    def test_ratio_prints_two_decimals_and_the_note(self):
        self.assertEqual(run("report.py", "ratio", "dra", "extender4", "30", "40", "(target)").stdout,
                         "dra / extender4: 0.75x (target)\n")
        self.assertEqual(run("report.py", "ratio", "a", "b", "1", "3").stdout, "a / b: 0.33x \n")

    def test_tables_have_a_column_per_run_that_wrote_its_files(self):
        with tempfile.TemporaryDirectory() as state:
            for namespace, text in (("cpu-bench-default", "etcd 1.5\nkwok 0.5\n"),
                                    ("cpu-bench-dra", "etcd 2.0\n"),
                                    ("api-bench-dra", "queued_at_x 10 2.5\n")):
                with open(os.path.join(state, namespace), "w") as f:
                    f.write(text)
            lines = list(report.tables(state))
        self.assertEqual(lines[0], "\nCPU SECONDS WHILE THE PODS WERE SCHEDULED (per component)")
        self.assertEqual(lines[1].split(), ["counting", "dra"])
        self.assertEqual(lines[3].split(), ["kwok", "0.5", "-"])
        self.assertEqual(lines[4].split(), ["all", "2.0", "2.0"])
        self.assertIn("queued at x", "\n".join(lines))
        with tempfile.TemporaryDirectory() as empty:
            self.assertEqual(list(report.tables(empty)), [])

    def test_the_plot_spec_leaves_out_runs_that_did_not_run(self):
        spec = report.plot_spec("x.png", "trn2.48xlarge:10", "20", "v1.37.2",
                                ["10", "5", "nan", "4", "3.5", "nan", "nan", "nan"])
        self.assertEqual(spec["series"][0]["y"], [10.0, None])
        self.assertEqual(spec["series"][2]["y"], [None, 3.5])
        self.assertEqual(len(spec["series"]), 3, "whole chips did not run: no legend entry")
        self.assertEqual(len(spec["series"][0]["x"]), 2, "no whole-node run: no group of bars")
        gangs = report.plot_spec("x.png", "n", "20", "v", ["nan"] * 6 + ["8", "7"])
        self.assertEqual([s["y"] for s in gangs["series"]], [[8.0], [7.0]])
        self.assertEqual(run("report.py", "plot-spec", "x").returncode, 1)


class PlacedOverTimeTest(unittest.TestCase):
    def test_a_point_per_second_with_the_pods_scheduled_by_then(self):
        def pod(when, status="True"):
            return {"status": {"conditions": [{"type": "PodScheduled", "status": status,
                                               "lastTransitionTime": when}]}}
        pods = {"items": [pod("2026-12-02T10:00:01Z"), pod("2026-12-02T10:00:00Z"),
                          pod("2026-12-02T10:00:01Z"), pod("2026-12-02T10:00:03Z"),
                          pod("2026-12-02T10:00:02Z", "False")]}
        self.assertEqual(report.placed_over_time(pods), [(0.0, 1), (1.0, 3), (3.0, 4)])

    def test_the_spec_has_a_line_for_each_run_that_left_its_pods(self):
        with tempfile.TemporaryDirectory() as state:
            with open(os.path.join(state, "pods-bench-extender.json"), "w") as out:
                json.dump({"items": []}, out)
            spec = report.placed_over_time_spec("x.png", "n", "2", "v", state)
        self.assertEqual([s["name"] for s in spec["series"]],
                         ["neuron-scheduler + extender (mixed)"])
        self.assertEqual(spec["kind"], "line")


def fake_kubectl(directory, body):
    """An executable standing in for kubectl: a shell script that ignores its arguments."""
    path = os.path.join(directory, "kubectl")
    with open(path, "w", encoding="utf-8") as script:
        script.write("#!/bin/sh\n" + body)
    os.chmod(path, 0o755)
    return path


class WatchPodsTest(unittest.TestCase):
    def test_counts_each_pod_once_by_its_latest_line(self):
        pods = {}
        for line in ["a <none> <none>", "b n1 False", "a n2 False", "a n2 True",
                     "warning: x"]:
            watch_pods.apply_line(pods, line)
        self.assertEqual(watch_pods.reached(pods, "bound"), 2)
        self.assertEqual(watch_pods.reached(pods, "ready"), 1)

    def test_stops_the_watch_as_soon_as_the_count_is_reached(self):
        with tempfile.TemporaryDirectory() as tmp:
            # The watch would go on for a minute after the second pod is bound.
            kubectl = fake_kubectl(tmp, "printf 'a n1 <none>\\nb <none> <none>\\n'; sleep 1; "
                                   "echo 'b n2 False'; sleep 60\n")
            done = run("watch_pods.py", kubectl, "config", "ns", "bound", "2", "30")
        self.assertEqual((done.returncode, done.stdout), (0, "2\n"), done.stderr)

    def test_a_watch_that_ends_early_is_started_again(self):
        with tempfile.TemporaryDirectory() as tmp:
            # Each start reports one more Ready pod, then its watch ends.
            counter = os.path.join(tmp, "starts")
            kubectl = fake_kubectl(tmp, f"echo x >> {counter}; n=$(wc -l < {counter}); "
                                   "i=1; while [ $i -le $n ]; do echo \"p$i n True\"; i=$((i+1)); done\n")
            done = run("watch_pods.py", kubectl, "config", "ns", "ready", "3", "30")
        self.assertEqual((done.returncode, done.stdout), (0, "3\n"), done.stderr)

    def test_the_deadline_ends_the_wait_with_the_count_so_far(self):
        with tempfile.TemporaryDirectory() as tmp:
            kubectl = fake_kubectl(tmp, "echo 'a n1 <none>'; sleep 60\n")
            done = run("watch_pods.py", kubectl, "config", "ns", "bound", "2", "1")
        self.assertEqual((done.returncode, done.stdout), (1, "1\n"), done.stderr)

    def test_bad_usage_is_named(self):
        done = run("watch_pods.py", "kubectl", "config", "ns", "scheduled", "2", "1")
        self.assertEqual(done.returncode, 1)
        self.assertIn("bound|ready", done.stderr)


if __name__ == "__main__":
    unittest.main()
