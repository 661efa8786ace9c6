// kubelet's device-plugin calls as anything that can write to the plugin's socket sends them:
// the first byte picks the resource and the call, the rest is the protobuf request. Each call
// answers (OK or an error status), never crashes; an OK Allocate answers every container and
// gives no core to two of them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "common/kubelet/node_view.h"
#include "common/topology/core_set.h"
#include "common/topology/node.h"
#include "device-plugin/assignments.h"
#include "device-plugin/plugin_service.h"

namespace {

using namespace torus;

class CatalogNode : public kubelet::NodeView {
 public:
  CatalogNode() { snapshot_.node = *topology::catalogNode("trn2.48xlarge"); }
  kubelet::NodeSnapshot snapshot() const override { return snapshot_; }
  ChangeNotifier::Subscription onChange(std::function<void()> notify) override {
    return notifier_.subscribe(std::move(notify));
  }
  Result<void> prepareCores(const topology::CoreSet&, const topology::CoreSet&) override {
    return okResult();
  }

 private:
  kubelet::NodeSnapshot snapshot_;
  ChangeNotifier notifier_;
};

struct Plugins {
  CatalogNode node;
  plugin::AssignmentTracker assignments{std::chrono::milliseconds(0)};
  plugin::PluginService cores{plugin::ResourceKind::kNeuronCore, node, assignments, [] {}};
  plugin::PluginService devices{plugin::ResourceKind::kNeuron, node, assignments, [] {}};
};

void checkAllocate(const v1beta1::AllocateRequest& request,
                   const v1beta1::AllocateResponse& response) {
  if (response.container_responses_size() != request.container_requests_size()) std::abort();
  topology::CoreSet given;
  for (const auto& container : response.container_responses()) {
    const auto visible = container.envs().find("NEURON_RT_VISIBLE_CORES");
    if (visible == container.envs().end()) continue;
    auto cores = topology::CoreSet::parse(visible->second);
    if (!cores || cores->intersects(given)) std::abort();
    given |= *cores;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Plugins plugins;
  if (size == 0) return 0;
  plugin::PluginService& service = (data[0] & 1) ? plugins.devices : plugins.cores;
  const void* body = data + 1;
  const int length = static_cast<int>(size - 1);
  switch ((data[0] >> 1) % 3) {
    case 0: {
      v1beta1::PreferredAllocationRequest request;
      if (!request.ParseFromArray(body, length)) return 0;
      v1beta1::PreferredAllocationResponse response;
      (void)service.GetPreferredAllocation(nullptr, &request, &response);
      break;
    }
    case 1: {
      v1beta1::AllocateRequest request;
      if (!request.ParseFromArray(body, length)) return 0;
      v1beta1::AllocateResponse response;
      if (service.Allocate(nullptr, &request, &response).ok()) checkAllocate(request, response);
      break;
    }
    default: {
      v1beta1::PreStartContainerRequest request;
      if (!request.ParseFromArray(body, length)) return 0;
      v1beta1::PreStartContainerResponse response;
      (void)service.PreStartContainer(nullptr, &request, &response);
      break;
    }
  }
  return 0;
}
