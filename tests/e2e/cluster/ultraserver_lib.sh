# UltraServer helpers the UltraServer suite and the 1.34 suite share (sourced after lib.sh and
# dra_lib.sh; the cluster's `k` and checks_py in scope). Workloads and their pods live in namespace
# e2e, on trn2u.48xlarge nodes.

ready_replicas() {
  [[ "$(k get deploy -n kube-system torus-torus-ultraserver-operator -o jsonpath='{.status.readyReplicas}')" == 1 ]]
}
us_json() { k get neuronultraservers -n kube-system -o json; }
# node_label NODE NAME: the node's neuron.amazonaws.com/ultraserver-NAME label.
node_label() {
  k get node "$1" -o jsonpath="{.metadata.labels.neuron\.amazonaws\.com/ultraserver-$2}"
}
# workload NAME SIZE STRATEGY: a NeuronUltraServerWorkload in e2e, AWS's fields.
workload() {
  k apply -f - > /dev/null <<YAML
apiVersion: neuron.aws.com/v1beta1
kind: NeuronUltraServerWorkload
metadata: {name: $1, namespace: e2e}
spec:
  instanceType: trn2u.48xlarge
  topologySize: $2
  serverCount: 1
  allocationPolicy: {failureStrategy: $3}
  resourceClaimTemplate: {name: $1}
YAML
}
state_of() { k get nusw -n e2e "$1" -o jsonpath='{.status.state}'; }
state_is() { [[ "$(state_of "$1")" == "$2" ]] || { echo "$1 is '$(state_of "$1")', want $2"; k get nusw -n e2e "$1" -o jsonpath='{.status.conditions}'; return 1; }; }
# Nodes whose devices are all tagged for workload e2e/NAME (every device of the node).
tagged_nodes() { k get resourceslices -o json | checks_py workload-tagged-nodes "e2e/$1"; }
tagged_is() { local got; got="$(tagged_nodes "$1")"; [[ "$got" == "$2" ]] || { echo "tagged for $1: '$got', want '$2'"; return 1; }; }
stop_node() { cluster stop "kubelet-$1" > /dev/null; cluster stop "containerd-$1" > /dev/null; }
start_node() { cluster start "containerd-$1" > /dev/null; cluster start "kubelet-$1" > /dev/null; }
node_ready() { [[ "$(k get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]; }
node_not_ready() { ! node_ready "$1"; }
# deployment NAME TEMPLATE REPLICAS: long-running pods of a workload, as users run them.
deployment() {
  k apply -n e2e -f - > /dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: $3
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: app
          image: public.ecr.aws/docker/library/debian:bookworm-slim
          command: [sleep, infinity]
          resources: {claims: [{name: neurons}]}
      resourceClaims:
        - {name: neurons, resourceClaimTemplateName: $2}
YAML
}
# running_pods APP: "uid@node" of its Running pods, sorted.
running_pods() { k get pods -n e2e -l "app=$1" -o json | checks_py running-pods; }
count_running() { local n; n="$(running_pods "$1" | wc -w)"; [[ "$n" == "$2" ]] || { echo "$n of $1's pods Running, want $2"; return 1; }; }

# refused WANT COMMAND...: the command's write is refused, with WANT in the API's message.
refused() {
  local want="$1" out
  shift
  if out="$("$@" 2>&1)"; then
    echo "created: $out"
    return 1
  fi
  echo "$out"
  [[ "$out" == *"$want"* ]]
}
# refused_at_admission WANT: the object on stdin, applied in e2e, is refused with WANT.
refused_at_admission() { refused "$1" k apply -n e2e -f -; }
