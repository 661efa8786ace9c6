#include "common/topology/neuronlink_graph.h"

#include <array>

#include "common/base/check.h"

namespace torus::topology {
namespace {

// trn2: the driver's table, one column per SENG (so not a simple up/left/down/right order).
// clang-format off
constexpr std::array<std::array<int, 4>, 16> kTrn2Neighbours = {{
    {12, 1, 3, 4}, {0, 13, 5, 2}, {14, 3, 1, 6},  {2, 15, 7, 0},
    {8, 5, 7, 0},  {4, 9, 1, 6},  {10, 7, 5, 2},  {6, 11, 3, 4},
    {4, 9, 11, 12}, {8, 5, 13, 10}, {6, 11, 9, 14}, {10, 7, 15, 8},
    {0, 13, 15, 8}, {12, 1, 9, 14}, {2, 15, 13, 10}, {14, 3, 11, 12},
}};
// clang-format on

int wrap(int value, int modulus) {
  return ((value % modulus) + modulus) % modulus;
}

std::vector<int> torusNeighboursUpLeftDownRight(int device, int width, int count) {
  const int rows = count / width;
  const TorusCoordinate at = torusCoordinate(device, width);
  const auto id = [&](int x, int y) { return wrap(y, rows) * width + wrap(x, width); };
  return {id(at.x, at.y - 1), id(at.x - 1, at.y), id(at.x, at.y + 1), id(at.x + 1, at.y)};
}

}  // namespace

TorusCoordinate torusCoordinate(int device, int width, int node) {
  if (width <= 0) return {device, 0, node};
  return {device % width, device / width, node};
}

std::vector<int> driverNeighbours(const InstanceType& type, int device) {
  const int count = type.deviceCount;
  if (device < 0 || device >= count || count < 2) return {};
  switch (type.interconnect) {
    case Interconnect::kNone:
      return {};
    case Interconnect::kRing:
      // inf1 reports its east link then its west link; inf2's table lists previous then next.
      if (type.generation == Generation::kInf1) {
        return {wrap(device + 1, count), wrap(device - 1, count)};
      }
      return {wrap(device - 1, count), wrap(device + 1, count)};
    case Interconnect::kChain: {
      std::vector<int> result;
      if (device > 0) result.push_back(device - 1);
      if (device + 1 < count) result.push_back(device + 1);
      return result;
    }
    case Interconnect::kTorus2d:
      if (type.generation == Generation::kTrn2 && count == 16) {
        const auto& row = kTrn2Neighbours[static_cast<std::size_t>(device)];
        return {row.begin(), row.end()};
      }
      return torusNeighboursUpLeftDownRight(device, type.torusWidth, count);
  }
  return {};
}

void NeuronLinkGraph::addLink(int a, int b) {
  adjacency_[static_cast<std::size_t>(a)] |= std::uint64_t{1} << b;
  adjacency_[static_cast<std::size_t>(b)] |= std::uint64_t{1} << a;
}

NeuronLinkGraph NeuronLinkGraph::fromNode(const Node& node) {
  NeuronLinkGraph graph;
  graph.size_ = std::min(node.deviceCount(), kMaxDevices);
  graph.adjacency_.assign(static_cast<std::size_t>(graph.size_), 0);
  const auto reports = [&](int from, int to) {
    for (const int neighbour : node.devices[static_cast<std::size_t>(from)].connected) {
      if (neighbour == to) return true;
    }
    return false;
  };
  for (int a = 0; a < graph.size_; ++a) {
    for (const int b : node.devices[static_cast<std::size_t>(a)].connected) {
      if (b < 0 || b >= graph.size_ || b == a) continue;
      if (reports(b, a)) {
        graph.addLink(a, b);
      } else {
        graph.oneSided_.emplace_back(a, b);
      }
    }
  }
  return graph;
}

NeuronLinkGraph NeuronLinkGraph::ultraServer(const InstanceType& type) {
  NeuronLinkGraph graph;
  const int perNode = type.deviceCount;
  graph.size_ = perNode * kUltraServerNodes;
  TORUS_CHECK(graph.size_ <= kMaxDevices, "UltraServer larger than 64 devices");
  graph.adjacency_.assign(static_cast<std::size_t>(graph.size_), 0);
  for (int z = 0; z < kUltraServerNodes; ++z) {
    for (int device = 0; device < perNode; ++device) {
      const int self = z * perNode + device;
      for (const int neighbour : driverNeighbours(type, device)) {
        graph.addLink(self, z * perNode + neighbour);
      }
      graph.addLink(self, wrap(z + 1, kUltraServerNodes) * perNode + device);
    }
  }
  return graph;
}

bool NeuronLinkGraph::linked(int a, int b) const {
  if (a < 0 || b < 0 || a >= size_ || b >= size_) return false;
  return (adjacency_[static_cast<std::size_t>(a)] >> b) & 1U;
}

std::vector<int> NeuronLinkGraph::neighbours(int device) const {
  std::vector<int> result;
  for (int other = 0; other < size_; ++other) {
    if (linked(device, other)) result.push_back(other);
  }
  return result;
}

int NeuronLinkGraph::hops(int a, int b) const {
  if (a < 0 || b < 0 || a >= size_ || b >= size_) return -1;
  std::uint64_t reached = std::uint64_t{1} << a;
  std::uint64_t frontier = reached;
  for (int distance = 0; frontier != 0; ++distance) {
    if ((reached >> b) & 1U) return distance;
    std::uint64_t next = 0;
    for (int device = 0; device < size_; ++device) {
      if ((frontier >> device) & 1U) next |= adjacency_[static_cast<std::size_t>(device)];
    }
    frontier = next & ~reached;
    reached |= next;
  }
  return -1;
}

bool NeuronLinkGraph::isConnected(const DeviceSet& devices) const {
  std::uint64_t members = 0;
  bool outside = false;
  devices.forEach([&](int device) {
    if (device >= size_) {
      outside = true;
    } else {
      members |= std::uint64_t{1} << device;
    }
  });
  if (outside) return false;
  if (members == 0) return true;
  std::uint64_t reached = members & (~members + 1);  // lowest member
  std::uint64_t frontier = reached;
  while (frontier != 0) {
    std::uint64_t next = 0;
    for (int device = 0; device < size_; ++device) {
      if ((frontier >> device) & 1U) next |= adjacency_[static_cast<std::size_t>(device)];
    }
    frontier = next & members & ~reached;
    reached |= frontier;
  }
  return reached == members;
}

}  // namespace torus::topology
