#include "common/topology/allowed_shapes.h"

#include <algorithm>

namespace torus::topology {

ShapeRules shapeRulesOf(const Node& node) {
  return {node.interconnect, node.deviceCount(), node.torusWidth};
}

std::vector<int> allowedDeviceCounts(const ShapeRules& rules) {
  std::vector<int> counts;
  if (rules.deviceCount <= 0) return counts;
  if (rules.interconnect == Interconnect::kTorus2d && rules.torusWidth > 0) {
    counts = {1, rules.torusWidth, 2 * rules.torusWidth, rules.deviceCount};
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    std::erase_if(counts, [&](int count) { return count > rules.deviceCount; });
    return counts;
  }
  for (int count = 1; count <= rules.deviceCount; ++count)
    counts.push_back(count);
  return counts;
}

bool isAllowedDeviceCount(const ShapeRules& rules, int count) {
  const std::vector<int> counts = allowedDeviceCounts(rules);
  return std::find(counts.begin(), counts.end(), count) != counts.end();
}

std::vector<DeviceSet> allowedDeviceSets(const ShapeRules& rules, int count) {
  std::vector<DeviceSet> sets;
  if (!isAllowedDeviceCount(rules, count)) return sets;
  const bool torus = rules.interconnect == Interconnect::kTorus2d && rules.torusWidth > 0;
  if (torus && count > 1 && count < rules.deviceCount) {
    // Whole rows starting at a row boundary: one row, or two adjacent rows without wrapping.
    for (int start = 0; start + count <= rules.deviceCount; start += rules.torusWidth) {
      sets.push_back(DeviceSet::range(start, count));
    }
    return sets;
  }
  for (int start = 0; start + count <= rules.deviceCount; ++start) {
    sets.push_back(DeviceSet::range(start, count));
  }
  return sets;
}

bool isAllowedDeviceSet(const ShapeRules& rules, const DeviceSet& devices) {
  const std::vector<DeviceSet> sets = allowedDeviceSets(rules, devices.size());
  return std::find(sets.begin(), sets.end(), devices) != sets.end();
}

}  // namespace torus::topology
