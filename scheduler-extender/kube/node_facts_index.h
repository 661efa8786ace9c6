// NodeFactsIndex: every Node's scheduling facts (labels, taints, cordon: state/node_eligibility.h)
// by name, kept from the node informer's lists and events as ClusterSync reads them (one index,
// which bind admission and the cross-resource preemptor share). Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "scheduler-extender/kube/kube_objects.h"
#include "scheduler-extender/state/node_eligibility.h"

namespace torus::extender {

class NodeFactsIndex {
 public:
  // A list replaces what the index held; an update adds, changes or deletes one node.
  void applyList(const std::vector<NodeUpdate>& nodes);
  void apply(const NodeUpdate& node);

  std::optional<NodeFacts> find(const std::string& name) const;
  std::map<std::string, NodeFacts> all() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, NodeFacts> byName_;
};

}  // namespace torus::extender
