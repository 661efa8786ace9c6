#include "scheduler-extender/state/node_score.h"

#include <algorithm>

namespace torus::extender {

int nodeScore(const topology::Node& model, const topology::ShapeCatalog& shapes,
              const topology::CoreSet& freeBefore, const topology::CoreSet& freeAfter) {
  const int total = model.logicalCoreCount();
  const double used = total == 0 ? 0 : 1.0 - static_cast<double>(freeAfter.size()) / total;
  // What this placement costs the node in free shapes, not how many it has left: judging the
  // shapes left would prefer empty nodes and spread small pods over every big hole.
  const double loss = topology::freeShapeScore(model, shapes, freeBefore) -
                      topology::freeShapeScore(model, shapes, freeAfter);
  // Node types differ in how many set sizes they can serve (trn2: 1, 4, 8 or 16 devices; an
  // inf2 ring: any run). Filling the rigid ones first keeps the flexible ones for requests only
  // they can take.
  const double rigidity = 1.0 - static_cast<double>(shapes.sizesLargestFirst().size()) /
                                    std::max(1, model.deviceCount());
  // Best fit (fill partly used nodes), break as few large shapes as possible, rigid types first.
  return static_cast<int>(10.0 * (0.3 * used + 0.3 * (1.0 - loss) + 0.4 * rigidity) + 0.5);
}

}  // namespace torus::extender
