// Who holds each NeuronCore, for the metrics' pod, namespace and container labels and the
// torus_allocation_info family. Built from the same assignments the device plugin and the DRA
// driver keep (kubelet's pod-resources view), so a core is labelled with the container kubelet
// says holds it — the same lookup CloudWatch's Neuron receiver makes. Pure.
//
// A core has one holder except when a ResourceClaim is shared by several containers or pods;
// a device may be split between pods by core. Label values then list every holder, sorted and
// comma-separated, so an empty value always means free.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/metrics/prometheus_text.h"
#include "common/topology/core_set.h"
#include "common/topology/node.h"

namespace torus::metrics {

// Where a DRA tenancy's cores come from: the claim and its device, labelled as NVIDIA's DRA
// exporter labels them (dra_claim_name, dra_claim_namespace, dra_device_name, dra_pool_name,
// dra_driver_name). Empty for the device plugin's resources.
struct ClaimDevice {
  std::string claimName;
  std::string claimNamespace;
  std::string device;  // "neurondevice3", "neuroncore12", "neuronnode"
  std::string pool;
  std::string driver;
};

// One container's hold on some cores.
struct Tenancy {
  std::string pod;  // name
  std::string nameSpace;
  std::string container;
  // aws.amazon.com/neuroncore, aws.amazon.com/neuron, or the DRA driver neuron.aws.com.
  std::string resource;
  topology::CoreSet cores;  // global logical core ids at the node's LNC
  ClaimDevice claim;
};

class CoreTenants {
 public:
  CoreTenants() = default;
  CoreTenants(const topology::Node& node, std::vector<Tenancy> tenancies);

  // pod, namespace and container of the core's holders, and the dra_* labels of the claims they
  // hold it through ("" when free, or not through DRA).
  metrics::Labels coreLabels(int core) const;
  // The same for every holder of any core of the device.
  metrics::Labels deviceLabels(int device) const;
  // torus_allocation_info: one sample per held core and holder.
  void render(metrics::PrometheusText& out, const metrics::Labels& base) const;

 private:
  metrics::Labels labelsOf(const std::vector<std::size_t>& tenancies) const;

  std::vector<Tenancy> tenancies_;
  std::map<int, std::vector<std::size_t>> byCore_;    // core -> indices into tenancies_
  std::map<int, std::vector<std::size_t>> byDevice_;  // device -> indices into tenancies_
  std::map<int, int> deviceOfCore_;
};

}  // namespace torus::metrics
