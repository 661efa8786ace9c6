// UltraServerReservation: which NeuronUltraServerWorkload this node is reserved for, read from
// the NeuronUltraServer objects neuron-ultraserver-operator keeps (their status.allocations).
// From the moment an allocation is recorded (Pending) the driver taints every device of the node
// and refuses them at prepare to claims of anyone else, so no stranger's claim is allocated there
// while the operator confirms; once it is Bound it also tags them with the workload (attribute
// workloadId), which the workload's template selects, as AWS's driver does.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "common/kube/informer.h"

namespace torus::dra {

struct NodeReservation {
  std::string workload;  // "namespace/name"; "" when the node is reserved for no one
  bool bound = false;    // the allocation is Bound (else Pending)
  bool operator==(const NodeReservation&) const = default;
};

// What an allocation of `ultraServer` that names `nodeName` reserves it for (a Bound one before
// a Pending one).
NodeReservation reservationOf(const nlohmann::json& ultraServer, const std::string& nodeName);

// Whether `claim` was made by the resource-claim controller from a ResourceClaimTemplate for a
// pod: a Pod is its controlling owner and it carries resource.kubernetes.io/pod-claim-name.
bool madeFromTemplateForPod(const nlohmann::json& claim);

// Why claim `claimNamespace`/`claimName` may not have chips of node `node`, reserved for
// `reservedFor` ("namespace/name"; "" for a node reserved for no one), or "" when it may: it must
// name that workload (`claimWorkload`, its neuron.aws.com/workload annotation), be in the
// workload's own namespace, since anyone who may write a claim may write the annotation where the
// chart's admission policy is not served, and have been made from a template for a pod
// (`fromTemplate`), as the workload's template makes every claim of it.
std::string reservationRefusal(const std::string& reservedFor, const std::string& claimWorkload,
                               const std::string& claimNamespace, const std::string& claimName,
                               const std::string& node, bool fromTemplate);

class UltraServerReservation {
 public:
  // `onChange(known, reservation)` is called after every list and event (on the informer's
  // thread); `known` turns true at the first list.
  using Listener = std::function<void(bool known, const NodeReservation& reservation)>;
  UltraServerReservation(kube::KubeConfig kube, const std::string& nameSpace, std::string nodeName,
                         Listener listener);

 private:
  void publish();

  std::string nodeName_;
  Listener listener_;
  std::mutex mutex_;
  std::map<std::string, NodeReservation> byServer_;  // NeuronUltraServer name -> ours there
  std::unique_ptr<kube::Informer> informer_;         // last: stops before the members it uses
};

}  // namespace torus::dra
