#include "common/topology/placement.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "common/topology/allowed_shapes.h"
#include "common/topology/fragmentation.h"
#include "common/topology/neuronlink_graph.h"

namespace torus::topology {
namespace {

std::string unitName(AllocationUnit unit, int count) {
  const char* name = unit == AllocationUnit::kCore ? "core" : "device";
  return std::to_string(count) + " " + name + (count == 1 ? "" : "s");
}

std::string countsText(const std::vector<int>& counts) {
  std::string text;
  for (const int count : counts)
    text += (text.empty() ? "" : ", ") + std::to_string(count);
  return text;
}

// True when every device of `members` is reachable from the others through devices of `within`.
bool connectedWithin(const NeuronLinkGraph& graph, const DeviceSet& members,
                     const DeviceSet& within) {
  const int start = members.first();
  if (start < 0) return true;
  DeviceSet reached;
  reached.insert(start);
  std::vector<int> frontier{start};
  while (!frontier.empty()) {
    const int device = frontier.back();
    frontier.pop_back();
    for (const int next : graph.neighbours(device)) {
      if (within.contains(next) && !reached.contains(next)) {
        reached.insert(next);
        frontier.push_back(next);
      }
    }
  }
  return members.isSubsetOf(reached);
}

// What a candidate is judged by; larger is better, compared member by member.
struct Rank {
  int fewerDevices = 0;  // minus the number of devices touched
  int tighterShape = 0;  // minus the size of the smallest allowed shape holding those devices
  FreeShapes left;       // free-shape profile after the placement
  // Starts at a multiple of its size, like a buddy block: when its neighbours free up they join
  // it into the next larger allowed shape (8-15 next to a used 0 leaves 1-7 to rejoin 0).
  bool aligned = false;
  bool directlyLinked = false;
  int lowerIds = 0;  // minus the first id, so ties go to the lowest ids

  auto operator<=>(const Rank&) const = default;
};

Result<CoreSet> chooseDevices(const Node& node, const PlacementRequest& request,
                              const NeuronLinkGraph& graph, const ShapeCatalog& shapes) {
  const CoreSet freeCores = node.coresOfDevices(request.available);
  std::optional<std::pair<Rank, DeviceSet>> best;
  for (const DeviceSet& set : allowedDeviceSets(shapeRulesOf(node), request.count)) {
    if (!set.isSubsetOf(request.available) || !request.required.isSubsetOf(set)) continue;
    if (!graph.isConnected(set)) continue;
    Rank rank{-set.size(),
              -set.size(),
              freeShapes(node, shapes, freeCores - node.coresOfDevices(set)),
              set.first() % set.size() == 0,
              true,
              -set.first()};
    if (!best || rank > best->first) best.emplace(std::move(rank), set);
  }
  if (!best) {
    return makeError(ErrorCode::kResourceExhausted,
                     "no free, NeuronLink-connected allowed set of " +
                         unitName(AllocationUnit::kDevice, request.count) + " on " +
                         node.instanceType + " (free devices: " +
                         (request.available.empty() ? "none" : request.available.toRangeString()) +
                         ")");
  }
  return best->second;
}

// The devices a run of cores touches: valid when they are connected inside the smallest allowed
// shape that holds them (shapeSize 0: no allowed shape holds them).
struct DeviceRun {
  int first = 0;
  int count = 0;
  bool valid = false;
  int shapeSize = 0;
};

DeviceRun judgeDeviceRun(int first, int count, const NeuronLinkGraph& graph,
                         const ShapeCatalog& shapes) {
  const DeviceSet touched = DeviceSet::range(first, count);
  DeviceRun run{first, count, false, 0};
  const auto& sizes = shapes.sizesLargestFirst();
  for (int i = static_cast<int>(sizes.size()) - 1; i >= 0 && run.shapeSize == 0; --i) {
    for (const DeviceSet& set : shapes.setsOfSize(i)) {
      if (touched.isSubsetOf(set)) {
        run.shapeSize = set.size();
        run.valid = connectedWithin(graph, touched, set);
        break;
      }
    }
  }
  return run;
}

Result<CoreSet> chooseCores(const Node& node, const PlacementRequest& request,
                            const NeuronLinkGraph& graph, const ShapeCatalog& shapes) {
  // Many core runs share a device run: judge each device run once.
  std::vector<DeviceRun> runs;
  const auto judge = [&](int first, int count) -> const DeviceRun& {
    for (const DeviceRun& run : runs) {
      if (run.first == first && run.count == count) return run;
    }
    runs.push_back(judgeDeviceRun(first, count, graph, shapes));
    return runs.back();
  };

  // Cheap ranking first (devices touched, shape size); the free-shape profile is computed only
  // for the candidates that tie on it, which is what makes a 64-core node answer in microseconds.
  struct Candidate {
    int start;
    int devicesTouched;
    int shapeSize;
  };
  std::vector<Candidate> candidates;
  const int perDevice = node.logicalCoresPerDevice();
  const int total = node.logicalCoreCount();
  for (int start = 0; start + request.count <= total; ++start) {
    const CoreSet cores = CoreSet::range(start, request.count);
    if (!cores.isSubsetOf(request.available) || !request.required.isSubsetOf(cores)) continue;
    const int firstDevice = start / perDevice;
    const int lastDevice = (start + request.count - 1) / perDevice;
    const DeviceRun& run = judge(firstDevice, lastDevice - firstDevice + 1);
    if (!run.valid) continue;
    candidates.push_back({start, run.count, run.shapeSize});
  }
  if (candidates.empty()) {
    return makeError(
        ErrorCode::kResourceExhausted,
        "no free run of " + unitName(AllocationUnit::kCore, request.count) +
            " with NeuronLink-connected devices on " + node.instanceType + " (free cores: " +
            (request.available.empty() ? "none" : request.available.toRangeString()) + ")");
  }
  const auto cheapKey = [](const Candidate& c) {
    return std::make_pair(-c.devicesTouched, -c.shapeSize);
  };
  auto bestCheap = cheapKey(candidates.front());
  for (const Candidate& c : candidates)
    bestCheap = std::max(bestCheap, cheapKey(c));

  std::optional<std::pair<Rank, CoreSet>> best;
  for (const Candidate& c : candidates) {
    if (cheapKey(c) != bestCheap) continue;
    const CoreSet cores = CoreSet::range(c.start, request.count);
    const DeviceSet touched = DeviceSet::range(c.start / perDevice, c.devicesTouched);
    Rank rank{-c.devicesTouched,
              -c.shapeSize,
              freeShapes(node, shapes, request.available - cores),
              touched.first() % c.devicesTouched == 0,
              graph.isConnected(touched),
              -c.start};
    if (!best || rank > best->first) best.emplace(std::move(rank), cores);
  }
  return best->second;
}

}  // namespace

Result<void> checkRequestShape(const Node& node, AllocationUnit unit, int count) {
  if (count <= 0) {
    return makeError(ErrorCode::kInvalidArgument,
                     "a request must ask for at least 1, got " + std::to_string(count));
  }
  const int capacity = unit == AllocationUnit::kCore ? node.logicalCoreCount() : node.deviceCount();
  if (count > capacity) {
    return makeError(ErrorCode::kInvalidArgument,
                     node.instanceType + " has " + unitName(unit, capacity) +
                         ", request asks for " + std::to_string(count));
  }
  if (unit == AllocationUnit::kDevice) {
    const ShapeRules rules = shapeRulesOf(node);
    if (!isAllowedDeviceCount(rules, count)) {
      return makeError(ErrorCode::kInvalidArgument,
                       "instance type " + node.instanceType + " does not support requests for " +
                           unitName(unit, count) +
                           " (allowed: " + countsText(allowedDeviceCounts(rules)) + ")");
    }
  }
  return okResult();
}

Result<CoreSet> choosePlacement(const Node& node, const PlacementRequest& request) {
  TORUS_RETURN_IF_ERROR(checkRequestShape(node, request.unit, request.count), "placement");
  if (request.required.size() > request.count) {
    return makeError(ErrorCode::kInvalidArgument,
                     "placement: " + std::to_string(request.required.size()) +
                         " required ids do not fit in a request for " +
                         unitName(request.unit, request.count));
  }
  if (!request.required.isSubsetOf(request.available)) {
    return makeError(ErrorCode::kInvalidArgument,
                     "placement: required ids " +
                         (request.required - request.available).toRangeString() +
                         " are not available");
  }
  const auto graph = NeuronLinkGraph::fromNode(node);
  const ShapeCatalog shapes(shapeRulesOf(node));
  return request.unit == AllocationUnit::kDevice ? chooseDevices(node, request, graph, shapes)
                                                 : chooseCores(node, request, graph, shapes);
}

Result<void> checkPlacement(const Node& node, AllocationUnit unit, const CoreSet& ids) {
  const int count = ids.size();
  TORUS_RETURN_IF_ERROR(checkRequestShape(node, unit, count), "set " + ids.toRangeString());
  const int capacity = unit == AllocationUnit::kCore ? node.logicalCoreCount() : node.deviceCount();
  if (ids.first() < 0 || ids.last() >= capacity) {
    return makeError(ErrorCode::kInvalidArgument, "set " + ids.toRangeString() + ": " +
                                                      node.instanceType + " has ids 0-" +
                                                      std::to_string(capacity - 1));
  }
  const auto graph = NeuronLinkGraph::fromNode(node);
  const ShapeCatalog shapes(shapeRulesOf(node));
  if (unit == AllocationUnit::kDevice) {
    const auto allowed = allowedDeviceSets(shapeRulesOf(node), count);
    if (std::find(allowed.begin(), allowed.end(), ids) == allowed.end()) {
      return makeError(ErrorCode::kInvalidArgument,
                       "devices " + ids.toRangeString() + " are not an allowed shape of " +
                           unitName(unit, count) + " on " + node.instanceType);
    }
    if (!graph.isConnected(ids)) {
      return makeError(ErrorCode::kFailedPrecondition,
                       "devices " + ids.toRangeString() +
                           " are not NeuronLink-connected (a link between them is down)");
    }
    return okResult();
  }
  if (ids != CoreSet::range(ids.first(), count)) {
    return makeError(ErrorCode::kInvalidArgument,
                     "cores " + ids.toRangeString() + " are not one run of consecutive ids");
  }
  const int perDevice = node.logicalCoresPerDevice();
  const int firstDevice = ids.first() / perDevice;
  const DeviceRun run =
      judgeDeviceRun(firstDevice, ids.last() / perDevice - firstDevice + 1, graph, shapes);
  if (!run.valid) {
    return makeError(ErrorCode::kFailedPrecondition,
                     "cores " + ids.toRangeString() + " span devices " +
                         DeviceSet::range(run.first, run.count).toRangeString() +
                         " that are not NeuronLink-connected inside an allowed shape");
  }
  return okResult();
}

}  // namespace torus::topology
