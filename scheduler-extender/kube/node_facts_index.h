// NodeFactsIndex: every Node's scheduling facts (labels, taints, cordon: state/node_eligibility.h)
// by name, kept from a node informer's lists and events. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/kube/informer.h"
#include "scheduler-extender/state/node_eligibility.h"

namespace torus::extender {

class NodeFactsIndex {
 public:
  void applyList(const std::vector<std::shared_ptr<const nlohmann::json>>& items);
  void applyEvent(const kube::WatchEvent& event);

  std::optional<NodeFacts> find(const std::string& name) const;
  std::map<std::string, NodeFacts> all() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, NodeFacts> byName_;
};

}  // namespace torus::extender
