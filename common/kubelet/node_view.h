// NodeView: all a kubelet adapter (the device plugin, the DRA driver) knows about the node. Neither
// reads sysfs; each sees a snapshot of the node model (devices, cores, LNC, health), is told when
// it changes, and asks the node to prepare cores before a container starts — as kubelet's device
// manager sees plugins only through an interface.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/base/change_notifier.h"
#include "common/base/result.h"
#include "common/topology/core_set.h"
#include "common/topology/node.h"

namespace torus::kubelet {

struct NodeSnapshot {
  topology::Node node;
  std::string devRoot = "/dev";  // host directory of the neuronN device nodes
  std::uint64_t generation = 0;  // grows with every change
};

class NodeView {
 public:
  virtual ~NodeView() = default;
  virtual NodeSnapshot snapshot() const = 0;
  // `notify` runs after every change; do not destroy the subscription from inside it.
  virtual ChangeNotifier::Subscription onChange(std::function<void()> notify) = 0;
  // Makes the devices of these cores clean for a new tenant (the driver's reset), within the
  // caller's deadline; `inUseElsewhere` are cores other containers hold, whose devices must not
  // be reset under them.
  virtual Result<void> prepareCores(const topology::CoreSet& cores,
                                    const topology::CoreSet& inUseElsewhere) = 0;
};

}  // namespace torus::kubelet
