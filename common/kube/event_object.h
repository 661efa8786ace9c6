// core/v1 Events as Torus's components post them: about a Pod (the extender's allocations and
// preemptions) or a Node (the agent's LNC changes).
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace torus::kube {

struct EventSubject {
  std::string kind;  // "Pod", "Node"
  std::string name;
  std::string namespace_;  // empty for cluster-scoped objects
  std::string uid;
};

// An Event about `subject` in `eventNamespace`, stamped now, reported by `component` (on `host`
// when given: kubelet-style node events name it).
nlohmann::json eventObject(const EventSubject& subject, const std::string& eventNamespace,
                           bool normal, const std::string& reason, const std::string& message,
                           const std::string& component, const std::string& host = "");

}  // namespace torus::kube
