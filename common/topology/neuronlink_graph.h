// The NeuronLink graph of a node (or of a whole Trn2 UltraServer): who is wired to whom, hop
// counts, and whether a device set is connected.
//
// Owns: the driver's neighbour order for each instance type (the tables in the Neuron driver's
// dhal files) and graph queries. Does not own: which sets may be handed out (allowed_shapes.h).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "common/topology/instance_catalog.h"
#include "common/topology/node.h"

namespace torus::topology {

// The neighbours of `device` in the order the driver prints them in connected_devices.
std::vector<int> driverNeighbours(const InstanceType& type, int device);

struct TorusCoordinate {
  int x = 0;  // column within a row
  int y = 0;  // row
  int z = 0;  // node within an UltraServer
};

// Row-major 4x4 torus position of a device; z is the UltraServer node.
TorusCoordinate torusCoordinate(int device, int width, int node = 0);

class NeuronLinkGraph {
 public:
  static constexpr int kMaxDevices = 64;

  // Links of a node model. A link counts only when both ends report it: the driver prints both
  // directions, so a one-sided link means a broken or garbled report, listed in oneSidedLinks().
  static NeuronLinkGraph fromNode(const Node& node);
  // The 3D torus of a Trn2 UltraServer: 4 nodes of `type`, device d of node z has global index
  // z * deviceCount + d and is linked to the same position on nodes z-1 and z+1 (a Z ring).
  static NeuronLinkGraph ultraServer(const InstanceType& type);

  int size() const { return size_; }
  bool linked(int a, int b) const;
  std::vector<int> neighbours(int device) const;  // ascending
  // Fewest links between a and b, -1 when unreachable.
  int hops(int a, int b) const;
  // True when the devices of `devices` form one connected piece using only links between them.
  bool isConnected(const DeviceSet& devices) const;
  bool isSymmetric() const { return oneSided_.empty(); }
  const std::vector<std::pair<int, int>>& oneSidedLinks() const { return oneSided_; }

 private:
  void addLink(int a, int b);

  int size_ = 0;
  std::vector<std::uint64_t> adjacency_;
  std::vector<std::pair<int, int>> oneSided_;
};

}  // namespace torus::topology
