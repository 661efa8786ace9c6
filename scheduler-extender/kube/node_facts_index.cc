#include "scheduler-extender/kube/node_facts_index.h"

namespace torus::extender {

void NodeFactsIndex::applyList(const std::vector<NodeUpdate>& nodes) {
  std::map<std::string, NodeFacts> byName;
  for (const NodeUpdate& node : nodes) {
    if (node.record && !node.record->facts.name.empty())
      byName[node.record->facts.name] = node.record->facts;
  }
  std::lock_guard lock(mutex_);
  byName_ = std::move(byName);
}

void NodeFactsIndex::apply(const NodeUpdate& node) {
  std::lock_guard lock(mutex_);
  if (node.deleted) {
    byName_.erase(node.name);
  } else if (node.record && !node.record->facts.name.empty()) {
    byName_[node.record->facts.name] = node.record->facts;
  }
}

std::optional<NodeFacts> NodeFactsIndex::find(const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto found = byName_.find(name);
  if (found == byName_.end()) return std::nullopt;
  return found->second;
}

std::map<std::string, NodeFacts> NodeFactsIndex::all() const {
  std::lock_guard lock(mutex_);
  return byName_;
}

}  // namespace torus::extender
