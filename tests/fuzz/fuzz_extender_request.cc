// The extender's HTTP surface without the socket: any bytes as a filter, prioritize, bind or
// preempt body (the first byte picks the verb), parsed, run against a small cluster with pods
// already bound, and answered. Nothing may crash, throw or answer with invalid JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "scheduler-extender/server/extender_json.h"
#include "scheduler-extender/state/cluster_state.h"
#include "scheduler-extender/verbs/verbs.h"

namespace {

using namespace torus::extender;

ClusterState& cluster() {
  static ClusterState state;
  static const bool ready = [] {
    (void)state.upsertNode("trn-a", "trn2.48xlarge");
    (void)state.upsertNode("inf-b", "inf2.48xlarge", 0, torus::topology::DeviceSet::range(3, 2));
    PodDemand held;
    held.name = "held";
    held.namespace_ = "default";
    held.uid = "held-uid";
    held.count = 8;
    held.resourceName = "aws.amazon.com/neuroncore";
    (void)state.record("trn-a", held, torus::topology::CoreSet::range(8, 8));
    return true;
  }();
  (void)ready;
  return state;
}

void mustBeJson(const std::string& text) {
  if (!nlohmann::json::accept(text)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      if (auto args = parseExtenderArgs(body)) {
        const FilterResult result = filter(cluster(), args->pod, args->nodeNames);
        mustBeJson(filterResultJson(result, body, args->fullNodes));
      } else {
        FilterResult failed;
        failed.error = args.error().message;
        mustBeJson(filterResultJson(failed, body, false));
      }
      break;
    case 1:
      if (auto args = parseExtenderArgs(body)) {
        mustBeJson(prioritiesJson(prioritize(cluster(), args->pod, args->nodeNames)));
      }
      break;
    case 2: {
      auto args = parseBindingArgs(body);
      mustBeJson(bindingResultJson(args ? "" : args.error().message));
      break;
    }
    default:
      if (auto args = parsePreemptionArgs(body)) {
        mustBeJson(preemptionResultJson(preempt(cluster(), args->pod, args->victimUidsByNode),
                                        args->pdbViolationsByNode));
      }
      break;
  }
  return 0;
}
