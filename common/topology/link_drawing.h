// An ASCII drawing of a node's NeuronLink ring, chain or 2D torus, as its links really are (a
// cut link shows as a gap where it is). Shared by neuron-ls (health) and kubectl-neuron (who
// holds which device); the caller says what each device's cell shows.
#pragma once

#include <functional>
#include <string>

#include "common/topology/node.h"

namespace torus::topology {

// `cell` must return text of the same width for every device, e.g. "[ 3]".
using DeviceCell = std::function<std::string(const Device& device)>;

// A title line ("NeuronLink 2D torus 4x4 ...") and the drawing.
std::string drawNeuronLinks(const Node& node, const DeviceCell& cell);

// "[ 3]", or "[!3]" for an unhealthy device.
std::string healthCell(const Device& device);

}  // namespace torus::topology
