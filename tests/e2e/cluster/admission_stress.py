#!/usr/bin/env python3
"""Admission under churn on the real local cluster: short-lived pods of mixed Neuron
requests arrive in bursts, with no wait between them for anything the cluster does, and the node
agent is restarted in the middle. A pod Torus places must run or wait, never fail admission.

Checks, once every pod has ended (bounded by --timeout):
  - no pod failed (UnexpectedAdmissionError or anything else), every one Succeeded;
  - each container saw exactly as many cores as it asked for;
  - no two containers ran on one core at the same time (each records its start and end itself,
    on the one node's clock): the agent keeps kubelet from giving one set to two pods and refuses
    the start of a container whose cores another live pod holds, so this always fails the run;
  - each set is NeuronLink-connected. Kubelet, not Torus, picks the ids it passes to Allocate, and
    under this churn it was seen to pick a set of its own past the plugin's preference. With
    --disconnected-as-findings those sets are printed as findings and do not fail the run.

With --node, it also watches the Node and reports how long after the API showed a pod ended its
ids were reused: the agent's torus.dev/kubelet-unavailable gave them back to the other resource
(the extender offers them to it only then, after kubelet has them), or another pod was bound on
them first. The three slowest are printed stage by stage.

Prints progress while it waits and a summary; exits 1 when a check fails, 2 on a usage error.
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks.admission_timeline import (explain, pod_lifetimes, release_timeline,  # noqa: E402
                                      withheld_by_report)
from checks.ids import expand_ids  # noqa: E402
from checks.pods import neighbours_in, why_not_succeeded  # noqa: E402
from kube_watch import Kube, Watch  # noqa: E402
from neuronlink import connected  # noqa: E402

NAMESPACE = "e2e"

POD_TEMPLATE = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {namespace}
  labels: {{e2e: neuron, stress: {run}}}
spec:
  schedulerName: {scheduler}
  {node_selector}
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: public.ecr.aws/docker/library/debian:bookworm-slim
      command:
        - sh
        - -c
        - >-
          start=$(date +%s.%N); sleep {stay}; end=$(date +%s.%N);
          {{ echo "CORES=$NEURON_RT_VISIBLE_CORES";
          echo "DEVICES=$(cd /dev && ls -d neuron[0-9]* | tr '\\n' ' ')";
          echo "START=$start"; echo "END=$end"; }} > /dev/termination-log
      resources:
        limits:
          aws.amazon.com/{resource}: {count}
"""


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubectl", required=True)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--scheduler", default="neuron-scheduler")
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--mix", default="neuroncore:1,neuroncore:4,neuron:1,neuron:4,neuron:16",
                        help="RESOURCE:COUNT choices, picked uniformly")
    parser.add_argument("--restart-agent-after", default="",
                        help="comma list of pod counts after which the node agent is restarted")
    parser.add_argument("--run", default="stress", help="label value and pod name prefix")
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--node-dir", required=True, help="the simulated node's tree (sys/...)")
    parser.add_argument("--cores-per-device", type=int, required=True)
    parser.add_argument("--timeout", type=int, default=900, help="seconds for all pods to end")
    parser.add_argument("--node", default="",
                        help="the node the pods run on (nodeSelector), whose agent's report to "
                        "time (--node-dir is its tree)")
    parser.add_argument("--agent-logs", default="",
                        help="a directory to keep each restarted agent's log in (kubelet deletes "
                        "a deleted pod's logs, and a stopping agent logs what it waited for)")
    parser.add_argument("--disconnected-as-findings", action="store_true",
                        help="report sets that are not NeuronLink-connected without failing "
                        "(kubelet's own choice); cores run on twice always fail")
    args = parser.parse_args()
    try:
        args.mix = [(r, int(c)) for r, c in (item.split(":") for item in args.mix.split(","))]
        args.restart_agent_after = {int(n) for n in args.restart_agent_after.split(",") if n}
    except ValueError as error:
        parser.error(f"--mix or --restart-agent-after: {error}")
    return args


def release_delays(pod_events, node_events, cores_per_device):
    """[(seconds, pod, ended at)]: from each pod's end (its first Succeeded event) until its ids
    were reused: the first report of the agent that no longer withholds from the other resource
    the ids only that pod made it withhold, or the bind of another pod on any of its cores,
    whichever came first. (A pod of the same resource bound on them at once keeps them withheld
    from the other resource, rightly, until it ends in turn: that is reuse, not a slow
    give-back.) Pods without the extender's AWS_NEURON_IDS are skipped (their ids are not on the
    pod)."""
    lifetimes = pod_lifetimes(pod_events, cores_per_device)
    reports = [(at, *withheld) for at, node in node_events
               if (withheld := withheld_by_report(node)) is not None]

    def withheld_through_other(devices_held, ids):
        """(devices withheld as neuron, cores withheld as neuroncore) by a pod holding `ids`."""
        if devices_held:
            return set(), {d * cores_per_device + c for d in ids for c in range(cores_per_device)}
        return {core // cores_per_device for core in ids}, set()

    live = {}  # pod name -> (devices withheld, cores withheld), while it runs
    delays = []
    for at, pod in pod_events:
        name = pod["metadata"]["name"]
        ids = set(expand_ids(pod["metadata"].get("annotations", {}).get("AWS_NEURON_IDS", "")))
        if not ids:
            continue
        devices_held = "aws.amazon.com/neuron" in pod["spec"]["containers"][0]["resources"]["limits"]
        if pod["status"].get("phase") not in ("Succeeded", "Failed"):
            live[name] = withheld_through_other(devices_held, ids)
            continue
        if name not in live:
            continue
        devices, cores = live.pop(name)
        for other_devices, other_cores in live.values():
            devices -= other_devices
            cores -= other_cores
        if not devices and not cores:
            continue
        mine = lifetimes[name]["cores"]
        reused = min((entry["bound"] for other, entry in lifetimes.items()
                      if other != name and entry["bound"] is not None and entry["bound"] >= at
                      and entry["cores"] & mine), default=None)
        for report_at, unhealthy_devices, unhealthy_cores in reports:
            if report_at > at and not (devices & unhealthy_devices) and not (cores & unhealthy_cores):
                reused = report_at if reused is None else min(reused, report_at)
                break
        if reused is not None:
            delays.append((reused - at, name, at))
    return delays


def follow_agent_logs(kube, args, followers):
    """Starts `kubectl logs --follow` of the node agent's pods into --agent-logs, once per pod:
    each ends when its container does."""
    on_node = ["--field-selector", f"spec.nodeName={args.node}"] if args.node else []
    for pod in kube.items("pods", "-n", "kube-system", "-l",
                          "app.kubernetes.io/component=node-agent", *on_node):
        name = pod["metadata"]["name"]
        if name in followers or pod["status"].get("phase") != "Running":
            continue
        with open(os.path.join(args.agent_logs, f"agent-{name}.log"), "w") as out:
            followers[name] = subprocess.Popen(
                kube.base + ["logs", "--follow", "-n", "kube-system", name],
                stdout=out, stderr=subprocess.STDOUT)


def longest_list_hold(kube, args, followers, since):
    """The longest the agents on the node held a pod-resources List back during the run, in ms,
    from their logs (they log holds of 500 ms or more, with held_ms); None when none was that
    long. `since` is the run's start as the logs' UTC timestamps write it."""
    texts = []
    for name in followers:
        with open(os.path.join(args.agent_logs, f"agent-{name}.log")) as log:
            texts.append(log.read())
    on_node = ["--field-selector", f"spec.nodeName={args.node}"] if args.node else []
    for pod in kube.items("pods", "-n", "kube-system", "-l",
                          "app.kubernetes.io/component=node-agent", *on_node):
        try:
            texts.append(kube.run("logs", "-n", "kube-system", pod["metadata"]["name"]))
        except subprocess.CalledProcessError:
            continue  # not started yet: it held nothing
    longest = None
    for text in texts:
        for line in text.splitlines():
            if "List held back" not in line or line[:24] < since:
                continue
            for field in line.split():
                if field.startswith("held_ms="):
                    held = int(field[len("held_ms="):])
                    longest = held if longest is None else max(longest, held)
    return longest


def submit(kube, args, rng, followers):
    """Creates the pods in bursts of 1-25, 0-2 s apart; restarts the agent where asked. Returns
    the times (monotonic) the agent's pod was deleted."""
    started = time.monotonic()
    made = 0
    restarts = []
    while made < args.pods:
        burst = min(rng.randint(1, 25), args.pods - made)
        documents = []
        for _ in range(burst):
            resource, count = rng.choice(args.mix)
            documents.append(POD_TEMPLATE.format(
                name=f"{args.run}-{made:03d}-{resource}-{count}", namespace=NAMESPACE, run=args.run,
                scheduler=args.scheduler, stay=f"{rng.uniform(0, 3):.1f}", resource=resource,
                count=count,
                node_selector=("nodeSelector: {kubernetes.io/hostname: %s}" % args.node
                               if args.node else "")))
            made += 1
            if made in args.restart_agent_after:
                kube.run("apply", "-f", "-", stdin="---\n".join(documents))
                documents = []
                if args.agent_logs:
                    follow_agent_logs(kube, args, followers)
                on_node = ["--field-selector", f"spec.nodeName={args.node}"] if args.node else []
                kube.run("delete", "pod", "-n", "kube-system", "-l",
                         "app.kubernetes.io/component=node-agent", *on_node, "--wait=false")
                restarts.append(time.monotonic())
                print(f"  [{time.monotonic() - started:5.1f} s] {made} pods created; "
                      f"node agent restarted ({len(restarts)})", flush=True)
        if documents:
            kube.run("apply", "-f", "-", stdin="---\n".join(documents))
        time.sleep(rng.uniform(0, 2))
    print(f"  [{time.monotonic() - started:5.1f} s] all {made} pods created", flush=True)
    return restarts


def wait_until_ended(kube, args):
    deadline = time.monotonic() + args.timeout
    last = ""
    while True:
        pods = kube.items("pods", "-n", NAMESPACE, "-l", f"stress={args.run}")
        phases = {}
        for pod in pods:
            phase = pod["status"].get("phase", "Unknown")
            phases[phase] = phases.get(phase, 0) + 1
        summary = ", ".join(f"{n} {phase}" for phase, n in sorted(phases.items()))
        if summary != last:
            print(f"  {summary}", flush=True)
            last = summary
        if all(pod["status"].get("phase") in ("Succeeded", "Failed") for pod in pods):
            return pods
        if time.monotonic() > deadline:
            print(f"FAIL: not every pod ended within {args.timeout} s ({summary})")
            return pods
        time.sleep(2)


def check(pods, args):
    problems = []
    placement = []  # what kubelet chose past the plugin's preference: disconnected sets
    failures = {}
    runs = []  # (start, end, cores, name)
    neighbours = neighbours_in(args.node_dir)

    for pod in pods:
        name = pod["metadata"]["name"]
        status = pod["status"]
        if status.get("phase") != "Succeeded":
            reason = status.get("reason") or status.get("phase", "Unknown")
            failures[reason] = failures.get(reason, 0) + 1
            problems.append(f"{name}: {status.get('phase')} {reason}: {why_not_succeeded(status)}")
            continue
        limits = pod["spec"]["containers"][0]["resources"]["limits"]
        resource, count = next((k.split("/", 1)[1], int(v)) for k, v in limits.items())
        terminated = status["containerStatuses"][0]["state"].get("terminated", {})
        seen = dict(line.split("=", 1) for line in terminated.get("message", "").splitlines()
                    if "=" in line)
        cores = expand_ids(seen.get("CORES", ""))
        devices = sorted(int(d[len("neuron"):]) for d in seen.get("DEVICES", "").split())
        want = count if resource == "neuroncore" else count * args.cores_per_device
        if len(cores) != want or len(set(cores)) != want:
            problems.append(f"{name}: asked {count} {resource}, got cores {cores}")
            continue
        if devices != sorted({c // args.cores_per_device for c in cores}):
            problems.append(f"{name}: device nodes {devices} for cores {cores}")
        if not connected(devices, neighbours):
            placement.append(f"{name}: devices {devices} are not NeuronLink-connected")
        runs.append((float(seen["START"]), float(seen["END"]), set(cores), name))
    runs.sort()
    for i, (start, end, cores, name) in enumerate(runs):
        for later_start, _, later_cores, later in runs[i + 1:]:
            if later_start >= end:
                break
            if cores & later_cores:
                problems.append(f"{name} and {later} ran on cores "
                                f"{sorted(cores & later_cores)} at the same time")
    return problems, placement, failures


def main():
    args = parse_args()
    kube = Kube(args.kubectl, args.kubeconfig)
    rng = random.Random(args.seed)
    began = time.monotonic()
    began_utc = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    print(f"{args.pods} pods through {args.scheduler} ({', '.join(f'{r}:{c}' for r, c in args.mix)}),"
          f" agent restarted after {sorted(args.restart_agent_after) or 'never'}", flush=True)
    watches = []
    if args.node:
        watches = [Watch(kube, "pods", "-n", NAMESPACE, "-l", f"stress={args.run}"),
                   Watch(kube, "nodes", args.node)]
    followers = {}
    restarts = submit(kube, args, rng, followers)
    pods = wait_until_ended(kube, args)
    for follower in followers.values():
        follower.terminate()
        follower.wait()
    problems, placement, failures = check(pods, args)
    if args.agent_logs:
        longest = longest_list_hold(kube, args, followers, began_utc)
        print("longest pod-resources List held back: " +
              (f"{longest} ms" if longest is not None else "none as long as 500 ms"))
    explained = []
    if watches:
        time.sleep(2)  # the reports that followed the last pods' ends
        for watch in watches:
            watch.stop()
        # Each failed pod's surroundings, times in s since the run began: which side was late.
        # Printed last, where a CI log's excerpt of the check keeps it.
        for pod in pods:
            if pod["status"].get("phase") == "Failed":
                explained += explain(pod["metadata"]["name"], watches[0].events,
                                     watches[1].events, restarts, args.cores_per_device, began)
        released = sorted(release_delays(watches[0].events, watches[1].events,
                                         args.cores_per_device))
        if released:
            delays = [delay for delay, _, _ in released]
            print(f"ids reused or given back to the other resource after a pod ended "
                  f"({len(delays)} pods): "
                  f"median {statistics.median(delays) * 1000:.0f} ms, "
                  f"p95 {delays[int(0.95 * (len(delays) - 1))] * 1000:.0f} ms, "
                  f"max {delays[-1] * 1000:.0f} ms (API watch to the agent's report or the next bind)")
            # The slowest, stage by stage: what kept the ids withheld after the pod ended.
            for _, name, _ in released[-3:]:
                for line in release_timeline(name, watches[0].events, watches[1].events,
                                             args.cores_per_device, began):
                    print(f"  {line}")
    succeeded = sum(1 for pod in pods if pod["status"].get("phase") == "Succeeded")
    print(f"{len(pods)} pods in {time.monotonic() - began:.0f} s: {succeeded} succeeded, "
          f"{sum(failures.values())} failed {failures or ''}".rstrip())
    if len(pods) != args.pods:
        problems.append(f"{len(pods)} pods exist, {args.pods} were created")
    if args.disconnected_as_findings:
        for finding in placement:
            print(f"  FINDING (kubelet's choice of ids): {finding}")
    else:
        problems += placement
    shared = sum(1 for problem in problems if "at the same time" in problem)
    print(f"{len(placement)} placement findings (disconnected sets); "
          f"{shared} pairs of containers ran on one core at the same time")
    for problem in problems[:40]:
        print(f"  {problem}")
    for line in explained[:40]:
        print(f"  {line}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
