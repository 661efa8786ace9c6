#include "scheduler-extender/gang/node_domains.h"

#include <set>

#include <nlohmann/json.hpp>

#include "common/contracts/neuron_names.h"
#include "common/contracts/ultraserver_labels.h"

namespace torus::extender {

const std::string& domainLabel(std::size_t level) {
  static const std::array<std::string, kDomainLevels> labels = {
      std::string(contracts::kUltraServerIdLabel),
      std::string(contracts::kNetworkLayerLabelPrefix) + "3",
      std::string(contracts::kNetworkLayerLabelPrefix) + "2",
      std::string(contracts::kNetworkLayerLabelPrefix) + "1",
  };
  return labels.at(level);
}

const char* domainLevelName(std::size_t level) {
  static constexpr std::array<const char*, kDomainLevels> names = {
      "UltraServer", "network layer 3", "network layer 2", "network layer 1"};
  return names.at(level);
}

NodeDomains nodeDomainsFromLabels(const nlohmann::json& node) {
  NodeDomains domains;
  const auto metadata = node.find("metadata");
  if (metadata == node.end() || !metadata->is_object()) return domains;
  const auto labels = metadata->find("labels");
  if (labels == metadata->end() || !labels->is_object()) return domains;
  for (std::size_t level = 0; level < kDomainLevels; ++level) {
    const auto label = labels->find(domainLabel(level));
    if (label != labels->end() && label->is_string())
      domains.levels[level] = label->get<std::string>();
  }
  if (const auto position = contracts::positionOf(*labels))
    domains.ultraServerPair = contracts::pairOf(*position);
  return domains;
}

void NodeDomainIndex::set(const std::string& node, NodeDomains domains) {
  std::lock_guard lock(mutex_);
  byNode_[node] = std::move(domains);
}

void NodeDomainIndex::remove(const std::string& node) {
  std::lock_guard lock(mutex_);
  byNode_.erase(node);
}

void NodeDomainIndex::retain(const std::vector<std::string>& nodes) {
  const std::set<std::string> keep(nodes.begin(), nodes.end());
  std::lock_guard lock(mutex_);
  std::erase_if(byNode_, [&](const auto& entry) { return keep.count(entry.first) == 0; });
}

NodeDomains NodeDomainIndex::of(const std::string& node) const {
  std::lock_guard lock(mutex_);
  const auto it = byNode_.find(node);
  return it == byNode_.end() ? NodeDomains{} : it->second;
}

}  // namespace torus::extender
