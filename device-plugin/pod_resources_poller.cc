#include "device-plugin/pod_resources_poller.h"

#include <algorithm>

#include <grpcpp/grpcpp.h>

#include "common/base/log.h"
#include "device-plugin/unix_address.h"
#include "podresources/v1/api.grpc.pb.h"

namespace torus::plugin {
namespace {

constexpr std::chrono::milliseconds kAfterPokeDelay{200};
// After a pod ended, kubelet lists it until its sandbox is torn down: read often meanwhile.
constexpr std::chrono::milliseconds kAfterPodEnd{2000};
constexpr std::chrono::milliseconds kAfterPodEndInterval{200};
constexpr ResourceKind kKinds[] = {ResourceKind::kNeuronCore, ResourceKind::kNeuron,
                                   ResourceKind::kNeuronDevice};

}  // namespace

struct PodResourcesClient::Lister {
  std::unique_ptr<v1::PodResourcesLister::Stub> rpc;

  Result<v1::ListPodResourcesResponse> list(const std::string& socket,
                                            std::chrono::milliseconds timeout) const {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    v1::ListPodResourcesResponse response;
    const grpc::Status status = rpc->List(&context, v1::ListPodResourcesRequest(), &response);
    if (!status.ok()) {
      return makeError(ErrorCode::kUnavailable,
                       "pod-resources List at " + socket + ": " + status.error_message());
    }
    return response;
  }
};

PodResourcesClient::PodResourcesClient(std::string socket)
    : socket_(std::move(socket)), lister_(std::make_unique<Lister>()) {
  lister_->rpc = v1::PodResourcesLister::NewStub(
      grpc::CreateChannel(unixAddress(socket_), grpc::InsecureChannelCredentials()));
}

PodResourcesClient::~PodResourcesClient() = default;

Result<Assignments> PodResourcesClient::list(const topology::Node& node,
                                             std::chrono::milliseconds timeout) {
  auto response = lister_->list(socket_, timeout);
  if (!response) return std::move(response).error();
  Assignments assignments;
  for (const auto& pod : response->pod_resources()) {
    for (const auto& container : pod.containers()) {
      for (const auto& devices : container.devices()) {
        for (const ResourceKind kind : kKinds) {
          if (devices.resource_name() != resourceName(kind)) continue;
          std::vector<std::string> ids(devices.device_ids().begin(), devices.device_ids().end());
          auto parsed = parseIds(kind, node, ids);
          if (!parsed) {
            // Ids from before an LNC change or another plugin's numbering: not ours to track.
            TORUS_LOG(Warn, Plugin, "ignoring ids kubelet lists for a container",
                      {"pod", pod.namespace_() + "/" + pod.name()}, {"container", container.name()},
                      {"error", parsed.error().message});
            continue;
          }
          assignments.held[kind] |= *parsed;
          assignments.holders.push_back(
              {pod.namespace_() + "/" + pod.name(), container.name(), kind, *parsed});
        }
      }
    }
  }
  return assignments;
}

Result<std::vector<ClaimHolder>> PodResourcesClient::listClaimHolders(
    std::string_view driver, std::string_view pool, std::chrono::milliseconds timeout) {
  auto response = lister_->list(socket_, timeout);
  if (!response) return std::move(response).error();
  std::vector<ClaimHolder> holders;
  for (const auto& pod : response->pod_resources()) {
    for (const auto& container : pod.containers()) {
      for (const auto& claim : container.dynamic_resources()) {
        const bool ours =
            std::any_of(claim.claim_resources().begin(), claim.claim_resources().end(),
                        [&](const auto& device) {
                          return device.driver_name() == driver && device.pool_name() == pool;
                        });
        if (!ours) continue;
        holders.push_back({claim.claim_namespace(), claim.claim_name(), pod.namespace_(),
                           pod.name(), container.name()});
      }
    }
  }
  return holders;
}

PodResourcesPoller::PodResourcesPoller(std::string socket, std::chrono::milliseconds interval,
                                       NodeView& node, AssignmentTracker& tracker,
                                       std::function<bool()> answered)
    : client_(std::move(socket)),
      interval_(interval),
      node_(node),
      tracker_(tracker),
      answered_(std::move(answered)),
      thread_([this](std::stop_token stop) { run(stop); }) {}

PodResourcesPoller::~PodResourcesPoller() {
  thread_.request_stop();
  wake_.notify_all();
}

void PodResourcesPoller::pokeAfterAllocate() {
  std::lock_guard lock(mutex_);
  poked_ = true;
  wake_.notify_all();
}

void PodResourcesPoller::pokeNow() {
  std::lock_guard lock(mutex_);
  poked_ = true;
  pokedNow_ = true;
  fastUntil_ = std::chrono::steady_clock::now() + kAfterPodEnd;
  wake_.notify_all();
}

void PodResourcesPoller::run(std::stop_token stop) {
  bool reachable = true;
  while (!stop.stop_requested()) {
    bool soon = false;
    auto listed = client_.list(node_.snapshot().node, std::chrono::seconds(5));
    if (listed) {
      if (!reachable) {
        TORUS_LOG(Info, Plugin, "pod-resources API reachable again");
      }
      reachable = true;
      tracker_.replaceFromKubelet(std::move(*listed));
      if (answered_) soon = answered_();
    } else if (reachable) {
      reachable = false;
      TORUS_LOG(Warn, Plugin,
                "cannot read kubelet's pod-resources; cross-resource accounting uses only this "
                "agent's own Allocate calls until it answers",
                {"error", listed.error().message},
                {"retry_ms", static_cast<int>(interval_.count())});
    }
    std::unique_lock lock(mutex_);
    const auto wait = soon || std::chrono::steady_clock::now() < fastUntil_
                          ? std::min(interval_, kAfterPodEndInterval)
                          : interval_;
    if (wake_.wait_for(lock, stop, wait, [&] { return poked_; })) {
      // After an Allocate, kubelet records the assignment once the call has returned; asking at
      // once would race it, and a burst of Allocate calls needs one List, not one each. A pod
      // that ended cuts the wait short: its ids are free in kubelet already.
      wake_.wait_for(lock, stop, kAfterPokeDelay, [&] { return pokedNow_; });
    }
    poked_ = false;
    pokedNow_ = false;
  }
}

}  // namespace torus::plugin
