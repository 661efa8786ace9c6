# Sourced by dra_test.sh and dra_134_test.sh (lib.sh's and dra_lib.sh's helpers and the cluster
# are in scope): a feature on by default from Kubernetes 1.34 on.

echo "== admin access: a monitor sees every chip beside the workloads, owning none"
# adminAccess needs a namespace labelled for it. The monitor's claim takes all 16 chips first:
# kube-scheduler checks a chip's counters even for an admin-access request, so with core devices
# on it cannot give a monitor a chip a workload already holds (docs/dra.md). A workload then gets
# one of the monitor's chips, and the monitor going away resets nothing under it.
pinned <<'YAML' | k apply -f - > /dev/null
apiVersion: v1
kind: Namespace
metadata:
  name: e2e-admin
  labels: {resource.kubernetes.io/admin-access: "true"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: monitor-all, namespace: e2e-admin}
spec:
  devices:
    requests:
      - name: chips
        exactly: {deviceClassName: chip.neuron.aws.com, allocationMode: All, adminAccess: true}
---
apiVersion: v1
kind: Pod
metadata: {name: monitor, namespace: e2e-admin}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
    - name: monitor
      image: public.ecr.aws/docker/library/debian:bookworm-slim
      command: [sh, -c, 'echo "DEVICES=$(cd /dev && ls -d neuron[0-9]* | tr "\n" " ")"; sleep 600']
      resources: {claims: [{name: chips}]}
  resourceClaims:
    - {name: chips, resourceClaimName: monitor-all}
YAML
monitor_running() {
  [[ "$(k get pod -n e2e-admin monitor -o jsonpath='{.status.phase}')" == Running ]] || {
    k get pod -n e2e-admin monitor -o jsonpath='{.status.conditions[*].message}'; echo; return 1; }
}
check "an admin-access monitor of all 16 chips runs" eventually 120 monitor_running
monitor_saw_sixteen() {
  local seen
  seen="$(k logs -n e2e-admin monitor | sed -n 's/^DEVICES=//p' | wc -w)"
  [[ "$seen" == 16 ]] || { echo "the monitor saw $seen device nodes"; return 1; }
}
check "... and sees all 16 chips" eventually 15 monitor_saw_sixteen
check "... through its device rules, which refuse every other minor" device_rules_in e2e-admin monitor
monitor_owns_nothing() { allocations | checks_py admin-claim-owns-nothing e2e-admin/monitor-all 16; }
check "the agent counts the monitor's claim as owning no chip" monitor_owns_nothing
dra_pod dra-work one-chip 600
check "a workload on one of the monitor's chips runs (prepared beside it)" eventually 120 phase_is dra-work Running
k delete pod -n e2e-admin monitor --wait=true > /dev/null
check "the workload still runs after the monitor is gone" phase_is dra-work Running
check "... its claim alone is prepared, its chip still its own" eventually 30 claims_prepared 1 1
k delete namespace e2e-admin --wait=false > /dev/null
k delete pod -n e2e dra-work --wait=true > /dev/null
check "every claim is unprepared afterwards" eventually 60 claims_prepared 0
