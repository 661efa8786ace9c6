// choosePlacement: the best valid set of cores or devices for one request on one node. The device
// plugin's GetPreferredAllocation and the scheduler extender both call this, so they can never
// disagree about what a valid set is.
//
// Valid device sets: an allowed shape (allowed_shapes.h) of exactly `count` devices, all
// available, NeuronLink-connected over healthy links, containing every required id.
// Valid core sets: `count` contiguous global core ids, all available, containing every required
// id, whose devices are connected inside the smallest allowed shape that holds them.
// Among valid sets: fewest devices touched, then the smallest allowed shape around them, then the
// free-shape profile left behind (keep the biggest allowed shapes free; fragmentation.h), then
// buddy alignment, then devices directly linked, then lowest ids.
// Scoring every candidate rather than taking the first fit is what keeps large shapes free
// (go-gpuallocator's besteffort policy makes the same argument).
#pragma once

#include "common/base/result.h"
#include "common/topology/core_set.h"
#include "common/topology/node.h"

namespace torus::topology {

enum class AllocationUnit { kCore, kDevice };

struct PlacementRequest {
  AllocationUnit unit = AllocationUnit::kCore;
  int count = 0;
  CoreSet available;  // free ids in `unit` (core ids or device indices)
  CoreSet required;   // ids that must be part of the answer (kubelet's must_include)
};

// Errors: InvalidArgument for a request no node of this type can ever satisfy (an unsupported
// device count, more than the node has, required ids outside the node), ResourceExhausted when
// no valid set is free right now.
Result<CoreSet> choosePlacement(const Node& node, const PlacementRequest& request);

// Whether `count` of `unit` can ever be placed on this node type (ignoring what is free).
Result<void> checkRequestShape(const Node& node, AllocationUnit unit, int count);

// Whether `ids` is a valid set on this node, by the rule above (ignoring what is free and
// healthy): what the device plugin checks a set someone else chose against (the scheduler
// extender's promise) before handing it out. The error says which part of the rule it breaks.
Result<void> checkPlacement(const Node& node, AllocationUnit unit, const CoreSet& ids);

}  // namespace torus::topology
