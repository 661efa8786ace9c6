// AWS's UltraServer labels on a Node: where the node sits in a Trn2 UltraServer. The node agent
// writes them from the driver's class attributes (labelsOf); the UltraServer operator and the
// scheduler extender's gang placement read them back (positionOf), so all three see one
// position and one rule for pairs. The names are AWS's device plugin's (>= 2.30), which
// LeaderWorkerSet's exclusive topology and users' pod affinities already select on:
//
//   neuron.amazonaws.com/ultraserver-mode         the modes the last election allows: "X4_X2H_X1"
//   neuron.amazonaws.com/ultraserver-server-id-4  the UltraServer (all four nodes share it)
//   neuron.amazonaws.com/ultraserver-server-id-2  the NeuronLink pair (two nodes share it)
//   neuron.amazonaws.com/ultraserver-node-id-4    0-3, the node's place among the four
//   neuron.amazonaws.com/ultraserver-node-id-2    0-1, its place in its pair
//
// A pair is the two nodes sharing server-id-2, and nothing else: which nodes pair up depends on
// the election (X2H pairs over the horizontal links, X2V over the vertical ones), so it cannot be
// derived from node-id-4. A node without server-id-2 is in no pair.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "common/topology/node.h"

namespace torus::contracts {

inline constexpr std::string_view kUltraServerModeLabel = "neuron.amazonaws.com/ultraserver-mode";
inline constexpr std::string_view kUltraServerIdLabel =
    "neuron.amazonaws.com/ultraserver-server-id-4";
inline constexpr std::string_view kUltraServerPairIdLabel =
    "neuron.amazonaws.com/ultraserver-server-id-2";
inline constexpr std::string_view kUltraServerNodeIdLabel =
    "neuron.amazonaws.com/ultraserver-node-id-4";
inline constexpr std::string_view kUltraServerPairNodeIdLabel =
    "neuron.amazonaws.com/ultraserver-node-id-2";

// The labels of a position; a field the driver did not report (-1, "", no modes) has no label.
std::map<std::string, std::string> labelsOf(const topology::UltraServerPosition& position);

// The position a Node's metadata.labels describe; nullopt when it carries none of the labels
// (or `labels` is not an object). A label that does not parse reads as unreported: a node id
// outside 0-3 (0-1 for node-id-2) is -1, a mode that is not one of AWS's is left out.
std::optional<topology::UltraServerPosition> positionOf(const nlohmann::json& labels);

// The NeuronLink pair a node belongs to (its server-id-2), "" when it is in none.
inline const std::string& pairOf(const topology::UltraServerPosition& position) {
  return position.serverId2;
}

}  // namespace torus::contracts
