"""kubectl neuron debug's archive: what an unpacked one holds for a faulty chip, and that the
packed one carries no credential of the agent or of the caller's kubeconfig."""
import base64
import glob
import os
import re

from checks import require
from checks.files import read_json, read_text

# The parts every archive of one device has (the device's own driver files are added by name).
WANTED_PARTS = {"agent/state.json", "agent/kernel-log.txt", "agent/metrics.txt",
                "agent/allocations.json", "agent/log.txt", "cluster/node.json",
                "cluster/events.json", "cluster/pods.json", "cluster/claims.json",
                "cluster/slices.json"}
# The kernel line the case writes for the faulty chip (as aws_health.sh writes one).
KERNEL_LINE = "NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR instance-id=i-0e2e0000000000003"
# A JSON Web Token: three base64url parts, the first an encoded '{"'.
JWT = re.compile(rb"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.")


_json = read_json
_text = read_text


def bundle_complete(root, device, serial):
    """The archive unpacked under `root` is about `device`; its manifest lists every wanted part,
    none failed, each of the size it says; the chip is unhealthy with its kernel line (naming
    `serial`), its driver files are there, and so are the agent's metrics and log, the one pod
    "debugged" and the Node's NeuronHealth condition."""
    tops = [d for d in glob.glob(f"{root}/neuron-debug-*") if os.path.isdir(d)]
    require(len(tops) == 1, f"want one neuron-debug-* folder under {root}, got {tops}")
    top = tops[0]
    manifest = _json(f"{top}/manifest.json")
    require(manifest["device"] == device, f"manifest device {manifest['device']}, want {device}")
    for part in manifest["parts"]:
        require("error" not in part, f"a part failed: {part}")
        size = os.path.getsize(f"{top}/{part['file']}")
        require(size == part["bytes"], f"{part['file']} has {size} bytes, the manifest says {part}")
    files = {part["file"] for part in manifest["parts"]}
    missing = (WANTED_PARTS | {f"devices/neuron{device}/driver.json"}) - files
    require(not missing, f"parts missing from the manifest: {sorted(missing)}")
    chips = _json(f"{top}/agent/state.json")["devices"]
    require(len(chips) == 1, f"the agent's state lists {len(chips)} devices, want 1")
    health = chips[0]["health"]
    require(health["state"] == "unhealthy", f"health {health}")
    require(any(p["code"] == "SRAM_UNCORRECTABLE_ERROR" for p in health["problems"]),
            f"no SRAM_UNCORRECTABLE_ERROR problem: {chips[0]}")
    kernel = _text(f"{top}/agent/kernel-log.txt")
    require(KERNEL_LINE in kernel and f"serial-num={serial}" in kernel,
            f"the kernel log lacks the line for serial {serial}: {kernel}")
    require(os.path.isfile(f"{top}/devices/neuron{device}/sys/core_count"),
            f"no devices/neuron{device}/sys/core_count")
    require("torus_device_health_state" in _text(f"{top}/agent/metrics.txt"),
            "agent/metrics.txt has no torus_device_health_state")
    require("ready" in _text(f"{top}/agent/log.txt"), "agent/log.txt never says ready")
    pods = [p["metadata"]["name"] for p in _json(f"{top}/cluster/pods.json")]
    require(pods == ["debugged"], f"pods {pods}, want ['debugged']")
    conditions = _json(f"{top}/cluster/node.json")["status"].get("conditions", [])
    require(any(c["type"] == "NeuronHealth" for c in conditions),
            f"no NeuronHealth condition: {conditions}")


def kubeconfig_credentials(kubeconfig):
    """The kubeconfig's token and client-key-data values, and the key's first line decoded (a
    scrubber that missed the base64 could still leak the PEM body)."""
    secrets = []
    for line in kubeconfig.splitlines():
        key, _, value = line.strip().partition(": ")
        if key in ("token", "client-key-data"):
            secrets.append(value.encode())
            if key == "client-key-data":
                secrets.append(base64.b64decode(value).split(b"\n")[1])
    return secrets


def bundle_without_secrets(archive, token, kubeconfig, more_tokens=()):
    """The archive's bytes hold neither `token` nor the kubeconfig's credentials, nor any of
    `more_tokens` (what an exec credential plugin handed out), nor any JWT, private key or Secret
    object, nor an exec plugin's ExecCredential."""
    secrets = [token.encode()] + kubeconfig_credentials(kubeconfig)
    secrets += [t.encode() for t in more_tokens]
    require(all(secrets), "an empty credential to look for (a token file not read?)")
    require(b"ExecCredential" not in archive, "an exec plugin's ExecCredential is in the archive")
    for secret in secrets:
        require(secret not in archive, f"a credential is in the archive ({secret[:8]}...)")
    require(not JWT.search(archive), "a JWT is in the archive")
    require(b"PRIVATE KEY" not in archive, "a private key is in the archive")
    require(b'"kind": "Secret"' not in archive and b'"kind":"Secret"' not in archive,
            "a Secret is in the archive")
