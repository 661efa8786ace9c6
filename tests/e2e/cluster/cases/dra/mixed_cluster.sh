# Sourced by dra_test.sh (its helpers, dra_lib.sh's and the cluster are in scope).
# A mixed cluster: device-plugin and DRA nodes schedule the same old pod spec.

echo "== a mixed cluster: device-plugin and DRA nodes schedule the same old pod spec"
FAKE_NODE="$(k get nodes -l type=kwok,'!torus.dev/neuron-mode' -o jsonpath='{.items[0].metadata.name}')"
FAKE_DRA_NODE="$(k get nodes -l type=kwok,torus.dev/neuron-mode=dra -o jsonpath='{.items[0].metadata.name}')"
fake_dra_pool() {
  local devices
  devices="$(k get resourceslices --field-selector "spec.nodeName=$FAKE_DRA_NODE" -o json |
    checks_py slice-device-count)"
  echo "$devices devices in $FAKE_DRA_NODE's pool"
  [[ -n "$FAKE_DRA_NODE" && "$devices" == 80 ]]  # 16 chips and 64 single-core partitions
}
check "--dra-nodes: a kwok node in DRA mode with the driver's pool for a trn2" fake_dra_pool
whole_node_pod() {
  k apply -f - > /dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: e2e
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  tolerations:
    - {key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}
  containers:
    - name: app
      image: public.ecr.aws/docker/library/debian:bookworm-slim
      command: [sh, -c, 'echo "DEVICES=\$(cd /dev && ls -d neuron[0-9]* | tr "\n" " ")" | tee /dev/termination-log; sleep 3600']
      resources:
        limits:
          aws.amazon.com/neuron: 16
YAML
}
node_of() { k get pod -n e2e "$1" -o jsonpath='{.spec.nodeName}'; }
# Four nodes have 16 chips: the kwok device-plugin node, the kwok DRA node, and the real trn2 and
# trn2u (the inf2.xlarge has one).
MIXED=(mixed-a mixed-b mixed-c mixed-d)
for pod in "${MIXED[@]}"; do whole_node_pod "$pod"; done
one_per_node() {
  local pod placed=()
  for pod in "${MIXED[@]}"; do placed+=("$(node_of "$pod")"); done
  echo "placed on: ${placed[*]}"
  [[ "$(printf '%s\n' "${placed[@]}" | sort | tr '\n' ' ')" == \
    "$(printf '%s\n' "$FAKE_DRA_NODE" "$FAKE_NODE" "$NODE_NAME" "$TRN2U_NODE" | sort | tr '\n' ' ')" ]]
}
check "aws.amazon.com/neuron: 16 four times: one pod on each of the device-plugin node, the two real DRA nodes and the fake DRA node" \
  eventually 120 one_per_node
pod_on() {
  local pod
  for pod in "${MIXED[@]}"; do [[ "$(node_of "$pod")" == "$1" ]] && echo "$pod"; done
}
on_dra_node="$(pod_on "$NODE_NAME")"
check "the pod on the DRA node runs with all 16 chips" eventually 120 phase_is "$on_dra_node" Running
check "... and the one on the trn2u DRA node too" eventually 120 phase_is "$(pod_on "$TRN2U_NODE")" Running
# kube-scheduler's DRA allocator made the fake DRA node's pod a claim for all 16 of its chips.
fake_node_claim() {
  local pod chips
  pod="$(pod_on "$FAKE_DRA_NODE")"
  chips="$(k get resourceclaims -n e2e -o json | checks_py claim-devices-of "$pod" "$FAKE_DRA_NODE")"
  echo "${pod:-no pod}'s claim on $FAKE_DRA_NODE: $chips"
  [[ "$chips" == *neurondevice15* && "$(grep -o neurondevice <<< "$chips" | wc -l)" == 16 ]]
}
check "... and the fake DRA node's pod holds a claim for its 16 chips" eventually 60 fake_node_claim
whole_node_pod mixed-e
check "a fifth such pod stays Pending: every node is full" eventually 60 unschedulable mixed-e
k delete pod -n e2e "${MIXED[@]}" mixed-e --wait=true > /dev/null
check "the DRA node's claim is unprepared after the mixed pods" eventually 60 claims_prepared 0
