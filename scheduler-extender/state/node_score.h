// How good a placement is for its node, 0..10 (prioritize's score, and how a gang's members pick
// among nodes): best fit, fewest large free shapes broken, rigid node types first.
#pragma once

#include "common/topology/core_set.h"
#include "common/topology/fragmentation.h"
#include "common/topology/node.h"

namespace torus::extender {

// `freeBefore` and `freeAfter` are the node's free cores without and with the placement.
int nodeScore(const topology::Node& model, const topology::ShapeCatalog& shapes,
              const topology::CoreSet& freeBefore, const topology::CoreSet& freeAfter);

}  // namespace torus::extender
