#include "common/topology/fragmentation.h"

#include <algorithm>

namespace torus::topology {
namespace {

DeviceSet wholeFreeDevices(const Node& node, const CoreSet& freeCores) {
  DeviceSet devices;
  for (int device = 0; device < node.deviceCount(); ++device) {
    const CoreSet cores = node.coresOfDevice(device);
    if (!cores.empty() && cores.isSubsetOf(freeCores)) devices.insert(device);
  }
  return devices;
}

}  // namespace

ShapeCatalog::ShapeCatalog(const ShapeRules& rules) {
  sizes_ = allowedDeviceCounts(rules);
  std::reverse(sizes_.begin(), sizes_.end());
  for (const int size : sizes_)
    sets_.push_back(allowedDeviceSets(rules, size));
}

FreeShapes freeShapes(const Node& node, const ShapeCatalog& shapes, const CoreSet& freeCores) {
  const DeviceSet devices = wholeFreeDevices(node, freeCores);
  FreeShapes result;
  for (std::size_t i = 0; i < shapes.sizesLargestFirst().size(); ++i) {
    int count = 0;
    for (const DeviceSet& set : shapes.setsOfSize(static_cast<int>(i))) {
      if (set.isSubsetOf(devices)) ++count;
    }
    result.countsLargestFirst.push_back(count);
  }
  // Free cores on partly used devices: a long run there can still take a multi-core request.
  const CoreSet partial = freeCores - node.coresOfDevices(devices);
  int run = 0;
  int previous = -2;
  partial.forEach([&](int core) {
    run = core == previous + 1 ? run + 1 : 1;
    previous = core;
    result.freeCoreRun = std::max(result.freeCoreRun, run);
  });
  return result;
}

double freeShapeScore(const Node& node, const ShapeCatalog& shapes, const CoreSet& freeCores) {
  const FreeShapes free = freeShapes(node, shapes, freeCores);
  double weighted = 0;
  double total = 0;
  for (std::size_t i = 0; i < free.countsLargestFirst.size(); ++i) {
    const double size = shapes.sizesLargestFirst()[i];
    const double sets = static_cast<double>(shapes.setsOfSize(static_cast<int>(i)).size());
    if (sets == 0) continue;
    weighted += size * free.countsLargestFirst[i] / sets;
    total += size;
  }
  return total == 0 ? 0 : weighted / total;
}

}  // namespace torus::topology
