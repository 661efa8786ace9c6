# Sourced by multinode_test.sh (its helpers, cluster, names and ips are in scope).
# The ecosystem's placers on Torus's labels, as docs/gangs.md shows them, with the manifests of
# deploy/examples/: Kueue admits a Job whole on one UltraServer through a Topology on the node
# agent's UltraServer label (or holds it, creating no pod, and says why), and LeaderWorkerSet's
# exclusive-topology keeps a second group off an UltraServer whose devices are free. Both run
# beside the control plane (`up --placers=kueue,lws`); their webhooks act only in a namespace
# labelled torus.dev/placers=enabled.

kp() { k -n placers "$@"; }
k create namespace placers > /dev/null
k label namespace placers torus.dev/placers=enabled > /dev/null
ultraserver_names=()
for index in "${ULTRASERVER[@]}"; do ultraserver_names+=("${names[$index]}"); done

echo "== Kueue: a Job admitted whole on one UltraServer (a Topology on Torus's label)"
kp apply -f "$REPO/deploy/examples/kueue/ultraserver-topology.yaml" > /dev/null
# kueue_job NAME: the example Job under another name.
kueue_job() {
  sed "s/^  name: neuron-ultraserver-job$/  name: $1/" "$REPO/deploy/examples/kueue/ultraserver-job.yaml"
}
job_runs_whole() {
  kp get pods -l "job-name=$1" -o json | checks_py running-one-on-each "${ultraserver_names[@]}"
}
kueue_job first-job | kp apply -f - > /dev/null
check "a Kueue Job of 4 whole-node pods runs on the UltraServer's 4 nodes" \
  eventually 120 job_runs_whole first-job
kp delete job first-job --cascade=foreground --wait=true > /dev/null

# A pod outside Kueue takes one of those nodes: Kueue's topology-aware admission counts it.
PIN_NODE="${ultraserver_names[3]}" pod_manifest busy neuron 16 neuron-scheduler 600 |
  k apply -f - > /dev/null
check "a pod outside Kueue holds one of the UltraServer's nodes" eventually 60 pod_running busy
kueue_job second-job | kp apply -f - > /dev/null
job_held_naming_the_topology() {
  [[ -z "$(kp get pods -l job-name=second-job -o name)" ]] || { echo "second-job has pods"; return 1; }
  # Qualified: Kubernetes 1.37's gang API has a Workload kind of its own (scheduling.k8s.io).
  kp get workloads.kueue.x-k8s.io -o json | checks_py kueue-waiting-reason second-job neuron-ultraserver
}
check "...a second Job creates no pod while 3 nodes are free, and its Workload names the topology" \
  eventually 60 job_held_naming_the_topology
k delete pod -n e2e busy --wait=true > /dev/null
check "...and once the node frees, it starts whole on the 4 nodes" \
  eventually 120 job_runs_whole second-job
kp delete job second-job --cascade=foreground --wait=true > /dev/null

echo "== LeaderWorkerSet: each group on one UltraServer of its own (exclusive-topology)"
kp apply -f "$REPO/deploy/examples/lws/ultraserver-groups.yaml" > /dev/null
group_runs() {
  kp get pods -l leaderworkerset.sigs.k8s.io/group-index=0 -o json |
    checks_py running-within 4 "${ultraserver_names[@]}"
}
check "a group of 4 pods (4 devices each) runs on the UltraServer" eventually 120 group_runs
kp patch leaderworkerset neuron-ultraserver-groups --type=merge -p '{"spec":{"replicas":2}}' > /dev/null
# Group 0 holds 16 of the UltraServer's 64 devices: only exclusivity keeps group 1 out.
second_group_kept_out() {
  kp get pods -l leaderworkerset.sigs.k8s.io/group-index=1 -o json |
    checks_py unschedulable-by neuron-ultraserver-groups-1 anti-affinity
}
check "...a second group is kept off its free devices (Unschedulable by anti-affinity)" \
  eventually 60 second_group_kept_out
check "...and the first group keeps running" group_runs

kp delete leaderworkerset neuron-ultraserver-groups --wait=true > /dev/null
k delete namespace placers --wait=true > /dev/null
k delete -f "$REPO/deploy/examples/kueue/ultraserver-topology.yaml" --ignore-not-found > /dev/null
