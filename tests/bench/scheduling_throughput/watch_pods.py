"""Waits on one watch of a namespace's pods until COUNT of them are bound (or Ready).

  watch_pods.py KUBECTL KUBECONFIG NAMESPACE bound|ready COUNT SECONDS

Prints how many pods were bound (or Ready) when it stopped; exits 0 when that reached COUNT and 1
when SECONDS ran out first. A watch costs the API server one stream of events; a poll that lists
every pod each second would take CPU from the control plane the benchmark is measuring, more of it
on the slower path. kubectl runs in a session of its own and is stopped as soon as the count is
reached; a watch the API server ends early is started again (its first lines replay every pod).
"""
import os
import selectors
import signal
import subprocess
import sys
import time

# One line per pod: its name, node and Ready status, <none> for what it does not have yet. Columns
# (not a jsonpath template) because kubectl prints the watch's first state as Lists and each event
# after it as a Pod, and its columns take both.
COLUMNS = ('custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,'
           'READY:.status.conditions[?(@.type=="Ready")].status')


def apply_line(pods, line):
    """Records a watch line's pod as bound to its node and Ready or not; ignores anything else."""
    fields = line.split()
    if len(fields) != 3:
        return
    name, node, ready = fields
    pods[name] = ("" if node == "<none>" else node, ready == "True")


def reached(pods, state):
    """How many pods are in STATE: bound (a node) or ready (the Ready condition True)."""
    if state == "bound":
        return sum(1 for node, _ in pods.values() if node)
    return sum(1 for _, ready in pods.values() if ready)


def stop(process):
    """Stops kubectl and anything it started: TERM, then KILL after 2 s."""
    if process.poll() is not None:
        return
    for sig, grace in ((signal.SIGTERM, 2), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def follow(command, pods, state, count, deadline):
    """Runs one watch until COUNT pods are in STATE, the deadline passes or the watch ends."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                               start_new_session=True)
    pending = b""
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while reached(pods, state) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                if not selector.select(timeout=min(left, 1.0)):
                    continue
                chunk = os.read(process.stdout.fileno(), 65536)
                if not chunk:
                    return
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    apply_line(pods, line.decode("utf-8", "replace"))
    finally:
        stop(process)
        process.stdout.close()


def main(argv):
    if len(argv) != 7 or argv[4] not in ("bound", "ready"):
        print("usage: watch_pods.py KUBECTL KUBECONFIG NAMESPACE bound|ready COUNT SECONDS",
              file=sys.stderr)
        return 1
    kubectl, kubeconfig, namespace, state = argv[1:5]
    try:
        count, seconds = int(argv[5]), float(argv[6])
    except ValueError:
        print(f"watch_pods.py: COUNT and SECONDS must be numbers, not {argv[5]!r} and {argv[6]!r}",
              file=sys.stderr)
        return 1
    command = [kubectl, "--kubeconfig", kubeconfig, "get", "pods", "-n", namespace, "--watch",
               "--no-headers", "-o", COLUMNS]
    deadline = time.monotonic() + seconds
    pods = {}
    while reached(pods, state) < count and time.monotonic() < deadline:
        started = time.monotonic()
        follow(command, pods, state, count, deadline)
        # A watch that ends at once (the API server unreachable) is not restarted in a busy loop.
        if reached(pods, state) < count:
            time.sleep(max(0.0, min(1.0 - (time.monotonic() - started), deadline - time.monotonic())))
    print(reached(pods, state))
    return 0 if reached(pods, state) >= count else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
