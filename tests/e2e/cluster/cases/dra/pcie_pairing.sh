# Sourced by dra_test.sh (its helpers, dra_lib.sh's and the cluster are in scope).
# A chip and the network card on its PCIe root in one claim, across two drivers: Torus's chips
# carry resource.kubernetes.io/pcieRoot from the driver's sysfs; a second driver (a stand-in for
# an EFA DRA driver: a ResourceSlice of this node's EFA functions, no kubelet plugin) publishes its
# cards with the same attribute, and the scheduler's matchAttribute pairs them.

echo "== pcieRoot: a chip and the EFA on its root in one claim (two drivers)"
NIC_DRIVER=nic.e2e.torus.dev
root_of() { readlink "$SIMULATED_NODE_DIR/sys/bus/pci/devices/$1" | cut -d/ -f5; }
nic_slice() {
  local devices="" bdf i=0
  for bdf in $(ls "$SIMULATED_NODE_DIR/sys/bus/pci/drivers/efa" | sort); do
    devices+="
    - name: efa$i
      attributes:
        resource.kubernetes.io/pcieRoot: {string: $(root_of "$bdf")}
        resource.kubernetes.io/pciBusID: {string: \"$bdf\"}"
    i=$((i + 1))
  done
  cat <<YAML
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: $NODE_NAME-$NIC_DRIVER}
spec:
  driver: $NIC_DRIVER
  nodeName: $NODE_NAME
  pool: {name: $NODE_NAME, generation: 1, resourceSliceCount: 1}
  devices:$devices
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: $NIC_DRIVER}
spec:
  selectors: [{cel: {expression: 'device.driver == "$NIC_DRIVER"'}}]
YAML
}
nic_slice | k apply -f - > /dev/null
nic_slice_stored() { k get resourceslice "$NODE_NAME-$NIC_DRIVER" -o name > /dev/null; }
check "the second driver's slice of this node's EFA functions is stored" nic_slice_stored
chip5_root() {
  local want
  want="$(root_of "$(driver_function_of 5)")"
  pool_devices | checks_py device-attribute-is neurondevice5 resource.kubernetes.io/pcieRoot string "$want"
}
check "chip 5 publishes the root of its PCI function as resource.kubernetes.io/pcieRoot" chip5_root
k apply -n e2e -f - > /dev/null <<YAML
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: chip-and-its-nic}
spec:
  spec:
    devices:
      requests:
        - name: chip
          exactly:
            deviceClassName: chip.neuron.aws.com
            selectors: [{cel: {expression: '$(chip_id_is 5)'}}]
        - name: nic
          exactly: {deviceClassName: $NIC_DRIVER}
      constraints:
        - {requests: [chip, nic], matchAttribute: resource.kubernetes.io/pcieRoot}
YAML
# The pod cannot start: no kubelet plugin serves the stand-in driver, and kubelet finds that out
# before it asks any driver to prepare (so chip 5 is never prepared). The claim's allocation,
# which the scheduler makes before binding, is what shows the pairing.
dra_pod dra-paired chip-and-its-nic 3600
# The EFAs on chip 5's root (the simulated trn2 has four per root; any of them pairs with it).
efas_on_chip5_root() {
  local root bdf i=0
  root="$(root_of "$(driver_function_of 5)")"
  for bdf in $(ls "$SIMULATED_NODE_DIR/sys/bus/pci/drivers/efa" | sort); do
    [[ "$(root_of "$bdf")" == "$root" ]] && echo "efa$i"
    i=$((i + 1))
  done
  return 0
}
paired_allocation() {
  local results want nic
  results="$(k get resourceclaims -n e2e -o json | checks_py claim-results-of dra-paired)"
  nic="$(sed -n "s/^nic $NIC_DRIVER //p" <<< "$results")"
  want="$(efas_on_chip5_root | tr '\n' ' ')"
  grep -qx "chip neuron.aws.com neurondevice5" <<< "$results" && [[ -n "$nic" && " $want" == *" $nic "* ]] ||
    { echo "allocation: '${results}', want chip 5 and one of: $want"; return 1; }
}
check "the claim gets chip 5 and an EFA on chip 5's root" eventually 60 paired_allocation
k delete pod -n e2e dra-paired --wait=true > /dev/null
k delete resourceclaimtemplate -n e2e chip-and-its-nic > /dev/null
k delete resourceslice "$NODE_NAME-$NIC_DRIVER" > /dev/null
k delete deviceclass "$NIC_DRIVER" > /dev/null
