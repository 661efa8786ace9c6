"""kubectl from the end-to-end tools: one command's output, and a watch of one kind that keeps
every object as it arrived, with the time (for measuring what followed what)."""
import json
import subprocess
import threading
import time


class Kube:
    def __init__(self, kubectl, kubeconfig):
        self.base = [kubectl, "--kubeconfig", kubeconfig]

    def run(self, *args, stdin=None):
        return subprocess.run(self.base + list(args), input=stdin, text=True, check=True,
                              capture_output=True).stdout

    def items(self, *selection):
        """The objects `kubectl get SELECTION -o json` lists."""
        return json.loads(self.run("get", *selection, "-o", "json"))["items"]


class Watch:
    """`kubectl get --watch` of one kind in a thread: every object as it arrived, with the time."""

    def __init__(self, kube, *selection):
        self.events = []
        self.process = subprocess.Popen(
            kube.base + ["get", *selection, "--watch", "--output-watch-events", "-o", "json"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        decoder = json.JSONDecoder()
        buffer = ""
        for line in self.process.stdout:
            buffer += line
            try:
                event, end = decoder.raw_decode(buffer.strip())
            except ValueError:
                continue
            self.events.append((time.monotonic(), event["object"]))
            buffer = buffer.strip()[end:]

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)
