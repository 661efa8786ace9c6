# Sourced by real_cluster_test.sh (its helpers and cluster are in scope).
# Four pods fill the trn2; four more wait for room; then the first four are force-deleted. kubelet
# forgets them at once and gives their cores to the waiting pods while it is still killing the
# old containers: with 2 s of grace whatever the spec says (a force delete's grace period is 0;
# pod_workers.go, calculateEffectiveGracePeriod), and nothing outlasts runc's kill, not even a
# frozen cgroup (runc thaws it to kill). Every new pod runs, none fails admission, and none starts
# on a core whose old container is still there: the agent holds a start back until the old pod's
# processes, found by its cgroup, are gone (integration test
# DevicePluginTest.NothingStartsOnTheChipOfADeletedPodWhoseProcessesStillRun drives that window
# at will; here it is as long as kubelet makes it). Then a Deployment of four such pods scaled to
# zero gives every core back: a pod of all 64 runs.

echo "== force-deleted pods: the pods given their cores start once the old containers are gone"
FD_DIR="$STATE_DIR/force-delete"
mkdir -p "$FD_DIR"
# fd_pod NAME SLEEP: 16 cores of the trn2; says its cores and start time and sleeps as
# `sleep SLEEP` (a command line the watch below finds on the host).
fd_pod() {
  k apply -f - > /dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: e2e, labels: {e2e: force-delete}}
spec:
  nodeSelector: {kubernetes.io/hostname: $NODE_NAME}
  restartPolicy: Never
  terminationGracePeriodSeconds: 20
  containers:
    - name: app
      image: public.ecr.aws/docker/library/debian:bookworm-slim
      command: [sh, -c, 'echo "\$NEURON_RT_VISIBLE_CORES \$(date +%s.%N)"; exec sleep $2']
      resources: {limits: {aws.amazon.com/neuroncore: 16}}
YAML
}
# On an empty node each 16-core set is a row of chips, and four rows fill it; a pod still leaving
# from an earlier case would make the first sets other shapes and leave no room for the fourth.
node_empty() {
  [[ -z "$(k get pods -n e2e --field-selector "spec.nodeName=$NODE_NAME" -o name)" ]] ||
    { echo "pods left: $(k get pods -n e2e --field-selector "spec.nodeName=$NODE_NAME" -o name | xargs)"; return 1; }
  agent_serving
}
check "the node is empty and every core free" eventually 90 node_empty
for n in 1 2 3 4; do fd_pod "fd-old-$n" "8640$n"; done
check "four pods of 16 cores fill the node" eventually 90 all_running fd-old-1 fd-old-2 fd-old-3 fd-old-4
for n in 1 2 3 4; do k logs -n e2e "fd-old-$n" | awk '{print $1}' > "$FD_DIR/cores-$n"; done
# The old containers, seen from the host (every node's processes are the host's too): the last
# time each was there. Bounded: 120 s at most, and stopped below.
(
  for _ in $(seq 1 1200); do
    for n in 1 2 3 4; do
      if pgrep -f "^sleep 8640$n\$" > /dev/null; then
        echo "$(cat "$FD_DIR/cores-$n") $(date +%s.%N)" > "$FD_DIR/old-fd-old-$n.tmp"
        mv "$FD_DIR/old-fd-old-$n.tmp" "$FD_DIR/old-fd-old-$n"
      fi
    done
    sleep 0.1
  done
) &
fd_watch=$!
old_seen() { for n in 1 2 3 4; do [[ -s "$FD_DIR/old-fd-old-$n" ]] || return 1; done; }
check "the watch sees the four old containers" eventually 10 old_seen
# Waiting already, the new pods are bound the moment the old ones leave the API.
for n in 1 2 3 4; do fd_pod "fd-new-$n" 600; done
waiting_for_room() {
  local n
  for n in 1 2 3 4; do
    [[ "$(k get pod -n e2e "fd-new-$n" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}')" == Unschedulable ]] ||
      { echo "fd-new-$n is not waiting for room"; return 1; }
  done
}
check "four more pods wait for room" eventually 30 waiting_for_room
fd_deleted_at="$(date +%s.%N)"
k delete pod -n e2e fd-old-1 fd-old-2 fd-old-3 fd-old-4 --grace-period=0 --force > /dev/null 2>&1
check "the four new pods all run once the old containers are gone" eventually 90 \
  all_running fd-new-1 fd-new-2 fd-new-3 fd-new-4
old_gone() { ! pgrep -f '^sleep 8640[1-4]$' > /dev/null; }
check "the old containers have stopped" eventually 30 old_gone
kill "$fd_watch" 2> /dev/null || true
wait "$fd_watch" 2> /dev/null || true
for n in 1 2 3 4; do k logs -n e2e "fd-new-$n" > "$FD_DIR/new-fd-new-$n"; done
check "none started on a core while its old container was still there" \
  checks_py successors-after-old "$FD_DIR" "$fd_deleted_at" 0
held_back="$(k logs -n kube-system "$(agent_pods -o jsonpath='{.items[0].metadata.name}')" |
  grep -c "container start held back: a deleted pod still runs on its chip" || true)"
echo "      (the agent held $held_back container starts back for the deleted pods)"
admission_refusals() {
  local failed
  failed="$(k get pods -n e2e -l e2e=force-delete -o jsonpath='{range .items[?(@.status.phase=="Failed")]}{.metadata.name} {.status.reason}{"\n"}{end}')"
  [[ -z "$failed" ]] || { echo "failed: $failed"; return 1; }
  ! k get events -n e2e -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}' | grep -qx UnexpectedAdmissionError
}
check "no pod failed admission" admission_refusals
k delete pod -n e2e -l e2e=force-delete --wait=true > /dev/null

echo "== a Deployment scaled to zero gives every core back"
k apply -f - > /dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: fd-scale, namespace: e2e}
spec:
  replicas: 4
  selector: {matchLabels: {app: fd-scale}}
  template:
    metadata: {labels: {app: fd-scale}}
    spec:
      nodeSelector: {kubernetes.io/hostname: $NODE_NAME}
      terminationGracePeriodSeconds: 1
      containers:
        - name: app
          image: public.ecr.aws/docker/library/debian:bookworm-slim
          command: [sleep, infinity]
          resources: {limits: {aws.amazon.com/neuroncore: 16}}
YAML
scale_running() {
  [[ "$(k get deploy -n e2e fd-scale -o jsonpath='{.status.readyReplicas}')" == "$1" ]]
}
check "its four pods of 16 cores fill the node" eventually 90 scale_running 4
k scale deploy -n e2e fd-scale --replicas=0 > /dev/null
check "scaled to zero: the agent serves kubelet with every core again" eventually 60 agent_serving
pod_manifest fd-whole neuroncore 64 | k apply -f - > /dev/null
check "...and a pod of all 64 cores runs" eventually 60 pod_succeeded fd-whole
k delete deploy -n e2e fd-scale --wait=false > /dev/null
k delete pod -n e2e fd-whole --wait=false > /dev/null
