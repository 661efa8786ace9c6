#include "device-plugin/plugin_service.h"

#include <chrono>

#include "common/base/log.h"
#include "common/base/strings.h"
#include "common/contracts/neuron_names.h"
#include "common/metrics/event_counters.h"
#include "common/metrics/latency_histograms.h"
#include "common/topology/placement.h"
#include "device-plugin/allocation.h"

namespace torus::plugin {
namespace {

constexpr std::size_t kMaxStatusMessage = 2048;

grpc::Status toStatus(const Error& error) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (error.code) {
    case ErrorCode::kInvalidArgument:
      code = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case ErrorCode::kNotFound:
      code = grpc::StatusCode::NOT_FOUND;
      break;
    case ErrorCode::kAlreadyExists:
      code = grpc::StatusCode::ALREADY_EXISTS;
      break;
    case ErrorCode::kFailedPrecondition:
      code = grpc::StatusCode::FAILED_PRECONDITION;
      break;
    case ErrorCode::kResourceExhausted:
      code = grpc::StatusCode::RESOURCE_EXHAUSTED;
      break;
    case ErrorCode::kUnavailable:
      code = grpc::StatusCode::UNAVAILABLE;
      break;
    case ErrorCode::kDeadlineExceeded:
      code = grpc::StatusCode::DEADLINE_EXCEEDED;
      break;
    case ErrorCode::kAborted:
      code = grpc::StatusCode::ABORTED;
      break;
    case ErrorCode::kPermissionDenied:
      code = grpc::StatusCode::PERMISSION_DENIED;
      break;
    case ErrorCode::kInternal:
      code = grpc::StatusCode::INTERNAL;
      break;
  }
  // gRPC carries the message in a header; C-core clients refuse more than 8 KiB of metadata.
  return {code, std::string(clipForMessage(error.message, kMaxStatusMessage))};
}

std::vector<std::string> toStrings(const google::protobuf::RepeatedPtrField<std::string>& ids) {
  return {ids.begin(), ids.end()};
}

// Marks one kubelet call that may leave an allocation in flight, from its start to its return.
class InFlight {
 public:
  InFlight(kubelet::AllocationWindow* window, ResourceKind kind, bool closes)
      : window_(window), kind_(kind), closes_(closes) {
    if (window_ != nullptr) window_->opened(resourceName(kind_));
  }
  ~InFlight() {
    if (window_ != nullptr && closes_) window_->closed(resourceName(kind_));
  }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  kubelet::AllocationWindow* window_;
  ResourceKind kind_;
  bool closes_;  // Allocate closes the window; a preferred allocation leaves it open for it
};

}  // namespace

PluginService::PluginService(ResourceKind kind, kubelet::NodeView& node,
                             AssignmentTracker& assignments, std::function<void()> afterAllocate,
                             SchedulerHandoff* handoff, KubeletReport* report, TenancyGuard guard)
    : kind_(kind),
      node_(node),
      assignments_(assignments),
      afterAllocate_(std::move(afterAllocate)),
      handoff_(handoff),
      report_(report),
      guard_(std::move(guard)) {
  nodeSubscription_ = node_.onChange([this] { changed(); });
  assignmentSubscription_ = assignments_.onChange([this] { changed(); });
}

PluginService::~PluginService() {
  stopStreams();
}

void PluginService::changed() {
  std::lock_guard lock(mutex_);
  ++version_;
  wake_.notify_all();
}

void PluginService::stopStreams() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  wake_.notify_all();
}

grpc::Status PluginService::GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                                   v1beta1::DevicePluginOptions* response) {
  response->set_pre_start_required(true);
  response->set_get_preferred_allocation_available(true);
  return grpc::Status::OK;
}

v1beta1::ListAndWatchResponse PluginService::deviceList(topology::CoreSet* advertised,
                                                        topology::CoreSet* unhealthy) const {
  const kubelet::NodeSnapshot snapshot = node_.snapshot();
  const topology::CoreSet blocked = blockedIds(kind_, snapshot.node, assignments_.current());
  v1beta1::ListAndWatchResponse response;
  for (const AdvertisedDevice& device : advertisedDevices(kind_, snapshot.node, blocked)) {
    v1beta1::Device* out = response.add_devices();
    out->set_id(device.id);
    out->set_health(device.healthy ? "Healthy" : "Unhealthy");
    if (device.numaNode) out->mutable_topology()->add_nodes()->set_id(*device.numaNode);
    advertised->insert(std::stoi(device.id));
    if (!device.healthy) unhealthy->insert(std::stoi(device.id));
  }
  return response;
}

grpc::Status PluginService::ListAndWatch(
    grpc::ServerContext* context, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  std::string lastSent;
  std::uint64_t seen = 0;
  if (report_ != nullptr) report_->streamOpened(kind_);
  struct StreamClosed {
    KubeletReport* report;
    ResourceKind kind;
    ~StreamClosed() {
      if (report != nullptr) report->streamClosed(kind);
    }
  } const closed{report_, kind_};
  while (true) {
    {
      std::unique_lock lock(mutex_);
      seen = version_;
    }
    topology::CoreSet advertised;
    topology::CoreSet unhealthy;
    const v1beta1::ListAndWatchResponse list = deviceList(&advertised, &unhealthy);
    std::string encoded = list.SerializeAsString();
    if (encoded != lastSent) {
      if (!writer->Write(list)) {
        TORUS_LOG(Info, Plugin, "ListAndWatch stream closed by kubelet",
                  {"resource", resourceName(kind_)});
        return grpc::Status::OK;
      }
      if (report_ != nullptr) report_->sent(kind_, advertised, unhealthy);
      TORUS_LOG(Info, Plugin, "sent device list", {"resource", resourceName(kind_)},
                {"devices", list.devices_size()},
                {"unhealthy", unhealthy.empty() ? "none" : unhealthy.toRangeString()});
      lastSent = std::move(encoded);
    }
    std::unique_lock lock(mutex_);
    // Waking every few seconds notices a kubelet that went away without closing the stream.
    wake_.wait_for(lock, std::chrono::seconds(5),
                   [&] { return stopping_ || version_ != seen || context->IsCancelled(); });
    if (stopping_ || context->IsCancelled()) return grpc::Status::OK;
  }
}

grpc::Status PluginService::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  // kubelet marks what it chooses from this answer as allocated before it calls Allocate.
  const InFlight inFlight(guard_.window, kind_, /*closes=*/false);
  const kubelet::NodeSnapshot snapshot = node_.snapshot();
  const topology::Node& node = snapshot.node;
  const Assignments assignments = assignments_.current();
  const topology::CoreSet usable = healthyIds(kind_, node) - blockedIds(kind_, node, assignments);
  // Ids of this resource that a live container or one of our recent grants holds. kubelet offers
  // them only when its own count went wrong (a List rebuilt it mid-allocation) or a pod ended
  // since our last read; either way another choice, where there is one, is never wrong.
  const auto heldHere = assignments.held.find(kind_);
  const topology::CoreSet held =
      heldHere == assignments.held.end() ? topology::CoreSet() : heldHere->second;
  for (const auto& container : request->container_requests()) {
    auto available = parseIds(kind_, node, toStrings(container.available_deviceids()));
    if (!available) return toStatus(available.error());
    auto required = parseIds(kind_, node, toStrings(container.must_include_deviceids()));
    if (!required) return toStatus(required.error());
    const topology::CoreSet candidates = *available & usable;
    if (handoff_ != nullptr) {
      auto promised =
          handoff_->promisedIds(kind_, container.allocation_size(), candidates, *required);
      // The extender placed on its view of the node; the plugin checks that view against the node
      // as discovered (a NeuronLink down since) and never hands out a disconnected set.
      if (promised) {
        if (auto valid = topology::checkPlacement(node, unitOf(kind_), *promised); !valid) {
          TORUS_LOG(Warn, Plugin, "refused the scheduler extender's promise; placing it here",
                    {"resource", resourceName(kind_)}, {"ids", promised->toRangeString()},
                    {"why", valid.error().message});
          metrics::processCounters().add(metrics::names::kPromisesRefusedTotal,
                                         {{"resource", std::string(resourceName(kind_))}});
          handoff_->refused(kind_, *promised, valid.error().message);
          promised.reset();
        }
      }
      if (promised) {
        auto* out = response->add_container_responses();
        for (const std::string& id : formatIds(*promised))
          out->add_deviceids(id);
        metrics::processCounters().add(
            metrics::names::kPreferredTotal,
            {{"resource", std::string(resourceName(kind_))}, {"source", "extender"}});
        TORUS_LOG(Info, Plugin, "preferred allocation from the scheduler extender",
                  {"resource", resourceName(kind_)}, {"ids", promised->toRangeString()});
        continue;
      }
    }
    const topology::CoreSet unheld = (candidates - held) | *required;
    auto chosen = topology::choosePlacement(
        node, {unitOf(kind_), container.allocation_size(), unheld, *required});
    if (!chosen && unheld != candidates) {
      chosen = topology::choosePlacement(
          node, {unitOf(kind_), container.allocation_size(), candidates, *required});
    }
    if (!chosen) {
      TORUS_LOG(Warn, Plugin, "no preferred allocation", {"resource", resourceName(kind_)},
                {"size", container.allocation_size()}, {"error", chosen.error().message});
      return toStatus(chosen.error());
    }
    metrics::processCounters().add(
        metrics::names::kPreferredTotal,
        {{"resource", std::string(resourceName(kind_))}, {"source", "placement"}});
    auto* out = response->add_container_responses();
    for (const std::string& id : formatIds(*chosen))
      out->add_deviceids(id);
    TORUS_LOG(Debug, Plugin, "preferred allocation", {"resource", resourceName(kind_)},
              {"size", container.allocation_size()}, {"ids", chosen->toRangeString()});
  }
  return grpc::Status::OK;
}

grpc::Status PluginService::Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* request,
                                     v1beta1::AllocateResponse* response) {
  const metrics::ScopedLatency timed(metrics::names::kAllocateSeconds,
                                     {{"resource", std::string(resourceName(kind_))}});
  // Declared before anything that answers, so the window closes after the reply is final.
  const InFlight inFlight(guard_.window, kind_, /*closes=*/true);
  const kubelet::NodeSnapshot snapshot = node_.snapshot();
  const topology::CoreSet blocked = blockedIds(kind_, snapshot.node, assignments_.current());
  const auto refuse = [&](const Error& error) {
    metrics::processCounters().add(metrics::names::kAllocateErrorsTotal,
                                   {{"resource", std::string(resourceName(kind_))}});
    TORUS_LOG(Warn, Plugin, "Allocate refused", {"resource", resourceName(kind_)},
              {"error", error.message});
    return toStatus(error);
  };
  // Every container is checked before anything is answered or handed off, so a refused request
  // leaves no trace.
  std::vector<std::pair<ContainerAllocation, topology::CoreSet>> containers;
  topology::CoreSet granted;
  for (const auto& container : request->container_requests()) {
    const auto parsed = parseIds(kind_, snapshot.node, toStrings(container.devices_ids()));
    if (!parsed) return refuse(parsed.error());
    const topology::CoreSet& ids = *parsed;
    std::optional<int> ultraServerNodes;
    if (handoff_ != nullptr) ultraServerNodes = handoff_->ultraServerNodes(kind_, ids);
    auto allocation =
        allocateContainer(kind_, snapshot.node, snapshot.devRoot, ids, blocked, ultraServerNodes);
    if (!allocation) return refuse(allocation.error());
    if (ids.intersects(granted)) {
      return refuse(makeError(ErrorCode::kInvalidArgument,
                              std::string(resourceName(kind_)) + ": ids " +
                                  (ids & granted).toRangeString() +
                                  " asked for by two containers of one request"));
    }
    granted |= ids;
    containers.emplace_back(std::move(*allocation), ids);
  }
  for (auto& [allocation, ids] : containers) {
    auto* out = response->add_container_responses();
    for (const DeviceNode& device : allocation.deviceNodes) {
      auto* spec = out->add_devices();
      spec->set_host_path(device.hostPath);
      spec->set_container_path(device.containerPath);
      spec->set_permissions("rw");
    }
    for (const auto& [name, value] : allocation.env)
      (*out->mutable_envs())[name] = value;
    if (handoff_ != nullptr) handoff_->allocated(kind_, ids);
    TORUS_LOG(Info, Plugin, "allocated", {"resource", resourceName(kind_)},
              {"ids", ids.toRangeString()},
              {"visible_cores", allocation.env[std::string(contracts::kVisibleCoresEnv)]},
              {"device_nodes", static_cast<int>(allocation.deviceNodes.size())});
  }
  assignments_.recordAllocate(kind_, granted);
  metrics::processCounters().add(metrics::names::kAllocationsTotal,
                                 {{"resource", std::string(resourceName(kind_))}});
  if (afterAllocate_) afterAllocate_();
  return grpc::Status::OK;
}

grpc::Status PluginService::PreStartContainer(grpc::ServerContext*,
                                              const v1beta1::PreStartContainerRequest* request,
                                              v1beta1::PreStartContainerResponse*) {
  const kubelet::NodeSnapshot snapshot = node_.snapshot();
  auto ids = parseIds(kind_, snapshot.node, toStrings(request->devices_ids()));
  if (!ids) return toStatus(ids.error());
  const topology::CoreSet cores = coresOfIds(kind_, snapshot.node, *ids);
  if (auto sole = checkSoleTenant(snapshot.node, cores); !sole) {
    TORUS_LOG(Error, Plugin, "PreStartContainer refused: its cores are another pod's too",
              {"resource", resourceName(kind_)}, {"cores", cores.toRangeString()},
              {"error", sole.error().message});
    return toStatus(sole.error());
  }
  if (guard_.departedStillRun) {
    if (auto departed = guard_.departedStillRun(cores); !departed) {
      TORUS_LOG(Warn, Plugin, "container start held back: a deleted pod still runs on its chip",
                {"resource", resourceName(kind_)}, {"cores", cores.toRangeString()},
                {"error", departed.error().message});
      return toStatus(departed.error());
    }
  }
  const topology::CoreSet elsewhere = coresInUse(snapshot.node, assignments_.current()) - cores;
  const auto started = std::chrono::steady_clock::now();
  auto prepared = node_.prepareCores(cores, elsewhere);
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - started)
                           .count();
  metrics::processCounters().add(metrics::names::kResetsTotal,
                                 {{"result", prepared ? "ok" : "failed"}});
  if (!prepared) {
    TORUS_LOG(Error, Plugin, "PreStartContainer failed; the container will not start",
              {"resource", resourceName(kind_)}, {"cores", cores.toRangeString()},
              {"error", prepared.error().message});
    return toStatus(prepared.error());
  }
  TORUS_LOG(Info, Plugin, "cores prepared for container start", {"resource", resourceName(kind_)},
            {"cores", cores.toRangeString()}, {"elapsed_ms", static_cast<std::int64_t>(elapsed)});
  return grpc::Status::OK;
}

Result<void> PluginService::checkSoleTenant(const topology::Node& node,
                                            const topology::CoreSet& cores) {
  if (!guard_.readHolders) return okResult();
  // A fresh List, not the tracker: the tracker may still show a pod that ended and whose ids
  // kubelet rightly gave on, and refusing on that would hold a container back for nothing.
  auto listed = guard_.readHolders();
  if (!listed) {
    // Not knowing is not "no second tenant": under the churn this check exists for, a List that
    // cannot be sent now is exactly when kubelet may have given the ids twice. kubelet retries a
    // start that answers UNAVAILABLE, and the next try reads again.
    TORUS_LOG(Warn, Plugin, "container start held back: cannot check for a second tenant",
              {"resource", resourceName(kind_)}, {"cores", cores.toRangeString()},
              {"why", listed.error().message});
    return makeError(ErrorCode::kUnavailable,
                     "cannot tell whether another running pod holds cores " +
                         cores.toRangeString() +
                         " (kubelet's pod-resources: " + listed.error().message +
                         "); the container is not started, and its chip not reset, until it can "
                         "(kubelet retries the start)");
  }
  const auto shared = sharedBetweenPods(node, cores, listed->holders);
  if (!shared) return okResult();
  const std::string holders = describeHolders(shared->holders);
  const std::string message =
      "cores " + shared->cores.toRangeString() +
      " are held by more than one running pod: " + holders +
      "; kubelet gave them twice (kubernetes/kubernetes#137534). The container is not started, "
      "and its chip not reset, until only one pod holds them (kubelet retries the start)";
  bool first = false;
  {
    std::lock_guard lock(reportedMutex_);
    // Bounded: a node sees a handful at most; a cleared memory only repeats an Event.
    if (reported_.size() >= 256) reported_.clear();
    first = reported_.insert(shared->cores.toRangeString() + " " + holders).second;
  }
  if (first) {
    metrics::processCounters().add(metrics::names::kDoubleAllocationsTotal,
                                   {{"resource", std::string(resourceName(kind_))}});
    if (guard_.nodeEvent) guard_.nodeEvent("NeuronCoresAllocatedTwice", message);
  }
  return makeError(ErrorCode::kFailedPrecondition, message);
}

}  // namespace torus::plugin
