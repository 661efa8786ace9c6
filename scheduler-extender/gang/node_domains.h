// Where each node sits in the network, as the node's labels say, for placing a gang's pods close
// together: its UltraServer (NeuronLink between the nodes), then EC2's network layers 3, 2 and 1
// (closest to farthest: nodes sharing layer 3 share a network spine). Nodes without a label are
// in no domain at that level.
#pragma once

#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace torus::extender {

inline constexpr std::size_t kDomainLevels = 4;

struct NodeDomains {
  // Tightest first: UltraServer id, network layer 3, layer 2, layer 1; "" when not labelled.
  std::array<std::string, kDomainLevels> levels;
  // The node's pair inside its UltraServer (server-id-2): two nodes that can run as one job.
  std::string ultraServerPair;
  bool operator==(const NodeDomains&) const = default;
};

// The label each level is read from, and how it is named in messages.
const std::string& domainLabel(std::size_t level);
const char* domainLevelName(std::size_t level);

// From a Node object's metadata.labels (absent or not an object: no domain at all).
NodeDomains nodeDomainsFromLabels(const nlohmann::json& node);

// Every Neuron node's domains, fed by the node informer, read by filter. Thread-safe.
class NodeDomainIndex {
 public:
  void set(const std::string& node, NodeDomains domains);
  void remove(const std::string& node);
  // Keeps only these nodes (after a full list).
  void retain(const std::vector<std::string>& nodes);
  NodeDomains of(const std::string& node) const;  // empty domains for a node not known

 private:
  mutable std::mutex mutex_;
  std::map<std::string, NodeDomains> byNode_;
};

}  // namespace torus::extender
