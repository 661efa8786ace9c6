#include "common/topology/link_drawing.h"

#include <cstdio>

#include "common/topology/neuronlink_graph.h"

namespace torus::topology {
namespace {

constexpr const char* kLink = "---";
constexpr std::size_t kLinkWidth = 3;

// One column's mark (| or :) under the middle of its cell, padded to the cell plus its link.
std::string columnMark(std::size_t cellWidth, char mark) {
  std::string text(cellWidth + kLinkWidth, ' ');
  text[cellWidth / 2] = mark;
  return text;
}

// A row-major torus: links inside the grid as --- and |, wrap links as ~ at row ends and : above
// and below the columns.
std::string drawTorus(const Node& node, const NeuronLinkGraph& graph, const DeviceCell& cell,
                      std::size_t cellWidth) {
  const int width = node.torusWidth;
  const int rows = node.deviceCount() / width;
  const std::string blank(cellWidth + kLinkWidth, ' ');
  const auto columnWrapLine = [&] {
    std::string line = "   ";
    for (int x = 0; x < width; ++x) {
      line += graph.linked(x, (rows - 1) * width + x) ? columnMark(cellWidth, ':') : blank;
    }
    return line + "\n";
  };
  std::string out = columnWrapLine();
  for (int y = 0; y < rows; ++y) {
    const int first = y * width;
    const bool rowWraps = graph.linked(first, first + width - 1);
    std::string line = rowWraps ? " ~ " : "   ";
    for (int x = 0; x < width; ++x) {
      const int device = first + x;
      line += cell(node.devices[static_cast<std::size_t>(device)]);
      if (x + 1 < width) line += graph.linked(device, device + 1) ? kLink : "   ";
    }
    out += line + (rowWraps ? " ~\n" : "\n");
    if (y + 1 < rows) {
      std::string vertical = "   ";
      for (int x = 0; x < width; ++x) {
        vertical += graph.linked(first + x, first + x + width) ? columnMark(cellWidth, '|') : blank;
      }
      out += vertical + "\n";
    }
  }
  return out + columnWrapLine();
}

std::string drawLine(const Node& node, const NeuronLinkGraph& graph, const DeviceCell& cell,
                     bool ring) {
  std::string out = "   ";
  for (int device = 0; device < node.deviceCount(); ++device) {
    out += cell(node.devices[static_cast<std::size_t>(device)]);
    if (device + 1 < node.deviceCount()) out += graph.linked(device, device + 1) ? kLink : "   ";
  }
  out += "\n";
  const int last = node.deviceCount() - 1;
  if (ring && last > 1) {
    out += graph.linked(0, last) ? "   (neuron" + std::to_string(last) + " links back to neuron0)\n"
                                 : "   (ring link " + std::to_string(last) + "-0 is missing)\n";
  }
  return out;
}

}  // namespace

std::string healthCell(const Device& device) {
  char text[16];
  std::snprintf(text, sizeof(text), device.health.healthy ? "[%2d]" : "[!%d]", device.index);
  return text;
}

std::string drawNeuronLinks(const Node& node, const DeviceCell& cell) {
  if (node.deviceCount() == 0) return "no Neuron devices\n";
  const auto graph = NeuronLinkGraph::fromNode(node);
  const std::size_t cellWidth = cell(node.devices.front()).size();
  switch (node.interconnect) {
    case Interconnect::kTorus2d:
      if (node.torusWidth > 0 && node.deviceCount() % node.torusWidth == 0) {
        return "NeuronLink 2D torus " + std::to_string(node.torusWidth) + "x" +
               std::to_string(node.deviceCount() / node.torusWidth) +
               " (~ row wraps, : column wraps)\n\n" + drawTorus(node, graph, cell, cellWidth);
      }
      [[fallthrough]];
    case Interconnect::kRing:
      return "NeuronLink ring of " + std::to_string(node.deviceCount()) + "\n\n" +
             drawLine(node, graph, cell, true);
    case Interconnect::kChain:
      return "NeuronLink chain of " + std::to_string(node.deviceCount()) + " (no wrap)\n\n" +
             drawLine(node, graph, cell, false);
    case Interconnect::kNone:
      break;
  }
  return "a single device, no NeuronLink\n\n" + drawLine(node, graph, cell, false);
}

}  // namespace torus::topology
