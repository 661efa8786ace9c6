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
  std::string resourceType;  // "" = whole devices
};

// The annotations a bind writes (merged into the pod with its Binding).
nlohmann::json handoffAnnotations(const Handoff& handoff);

// The hand-off a pod carries: nullopt when it has no AWS_NEURON_IDS; an error naming the
// annotation when the ids are there but unreadable. A missing or unreadable time reads as 0.
Result<std::optional<Handoff>> handoffOf(const nlohmann::json& pod);

}  // namespace torus::contracts
