#include "dra-driver/ultraserver_reservation.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/contracts/neuron_names.h"
#include "common/contracts/neuron_ultraserver.h"
#include "common/kube/object_fields.h"

namespace torus::dra {
namespace {

using json = nlohmann::json;

}  // namespace

NodeReservation reservationOf(const json& ultraServer, const std::string& nodeName) {
  NodeReservation reservation;
  for (const contracts::Allocation& allocation : contracts::allocationsOf(ultraServer)) {
    if (std::find(allocation.nodes.begin(), allocation.nodes.end(), nodeName) ==
        allocation.nodes.end()) {
      continue;
    }
    const bool bound = allocation.phase == contracts::kAllocationBound;
    if (reservation.workload.empty() || (bound && !reservation.bound))
      reservation = {allocation.workloadRef, bound};
  }
  return reservation;
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
        byServer_[kube::stringAt(*item, {"metadata", "name"})] = reservationOf(*item, nodeName_);
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
        byServer_[name] = reservationOf(*event.object, nodeName_);
      }
    }
    publish();
  };
  informer_ = std::make_unique<kube::Informer>(
      std::move(kube), contracts::ultraServersPath(nameSpace), std::move(handlers));
}

void UltraServerReservation::publish() {
  NodeReservation reservation;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [server, ours] : byServer_) {
      if (!ours.workload.empty()) reservation = ours;
    }
  }
  listener_(true, reservation);
}

bool madeFromTemplateForPod(const json& claim) {
  const json& controller = kube::controllerOf(claim);
  return !kube::annotationOf(claim, "resource.kubernetes.io/pod-claim-name").empty() &&
         kube::stringAt(controller, {"kind"}) == "Pod" &&
         kube::stringAt(controller, {"apiVersion"}) == "v1";
}

std::string reservationRefusal(const std::string& reservedFor, const std::string& claimWorkload,
                               const std::string& claimNamespace, const std::string& claimName,
                               const std::string& node, bool fromTemplate) {
  if (reservedFor.empty()) return "";
  const std::string refused = "claim " + claimNamespace + "/" + claimName + ": node " + node +
                              " is reserved for NeuronUltraServerWorkload " + reservedFor + "; ";
  if (claimWorkload != reservedFor) {
    return refused +
           (claimWorkload.empty() ? "this claim belongs to no workload"
                                  : "this claim belongs to workload " + claimWorkload) +
           " (claims made from a workload's ResourceClaimTemplate carry the annotation " +
           contracts::kWorkloadAnnotation + ")";
  }
  const std::string ownNamespace = reservedFor.substr(0, reservedFor.find('/'));
  if (claimNamespace != ownNamespace) {
    return refused + "this claim names workload " + claimWorkload + " but is in namespace " +
           claimNamespace + "; only claims of namespace " + ownNamespace +
           " may use its reservation";
  }
  if (!fromTemplate) {
    return refused +
           "this claim names it but was not made from its ResourceClaimTemplate for a pod (no "
           "owning Pod and resource.kubernetes.io/pod-claim-name annotation)";
  }
  return "";
}

}  // namespace torus::dra
