// PluginService: kubelet's DevicePlugin gRPC service (v1beta1) for one resource. It translates
// between protobuf and the pure functions of allocation.h / placement.h, and maps errors to gRPC
// status codes; every decision is made elsewhere. Bad requests get INVALID_ARGUMENT naming the
// ids, and the service keeps serving.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string_view>

#include "common/base/result.h"
#include "common/kubelet/allocation_window.h"
#include "common/kubelet/node_view.h"
#include "device-plugin/assignments.h"
#include "device-plugin/kubelet_report.h"
#include "device-plugin/resource_kind.h"
#include "device-plugin/scheduler_handoff.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace torus::plugin {

// What keeps kubelet from giving one id to two live pods, and catches it when it does anyway
// (common/kubelet/allocation_window.h). Each member may be empty.
struct TenancyGuard {
  // Marked around every GetPreferredAllocation and Allocate, so pod-resources is not read then.
  kubelet::AllocationWindow* window = nullptr;
  // Who holds what, from a pod-resources List made now (once no allocation is in flight); an
  // error when it cannot be read in time.
  std::function<Result<Assignments>()> readHolders;
  // Posts an Event on this node: reason, message.
  std::function<void(std::string_view, std::string_view)> nodeEvent;
  // An error when a pod kubelet no longer lists still runs on a device of these cores
  // (departed_pods.h).
  std::function<Result<void>(const topology::CoreSet&)> departedStillRun;
};

class PluginService final : public v1beta1::DevicePlugin::Service {
 public:
  // `afterAllocate` runs after each successful Allocate (the agent re-reads pod-resources then).
  // `handoff` (may be null) supplies the scheduler extender's choices; `report` (may be null)
  // learns what each ListAndWatch stream sent.
  PluginService(ResourceKind kind, kubelet::NodeView& node, AssignmentTracker& assignments,
                std::function<void()> afterAllocate, SchedulerHandoff* handoff = nullptr,
                KubeletReport* report = nullptr, TenancyGuard guard = {});
  ~PluginService() override;

  // Ends every open ListAndWatch stream; call before shutting the gRPC server down.
  void stopStreams();

  grpc::Status GetDevicePluginOptions(grpc::ServerContext* context, const v1beta1::Empty* request,
                                      v1beta1::DevicePluginOptions* response) override;
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty* request,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext* context,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override;
  grpc::Status Allocate(grpc::ServerContext* context, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext* context,
                                 const v1beta1::PreStartContainerRequest* request,
                                 v1beta1::PreStartContainerResponse* response) override;

 private:
  void changed();
  // Refuses a container start whose ids live containers of another pod hold too.
  Result<void> checkSoleTenant(const topology::Node& node, const topology::CoreSet& cores);
  v1beta1::ListAndWatchResponse deviceList(topology::CoreSet* advertised,
                                           topology::CoreSet* unhealthy) const;

  const ResourceKind kind_;
  kubelet::NodeView& node_;
  AssignmentTracker& assignments_;
  std::function<void()> afterAllocate_;
  SchedulerHandoff* handoff_;
  KubeletReport* report_;
  TenancyGuard guard_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::uint64_t version_ = 0;
  bool stopping_ = false;
  ChangeNotifier::Subscription nodeSubscription_;
  ChangeNotifier::Subscription assignmentSubscription_;
  std::mutex reportedMutex_;
  std::set<std::string> reported_;  // double allocations counted and posted, once each
};

}  // namespace torus::plugin
