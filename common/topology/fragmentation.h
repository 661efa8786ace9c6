// How much room a placement leaves: the free-shape profile of a node.
//
// After a tentative placement, count for every allowed device-set size (largest first) how many
// allowed sets are still entirely free. Comparing these vectors lexicographically keeps the
// biggest holes intact first — a buddy-style best fit (Knowlton; Li & Cheng for meshes) that on a
// 4x4 torus keeps 16, then 8, then 4 free, and on a ring keeps the longest runs.
#pragma once

#include <compare>
#include <vector>

#include "common/topology/allowed_shapes.h"
#include "common/topology/core_set.h"
#include "common/topology/node.h"

namespace torus::topology {

struct FreeShapes {
  // One entry per allowed size, largest size first: how many allowed sets of that size are free.
  std::vector<int> countsLargestFirst;
  int freeCoreRun = 0;  // longest run of free core ids inside partly used devices

  auto operator<=>(const FreeShapes&) const = default;
};

// Precomputed allowed sets of a node type, so scoring many candidates does not rebuild them.
class ShapeCatalog {
 public:
  explicit ShapeCatalog(const ShapeRules& rules);
  const std::vector<int>& sizesLargestFirst() const { return sizes_; }
  const std::vector<DeviceSet>& setsOfSize(int index) const {
    return sets_[static_cast<std::size_t>(index)];
  }

 private:
  std::vector<int> sizes_;
  std::vector<std::vector<DeviceSet>> sets_;
};

FreeShapes freeShapes(const Node& node, const ShapeCatalog& shapes, const CoreSet& freeCores);

// 0 (nothing placeable beyond single devices) .. 1 (every allowed shape still placeable), for
// ranking nodes: the share of allowed sets, weighted by size, that are still free.
double freeShapeScore(const Node& node, const ShapeCatalog& shapes, const CoreSet& freeCores);

}  // namespace torus::topology
