#include "dra-driver/neuron_slice_source.h"

#include <utility>

#include "common/base/log.h"
#include "common/base/utc_time.h"
#include "common/contracts/neuron_names.h"

namespace torus::dra {

NeuronSliceSource::NeuronSliceSource(std::string nodeName, kubelet::NodeView& node,
                                     SliceOptions options)
    : nodeName_(std::move(nodeName)),
      node_(node),
      options_(std::move(options)),
      nodeChanged_(node_.onChange([this] { changed_.notify(); })) {}

std::vector<nlohmann::json> NeuronSliceSource::slices(
    const KeptFields& kept, const std::map<std::string, std::string>& nodeLabels) {
  const kubelet::NodeSnapshot snapshot = node_.snapshot();
  SliceInputs inputs;
  inputs.nodeName = nodeName_;
  inputs.node = snapshot.node;
  inputs.nodeLabels = nodeLabels;
  inputs.options = options_;
  inputs.options.coreDevices = coreDevicesHere(nodeLabels);
  inputs.options.counters = options_.counters && kept.counters;
  inputs.options.taints = options_.taints && kept.taints;
  inputs.options.noneEffect = options_.noneEffect && kept.noneEffect;
  {
    std::lock_guard lock(mutex_);
    for (int device = 0; device < snapshot.node.deviceCount(); ++device) {
      if (snapshot.node.devices[static_cast<std::size_t>(device)].health.healthy) {
        unhealthySince_.erase(device);
      } else if (!unhealthySince_.contains(device)) {
        unhealthySince_[device] = utcNowRfc3339();
      }
    }
    inputs.unhealthySince = unhealthySince_;
    inputs.reservedFor = reservedFor_;
    if (reservationBound_) inputs.workloadId = reservedFor_;
  }
  return buildSlices(inputs, 0);
}

bool NeuronSliceSource::coreDevicesHere(const std::map<std::string, std::string>& nodeLabels) {
  const auto label = nodeLabels.find(contracts::kCoreDevicesLabel);
  if (label == nodeLabels.end()) return options_.coreDevices;
  if (label->second == "true") return true;
  if (label->second == "false") return false;
  std::lock_guard lock(mutex_);
  if (std::exchange(saidBadCoreDevicesLabel_, label->second) != label->second) {
    TORUS_LOG(Warn, Dra,
              "the Node's core-partition label is neither \"true\" nor \"false\"; "
              "the configured setting applies",
              {"label", contracts::kCoreDevicesLabel}, {"value", label->second},
              {"configured", options_.coreDevices});
  }
  return options_.coreDevices;
}

ChangeNotifier::Subscription NeuronSliceSource::onChange(std::function<void()> notify) {
  return changed_.subscribe(std::move(notify));
}

void NeuronSliceSource::setReservation(std::string workload, bool bound) {
  bound = bound && !workload.empty();
  {
    std::lock_guard lock(mutex_);
    if (reservationKnown_ && reservedFor_ == workload && reservationBound_ == bound) return;
    reservationKnown_ = true;
    reservedFor_ = std::move(workload);
    reservationBound_ = bound;
  }
  changed_.notify();
}

void NeuronSliceSource::awaitReservation() {
  std::lock_guard lock(mutex_);
  reservationKnown_ = false;
}

bool NeuronSliceSource::ready() {
  std::lock_guard lock(mutex_);
  return reservationKnown_;
}

}  // namespace torus::dra
