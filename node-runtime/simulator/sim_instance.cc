#include "node-runtime/simulator/sim_instance.h"

#include <array>
#include <string>
#include <vector>

#include "common/base/strings.h"

namespace torus::simulator {
namespace {

using topology::Generation;
using topology::InstanceType;
using topology::Interconnect;

constexpr std::uint64_t kGiB = 1024ULL * 1024 * 1024;

struct Uncatalogued {
  InstanceType type;
  std::string_view source;
};

// What EC2 sells and Torus's catalog does not list. Only what the driver serves matters here:
// the chips (generation, count, cores, memory), LNC and the EFA functions; the network figure is
// not the driver's and is left 0.
// clang-format off
constexpr std::array<Uncatalogued, 1> kUncatalogued = {{
    // trn2.3xlarge: one Trainium2 of 8 physical cores and 96 GiB, 4 NeuronCores at LNC 2 (as
    // published runs on it report), no NeuronLink partner and no EFA a chip can be paired with
    // (ai-dynamo/nixl PR#1994). Its routing id, and so its index, is assumed to be 0.
    {{"trn2.3xlarge", Generation::kTrn2, 1, 8, 96 * kGiB, Interconnect::kNone, 0, 2, 2, 0, 0, 1, false},
     "one Trainium2 (4 NeuronCores at LNC 2, 96 GiB) and no EFA, from runs AWS users published "
     "on it"},
}};
// clang-format on

}  // namespace

Result<SimulatedInstance> simulatedInstance(std::string_view name) {
  if (const InstanceType* type = topology::findInstanceType(name)) {
    return SimulatedInstance{*type, true, {}};
  }
  std::string_view bare = name;
  if (bare.starts_with("ml.")) bare.remove_prefix(3);
  for (const Uncatalogued& instance : kUncatalogued) {
    if (instance.type.name == bare) return SimulatedInstance{instance.type, false, instance.source};
  }
  std::vector<std::string_view> known;
  for (const InstanceType& type : topology::allInstanceTypes())
    known.push_back(type.name);
  std::vector<std::string_view> uncatalogued;
  for (const Uncatalogued& instance : kUncatalogued)
    uncatalogued.push_back(instance.type.name);
  return makeError(ErrorCode::kInvalidArgument,
                   "simulate: unknown instance type " + quoteJsonString(name) +
                       " (known: " + joinStrings(known, ", ") +
                       "; and, not in Torus's catalog: " + joinStrings(uncatalogued, ", ") + ")");
}

bool driverListsNeighbours(Generation generation, int deviceCount) {
  switch (generation) {
    case Generation::kInf1:
      return true;
    case Generation::kTrn1:
    case Generation::kTrn2:
      return deviceCount > 0 && deviceCount % 16 == 0;
    case Generation::kInf2:
      return deviceCount == 6 || deviceCount == 12;
  }
  return false;
}

}  // namespace torus::simulator
