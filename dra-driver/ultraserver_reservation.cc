#include "dra-driver/ultraserver_reservation.h"

#include <nlohmann/json.hpp>

#include "common/contracts/neuron_names.h"
#include "common/kube/object_fields.h"

namespace torus::dra {
namespace {

using json = nlohmann::json;

}  // namespace

std::string boundWorkloadOf(const json& ultraServer, const std::string& nodeName) {
  const json& allocations = kube::fieldAt(ultraServer, {"status", "allocations"});
  if (!allocations.is_array()) return "";
  for (const json& allocation : allocations) {
    if (!allocation.is_object() ||
        allocation.value("phase", json()) != contracts::kAllocationBound) {
      continue;
    }
    const json& nodes = allocation.value("allocatedNodes", json());
    if (!nodes.is_array()) continue;
    for (const json& node : nodes) {
      if (node == nodeName) return kube::stringAt(allocation, {"workloadRef"});
    }
  }
  return "";
}

UltraServerReservation::UltraServerReservation(kube::KubeConfig kube, const std::string& nameSpace,
                                               std::string nodeName, Listener listener)
    : nodeName_(std::move(nodeName)), listener_(std::move(listener)) {
  kube::InformerHandlers handlers;
  handlers.onList = [this](const std::vector<std::shared_ptr<const json>>& items) {
    {
      std::lock_guard lock(mutex_);
      byServer_.clear();
      for (const auto& item : items) {
        byServer_[kube::stringAt(*item, {"metadata", "name"})] = boundWorkloadOf(*item, nodeName_);
      }
    }
    publish();
  };
  handlers.onEvent = [this](const kube::WatchEvent& event) {
    if (!event.object || event.type == "BOOKMARK") return;
    {
      std::lock_guard lock(mutex_);
      const std::string name = kube::stringAt(*event.object, {"metadata", "name"});
      if (event.type == "DELETED") {
        byServer_.erase(name);
      } else {
        byServer_[name] = boundWorkloadOf(*event.object, nodeName_);
      }
    }
    publish();
  };
  informer_ = std::make_unique<kube::Informer>(
      std::move(kube),
      "/apis/neuron.aws.com/v1beta1/namespaces/" + nameSpace + "/neuronultraservers",
      std::move(handlers));
}

void UltraServerReservation::publish() {
  std::string workload;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [server, ref] : byServer_) {
      if (!ref.empty()) workload = ref;
    }
  }
  listener_(true, workload);
}

}  // namespace torus::dra
