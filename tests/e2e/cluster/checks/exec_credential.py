"""What an exec credential plugin was handed: the KUBERNETES_EXEC_INFO of each run, one JSON
document a line, as the e2e's plugin records them."""
import json

from checks import require

V1 = "client.authentication.k8s.io/v1"


def exec_infos_as_kubectl_sends(lines, server):
    """Each run got an ExecCredential of apiVersion v1, not interactive (no terminal), and, as
    the kubeconfig asks with provideClusterInfo, the cluster's server and its CA in base64."""
    runs = [json.loads(line) for line in lines.splitlines() if line.strip()]
    require(runs, "the plugin never ran")
    for number, info in enumerate(runs, 1):
        require(info.get("kind") == "ExecCredential" and info.get("apiVersion") == V1,
                f"run {number}: not a {V1} ExecCredential: {info}")
        spec = info.get("spec", {})
        require(spec.get("interactive") is False, f"run {number}: interactive is not false: {spec}")
        cluster = spec.get("cluster", {})
        require(cluster.get("server") == server,
                f"run {number}: cluster.server {cluster.get('server')!r}, want {server!r}")
        authority = cluster.get("certificate-authority-data", "")
        require(authority and "BEGIN CERTIFICATE" not in authority,
                f"run {number}: certificate-authority-data is not base64 PEM: {authority[:40]!r}")
