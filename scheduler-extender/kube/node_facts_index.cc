#include "scheduler-extender/kube/node_facts_index.h"

#include <nlohmann/json.hpp>

namespace torus::extender {

void NodeFactsIndex::applyList(const std::vector<std::shared_ptr<const nlohmann::json>>& items) {
  std::map<std::string, NodeFacts> nodes;
  for (const auto& item : items) {
    NodeFacts facts = parseNodeFacts(*item);
    if (!facts.name.empty()) nodes[facts.name] = std::move(facts);
  }
  std::lock_guard lock(mutex_);
  byName_ = std::move(nodes);
}

void NodeFactsIndex::applyEvent(const kube::WatchEvent& event) {
  if (!event.object) return;
  NodeFacts facts = parseNodeFacts(*event.object);
  if (facts.name.empty()) return;
  std::lock_guard lock(mutex_);
  if (event.type == "DELETED") {
    byName_.erase(facts.name);
  } else {
    byName_[facts.name] = std::move(facts);
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
