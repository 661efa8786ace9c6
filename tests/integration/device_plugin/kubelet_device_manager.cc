#include "tests/integration/device_plugin/kubelet_device_manager.h"

#include <chrono>

namespace torus::testing {

KubeletDeviceManager::KubeletDeviceManager(FakeKubelet& kubelet, std::string resource)
    : kubelet_(kubelet), resource_(std::move(resource)) {
  kubelet_.setListSource([this] { return list(); });
}

// FakeKubelet calls the source under its own lock, so once this returns no List is inside list().
KubeletDeviceManager::~KubeletDeviceManager() {
  kubelet_.setListSource({});
}

void KubeletDeviceManager::rebuildLocked() {
  bool removable = false;
  for (const auto& [pod, ids] : recorded_)
    removable = removable || !active_.contains(pod);
  if (!removable) return;  // kubelet returns early when no recorded pod is inactive
  std::erase_if(recorded_, [&](const auto& entry) { return !active_.contains(entry.first); });
  allocated_.clear();
  for (const auto& [pod, ids] : recorded_)
    allocated_.insert(ids.begin(), ids.end());
}

Result<std::vector<std::string>> KubeletDeviceManager::admit(
    const std::string& pod, int size, const std::function<void()>& inFlight) {
  v1beta1::PreferredAllocationRequest preferredRequest;
  {
    std::lock_guard lock(mutex_);
    active_.insert(pod);
    rebuildLocked();
    auto* container = preferredRequest.add_container_requests();
    int available = 0;
    for (const auto& [id, device] : kubelet_.devices(resource_)) {
      if (device.health != "Healthy" || allocated_.contains(id)) continue;
      container->add_available_deviceids(id);
      ++available;
    }
    container->set_allocation_size(size);
    if (available < size) {
      active_.erase(pod);
      return makeError(ErrorCode::kResourceExhausted, "requested " + std::to_string(size) + " " +
                                                          resource_ + ", available " +
                                                          std::to_string(available));
    }
  }
  auto plugin = kubelet_.pluginClient(resource_);
  v1beta1::PreferredAllocationResponse preferred;
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    const grpc::Status status =
        plugin->GetPreferredAllocation(&context, preferredRequest, &preferred);
    if (!status.ok() || preferred.container_responses_size() != 1) {
      return makeError(ErrorCode::kInternal, "GetPreferredAllocation: " + status.error_message());
    }
  }
  std::vector<std::string> chosen(preferred.container_responses(0).deviceids().begin(),
                                  preferred.container_responses(0).deviceids().end());
  {
    std::lock_guard lock(mutex_);
    allocated_.insert(chosen.begin(), chosen.end());
  }
  if (inFlight) inFlight();
  // One container asking all its ids, as kubelet asks for each container.
  v1beta1::AllocateRequest request;
  auto* container = request.add_container_requests();
  for (const std::string& id : chosen)
    container->add_devices_ids(id);
  v1beta1::AllocateResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  if (const grpc::Status status = plugin->Allocate(&context, request, &response); !status.ok()) {
    std::lock_guard lock(mutex_);
    for (const std::string& id : chosen)
      allocated_.erase(id);
    active_.erase(pod);
    return makeError(ErrorCode::kInternal, "Allocate: " + status.error_message());
  }
  std::lock_guard lock(mutex_);
  recorded_[pod] = chosen;
  return chosen;
}

void KubeletDeviceManager::end(const std::string& pod) {
  std::lock_guard lock(mutex_);
  active_.erase(pod);
}

std::vector<FakeKubelet::PodHolding> KubeletDeviceManager::list() {
  std::lock_guard lock(mutex_);
  rebuildLocked();
  std::vector<FakeKubelet::PodHolding> rows;
  for (const auto& [pod, ids] : recorded_)
    rows.push_back({"default", pod, resource_, ids});
  return rows;
}

std::map<std::string, std::set<std::string>> KubeletDeviceManager::sharedIds() {
  std::lock_guard lock(mutex_);
  std::map<std::string, std::set<std::string>> holders;
  for (const auto& [pod, ids] : recorded_) {
    if (!active_.contains(pod)) continue;
    for (const std::string& id : ids)
      holders[id].insert(pod);
  }
  std::erase_if(holders, [](const auto& entry) { return entry.second.size() < 2; });
  return holders;
}

}  // namespace torus::testing
