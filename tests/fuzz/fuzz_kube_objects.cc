// Kubernetes objects as the API (or anyone who can create one) may shape them: any JSON as a Pod
// and as a Node, read the way the extender and the agent read them, and any text as the
// torus.dev/topology annotation, whose round trip must be exact.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/base/json_nesting.h"
#include "common/contracts/topology_annotation.h"
#include "common/kube/object_fields.h"
#include "scheduler-extender/kube/kube_objects.h"
#include "scheduler-extender/state/node_eligibility.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torus;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto summary = contracts::parseTopologyAnnotation(text)) {
    const std::string again = contracts::formatTopologyAnnotation(*summary);
    auto reparsed = contracts::parseTopologyAnnotation(again);
    if (!reparsed || contracts::formatTopologyAnnotation(*reparsed) != again) std::abort();
  }

  // The API server's objects nest a dozen levels; anything deeper is refused before parsing, as
  // every reader of untrusted JSON here does.
  if (!checkJsonNesting(text)) return 0;
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, false);
  if (object.is_discarded()) return 0;
  (void)extender::parsePodRecord(object);
  (void)extender::parseNodeRecord(object);
  (void)kube::stringField(object, "spec", "nodeName");
  (void)kube::annotationOf(object, "AWS_NEURON_IDS");
  const extender::NodeFacts node = extender::parseNodeFacts(object);
  const extender::PodNodeRules rules = extender::parsePodNodeRules(object);
  (void)extender::nodeAdmits(node, rules);
  return 0;
}
