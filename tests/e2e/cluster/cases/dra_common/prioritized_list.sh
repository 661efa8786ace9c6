# Sourced by dra_test.sh and dra_134_test.sh (lib.sh's and dra_lib.sh's helpers and the cluster
# are in scope): a feature on by default from Kubernetes 1.34 on.

echo "== a prioritized list: each container gets the chip of the request it names, and its cores"
# The first subrequest (chip 99, which no node has) cannot be met, so "first" is allocated as
# "first/one" (not 17 chips of 16: 1.34's allocator searched that until it timed out). Kubelet
# gives a container the devices whose request names include the request it names: the driver
# must answer "first", not "first/one", or container a starts with no /dev/neuron at all. Each
# device's CDI edit names the cores of what the containers given it get (the runtime keeps the
# last edit's value): a and b see their own chip's cores, a container naming the claim both
# chips', and containers that overlap (one request, and the whole claim) are refused by name.
pinned <<'YAML' | k apply -n e2e -f - > /dev/null
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: listed}
spec:
  spec:
    devices:
      requests:
        - name: first
          firstAvailable:
            - name: ninety-nine
              deviceClassName: chip.neuron.aws.com
              selectors: [{cel: {expression: 'device.attributes["neuron.aws.com"].deviceId == 99'}}]
            - {name: one, deviceClassName: chip.neuron.aws.com}
        - name: second
          exactly: {deviceClassName: chip.neuron.aws.com}
YAML
# listed_pod NAME CONTAINER[:REQUEST]...: a pod of the listed template whose containers report
# what they got; a container without a request names the whole claim.
listed_pod() {
  local name="$1" spec request
  shift
  {
    cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $name}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
YAML
    for spec in "$@"; do
      request=""
      [[ "$spec" == *:* ]] && request=", request: ${spec#*:}"
      cat <<YAML
    - name: ${spec%%:*}
      image: public.ecr.aws/docker/library/debian:bookworm-slim
      command: [sh, -c, 'echo "DEVICES=\$(cd /dev && ls -d neuron[0-9]* 2> /dev/null | tr "\\n" " ")"; echo "CORES=\$NEURON_RT_VISIBLE_CORES"']
      resources: {claims: [{name: neurons$request}]}
YAML
    done
    cat <<YAML
  resourceClaims:
    - {name: neurons, resourceClaimTemplateName: listed}
YAML
  } | pinned | k apply -n e2e -f - > /dev/null
}
listed_pod dra-listed a:first b:second
listed_pod dra-listed-whole c
listed_pod dra-listed-overlap a:first c
check "a pod with a firstAvailable request and two containers succeeds" eventually 120 pod_succeeded dra-listed
check "a pod naming that claim whole succeeds" eventually 120 pod_succeeded dra-listed-whole
container_saw() { k logs -n e2e "$1" -c "$2" | sed -n "s/^$3=//p" | xargs; }
# core_ids TEXT: the ids NEURON_RT_VISIBLE_CORES names ("16-19" or "16,17,18,19,40"), one line.
core_ids() { expand_ids "$1" | sort -n | xargs; }
# chip_core_ids neuronA [neuronB ...]: the ids of those chips' cores at LNC 2, one line.
chip_core_ids() { checks_py chip-cores "$CORES_PER_DEVICE" "$@"; }
# saw_own_cores POD CONTAINER CHIPS: the container got CHIPS' device nodes and only their cores.
saw_own_cores() {
  local devices cores
  devices="$(container_saw "$1" "$2" DEVICES)" cores="$(container_saw "$1" "$2" CORES)"
  echo "$1/$2: devices ${devices:-none}, cores ${cores:-none}"
  [[ "$(printf '%s\n' $devices | sort -V | xargs)" == "$3" ]] || return 1
  [[ "$(core_ids "$cores")" == "$(chip_core_ids $3)" ]]
}
each_saw_their_own() {
  local a b
  a="$(container_saw dra-listed a DEVICES)" b="$(container_saw dra-listed b DEVICES)"
  [[ "$a" =~ ^neuron[0-9]+$ && "$b" =~ ^neuron[0-9]+$ && "$a" != "$b" ]] ||
    { echo "a: ${a:-no device}, b: ${b:-no device}"; return 1; }
  saw_own_cores dra-listed a "$a" && saw_own_cores dra-listed b "$b"
}
check "a and b each saw their own request's chip and only its cores" each_saw_their_own
whole_saw_both() {
  local devices
  devices="$(container_saw dra-listed-whole c DEVICES)"
  [[ "$(wc -w <<< "$devices")" == 2 ]] || { echo "devices: ${devices:-none}"; return 1; }
  saw_own_cores dra-listed-whole c "$(printf '%s\n' $devices | sort -V | xargs)"
}
check "the container naming the claim saw both chips and both chips' cores" whole_saw_both
overlap_event() {
  k get events -n e2e --field-selector "involvedObject.name=dra-listed-overlap" -o jsonpath='{.items[*].message}' |
    grep -o 'containers dra-listed-overlap/a (requests first) and dra-listed-overlap/c (the whole claim) both get device' |
    head -n 1 | grep .
}
check "containers seeing overlapping parts of a claim: refused, the event names both" \
  eventually 90 overlap_event
check "... and the pod does not start" phase_is dra-listed-overlap Pending
k delete pod -n e2e dra-listed dra-listed-whole dra-listed-overlap --wait=false > /dev/null
