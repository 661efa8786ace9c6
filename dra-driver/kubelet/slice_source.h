// SliceSource: what the slice publisher (slice_publisher.h) asks of a driver, as upstream's
// kubeletplugin helper asks its driver for DriverResources: the pool's ResourceSlices as they
// should be now, and a call when that may have changed. The publisher knows the API (writes,
// generations, the Node as owner, dry runs, the watch that puts back what others change); the
// source behind it knows the devices. Nothing in dra-driver/kubelet/ includes the Neuron half.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/change_notifier.h"

namespace torus::dra {

// What the API server keeps of a slice: with a feature switched off (DRAPartitionableDevices,
// DRADeviceTaints) it drops those fields without an error, so a source must describe its pool
// without them (no partitions sharing counters; unhealthy devices left out, not tainted).
struct KeptFields {
  bool counters = true;    // spec.sharedCounters and a device's consumesCounters
  bool taints = true;      // a device's taints
  bool noneEffect = true;  // the taint effect None (refused, not dropped, before 1.35)
};

class SliceSource {
 public:
  virtual ~SliceSource() = default;
  // The pool's slices, complete objects with deterministic names, at pool generation 0 and with
  // no owner (the publisher sets both). `nodeLabels` are the Node object's labels.
  virtual std::vector<nlohmann::json> slices(
      const KeptFields& kept, const std::map<std::string, std::string>& nodeLabels) = 0;
  // `notify` runs whenever the pool may have changed (health, configuration, devices).
  virtual ChangeNotifier::Subscription onChange(std::function<void()> notify) = 0;
  // Whether the pool can be described yet: false while something it depends on is not known
  // (which workload reserved the node). The publisher then writes nothing and the API keeps
  // what an earlier run published, until a change says the source is ready.
  virtual bool ready() { return true; }
};

}  // namespace torus::dra
