// NeuronSliceSource: the Neuron half of publishing (kubelet/slice_source.h). It builds this
// node's pool with slice_builder from the current node model (core partitions as configured,
// unless the Node's torus.dev/dra-core-devices label says otherwise), remembers since when each
// unhealthy chip has been so (the taint's timeAdded), carries the UltraServer reservation's
// workload tag, and calls the publisher back when health, LNC, the devices or the reservation
// change.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/base/change_notifier.h"
#include "common/kubelet/node_view.h"
#include "dra-driver/kubelet/slice_source.h"
#include "dra-driver/slice_builder.h"

namespace torus::dra {

class NeuronSliceSource final : public SliceSource {
 public:
  // `options` as configured (core devices, the health taint's effect); what the API keeps is
  // applied on top of them at each build.
  NeuronSliceSource(std::string nodeName, kubelet::NodeView& node, SliceOptions options);

  std::vector<nlohmann::json> slices(const KeptFields& kept,
                                     const std::map<std::string, std::string>& nodeLabels) override;
  ChangeNotifier::Subscription onChange(std::function<void()> notify) override;

  // The workload this node is reserved for ("" for none) and whether its allocation is Bound:
  // republished on every device at once (the taint from the start, the workloadId once Bound).
  // Before the first call after awaitReservation(), the source is not ready: a restarted agent
  // publishes nothing rather than the node without its reservation.
  void setReservation(std::string workload, bool bound);
  void awaitReservation();
  bool ready() override;

 private:
  // The configured core-partition setting, or the Node label's when it says "true" or "false".
  bool coreDevicesHere(const std::map<std::string, std::string>& nodeLabels);

  const std::string nodeName_;
  kubelet::NodeView& node_;
  const SliceOptions options_;
  ChangeNotifier changed_;  // the node model's changes and the reservation's
  std::mutex mutex_;
  std::map<int, std::string> unhealthySince_;  // (mutex_)
  std::string reservedFor_;                    // (mutex_)
  bool reservationBound_ = false;              // (mutex_)
  bool reservationKnown_ = true;               // (mutex_)
  std::string saidBadCoreDevicesLabel_;        // (mutex_) the last bad label value logged
  ChangeNotifier::Subscription nodeChanged_;   // last: it calls changed_ until it goes
};

}  // namespace torus::dra
