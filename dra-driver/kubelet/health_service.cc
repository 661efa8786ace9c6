#include "dra-driver/kubelet/health_service.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "common/base/log.h"
#include "common/contracts/dra_names.h"
#include "dra_health/v1/api.grpc.pb.h"
#include "dra_health/v1alpha1/api.grpc.pb.h"

namespace torus::dra {
namespace {

// Kubelet waits this long for news before it calls a device's health Unknown; we speak up well
// within it.
constexpr std::int64_t kHealthTimeoutSeconds = 30;
constexpr auto kHeartbeat = std::chrono::seconds(10);
// How often a quiet stream checks whether kubelet hung up or the server stops.
constexpr auto kCancelPoll = std::chrono::milliseconds(500);
constexpr std::size_t kMaxMessage = 1024;
// Kubelet keeps one stream; each holds a server thread, so a local client opening hundreds must
// not starve NodePrepareResources of threads.
constexpr int kMaxStreams = 8;
std::atomic<int> activeStreams{0};

std::string clipped(std::string message) {
  if (message.size() > kMaxMessage) message = message.substr(0, kMaxMessage - 3) + "...";
  return message;
}

// Streams until kubelet cancels the call or the server shuts down (which cancels it too).
template <typename Response, typename Writer>
grpc::Status stream(kubelet::NodeView& node, const std::string& pool, grpc::ServerContext& context,
                    Writer& writer) {
  if (activeStreams.fetch_add(1) >= kMaxStreams) {
    activeStreams.fetch_sub(1);
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            "already " + std::to_string(kMaxStreams) + " health streams open; kubelet needs one"};
  }
  struct Release {
    ~Release() { activeStreams.fetch_sub(1); }
  } release;
  std::mutex mutex;
  std::condition_variable wake;
  bool changed = true;
  ChangeNotifier::Subscription subscription = node.onChange([&] {
    std::lock_guard lock(mutex);
    changed = true;
    wake.notify_all();
  });
  TORUS_LOG(Info, Dra, "kubelet watches device health", {"pool", pool});
  auto lastSent = std::chrono::steady_clock::now() - kHeartbeat;
  while (!context.IsCancelled()) {
    {
      std::unique_lock lock(mutex);
      wake.wait_for(lock, kCancelPoll, [&] { return changed; });
      const bool due = std::chrono::steady_clock::now() - lastSent >= kHeartbeat;
      if (!changed && !due) continue;
      changed = false;
    }
    Response response;
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    for (const DeviceHealthReport& report : deviceHealthReports(node.snapshot().node)) {
      auto* device = response.add_devices();
      device->mutable_device()->set_pool_name(pool);
      device->mutable_device()->set_device_name(report.device);
      // HEALTHY = 1 and UNHEALTHY = 2 in both versions' HealthStatus.
      using Status = decltype(device->health());
      device->set_health(static_cast<Status>(report.healthy ? 1 : 2));
      device->set_last_updated_time(now);
      device->set_health_check_timeout_seconds(kHealthTimeoutSeconds);
      device->set_message(report.message);
    }
    if (!writer.Write(response)) break;  // kubelet went away
    lastSent = std::chrono::steady_clock::now();
  }
  TORUS_LOG(Info, Dra, "kubelet stopped watching device health", {"pool", pool});
  return grpc::Status::OK;
}

class HealthV1 final : public ::v1::DRAResourceHealth::Service {
 public:
  HealthV1(kubelet::NodeView& node, std::string pool) : node_(node), pool_(std::move(pool)) {}
  grpc::Status NodeWatchResources(
      grpc::ServerContext* context, const ::v1::NodeWatchResourcesRequest*,
      grpc::ServerWriter<::v1::NodeWatchResourcesResponse>* writer) override {
    return stream<::v1::NodeWatchResourcesResponse>(node_, pool_, *context, *writer);
  }

 private:
  kubelet::NodeView& node_;
  std::string pool_;
};

class HealthV1alpha1 final : public ::v1alpha1::DRAResourceHealth::Service {
 public:
  HealthV1alpha1(kubelet::NodeView& node, std::string pool) : node_(node), pool_(std::move(pool)) {}
  grpc::Status NodeWatchResources(
      grpc::ServerContext* context, const ::v1alpha1::NodeWatchResourcesRequest*,
      grpc::ServerWriter<::v1alpha1::NodeWatchResourcesResponse>* writer) override {
    return stream<::v1alpha1::NodeWatchResourcesResponse>(node_, pool_, *context, *writer);
  }

 private:
  kubelet::NodeView& node_;
  std::string pool_;
};

}  // namespace

std::vector<DeviceHealthReport> deviceHealthReports(const topology::Node& node) {
  std::vector<DeviceHealthReport> reports;
  std::string nodeProblems;
  for (const topology::Device& device : node.devices) {
    const std::string why =
        device.health.healthy
            ? std::string()
            : clipped("neuron" + std::to_string(device.index) + ": " + device.health.reason);
    reports.push_back({chipDeviceName(device.index), device.health.healthy, why});
    for (int k = 0; k < node.logicalCoresPerDevice(); ++k) {
      reports.push_back({coreDeviceName(device.index * node.logicalCoresPerDevice() + k),
                         device.health.healthy, why});
    }
    if (!device.health.healthy && nodeProblems.empty()) nodeProblems = why;
  }
  if (node.ultraServer) {
    reports.push_back({std::string(kNodeDeviceName), nodeProblems.empty(), nodeProblems});
  }
  return reports;
}

std::unique_ptr<grpc::Service> makeHealthServiceV1(kubelet::NodeView& node, std::string pool) {
  return std::make_unique<HealthV1>(node, std::move(pool));
}

std::unique_ptr<grpc::Service> makeHealthServiceV1alpha1(kubelet::NodeView& node,
                                                         std::string pool) {
  return std::make_unique<HealthV1alpha1>(node, std::move(pool));
}

}  // namespace torus::dra
