// The scheduler extender -> device plugin hand-off, as annotations on the pod (AWS's keys:
// neuron_names.h). Written in one place (the extender's bind) and read in one place (the
// node agent's plugin and the extender's pod informer), so the two sides cannot drift; a
// round-trip test holds them together.
//
//   AWS_NEURON_IDS        "8,9,10,11": the cores or devices chosen
//   NEURON_ALLOC_TIME     nanoseconds since the epoch, when the extender chose them
//   NEURON_ALLOCATED      "false" at bind; "true" once the plugin handed them out
//   NEURON_RESOURCE_TYPE  the resource asked through; absent means whole devices (AWS's extension
//                         sets it only for core requests)
//   torus.dev/ultraserver-nodes  "4", "2" or "1": the pod is one of a gang whose pods each hold a
//                         whole node, together that many nodes of one UltraServer (2: a pair
//                         sharing server-id-2); the plugin then gives the container
//                         NEURON_RT_ULTRASERVER_* as AWS's UltraServer operator does
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"
#include "common/topology/core_set.h"

namespace torus::contracts {

struct Handoff {
  topology::CoreSet ids;
  std::int64_t allocTimeNs = 0;
  bool allocated = false;
  std::string resourceType;             // "" = whole devices
  std::optional<int> ultraServerNodes;  // 1, 2 or 4; none for a pod that is not such a gang's
};

// The annotations a bind writes (merged into the pod with its Binding).
nlohmann::json handoffAnnotations(const Handoff& handoff);

// The hand-off a pod carries: nullopt when it has no AWS_NEURON_IDS; an error naming the
// annotation when the ids or the UltraServer node count are there but unreadable. A missing or
// unreadable time reads as 0.
Result<std::optional<Handoff>> handoffOf(const nlohmann::json& pod);

}  // namespace torus::contracts
