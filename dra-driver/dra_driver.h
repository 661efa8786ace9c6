// DraDriver: the DRA driver `neuron.aws.com` inside the node agent. It owns the claim preparer
// (checkpoint, CDI specs, resets), the kubelet plugin sockets and the ResourceSlice publisher,
// and sees the node only through kubelet::NodeView, like the device plugin.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "common/base/result.h"
#include "common/kube/kube_config.h"
#include "common/kubelet/node_view.h"
#include "dra-driver/claim_preparer.h"
#include "dra-driver/kubelet/kubelet_plugin.h"
#include "dra-driver/kubelet/slice_publisher.h"
#include "dra-driver/neuron_slice_source.h"
#include "dra-driver/slice_builder.h"
#include "dra-driver/ultraserver_reservation.h"

namespace torus::dra {

struct DraOptions {
  std::string nodeName;
  KubeletPluginOptions kubelet;
  std::filesystem::path cdiRoot = "/var/run/cdi";
  // Empty: <plugins-dir>/neuron.aws.com/checkpoint.json.
  std::filesystem::path checkpointFile;
  bool coreDevices = true;
  HealthTaints healthTaints;  // how unhealthy and unmonitored devices are tainted
  std::chrono::milliseconds resync = std::chrono::seconds(60);
  // Read NeuronUltraServer objects in this namespace (neuron-ultraserver-operator's) and honour
  // their reservations: tag this node's devices, refuse them to other workloads' claims.
  bool ultraServerReservations = false;
  std::string reservationNamespace;
  // Whether a pod a claim was prepared for still runs on the node (claim_consumers.h).
  PodStillRuns podStillRuns;
};

class DraDriver {
 public:
  static Result<std::unique_ptr<DraDriver>> start(const DraOptions& options,
                                                  const kube::KubeConfig& kube,
                                                  kubelet::NodeView& node);
  DraDriver() = default;
  ~DraDriver();
  DraDriver(const DraDriver&) = delete;
  DraDriver& operator=(const DraDriver&) = delete;

  const ClaimPreparer& claims() const { return *preparer_; }
  // Why kubelet cannot prepare claims through the driver now; "" when it can (readiness).
  std::string notReadyReason() const { return plugin_->notReadyReason(); }
  void stop();

 private:
  // Declared in dependency order: the publisher and the sockets go before the preparer.
  std::unique_ptr<ClaimPreparer> preparer_;
  std::unique_ptr<KubeletPlugin> plugin_;
  std::unique_ptr<NeuronSliceSource> slices_;
  std::unique_ptr<SlicePublisher> publisher_;
  std::unique_ptr<UltraServerReservation> reservation_;  // first to go: it calls the two above
  // Every ten resyncs: claims the API no longer has that kubelet never unprepared (first to stop).
  std::jthread staleClaimSweeper_;
};

}  // namespace torus::dra
