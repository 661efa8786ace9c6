// What reaches the DRA driver from outside: any JSON as a ResourceClaim (its allocation and
// opaque configs, resolved on a trn2 node, also with the views of the containers of any JSON
// as the pod using it), any JSON as opaque parameters, and any text as the checkpoint file. Each
// must give a value or an error, never a crash; a resolved claim must only name devices and cores
// the node has.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/json_nesting.h"
#include "dra-driver/cdi.h"
#include "dra-driver/checkpoint.h"
#include "dra-driver/claim_allocation.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torus;
  static const topology::Node node = *topology::catalogNode("trn2.48xlarge");
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  (void)dra::parseCheckpoint(text, "fuzz");

  if (!checkJsonNesting(text)) return 0;
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, false);
  if (object.is_discarded()) return 0;
  contracts::NeuronSettings settings;
  (void)contracts::applyOpaqueParameters(object, settings);
  const dra::ClaimRef ref{"uid-1", "ns", "claim"};
  if (auto claim = dra::resolveClaim(object, ref, "node-a", node)) {
    if (!(claim->chips - node.allDevices()).empty()) std::abort();
    if (!(claim->cores - node.allCores()).empty()) std::abort();
    (void)dra::cdiSpec(*claim, node, "/dev");
  }
  // The same JSON as the pod a claim is reserved for: its containers' views of the claim, and
  // the claim resolved with them. A device never shows a core the claim does not have.
  const std::vector<dra::ContainerView> views = dra::claimViews(object, "claim");
  if (auto claim = dra::resolveClaim(object, ref, "node-a", node, views)) {
    const auto whole = topology::CoreSet::fromIds(claim->visibleCores);
    for (const dra::AllocatedDevice& device : claim->devices) {
      if (!(topology::CoreSet::fromIds(device.visibleCores) - whole).empty()) std::abort();
    }
  }
  return 0;
}
