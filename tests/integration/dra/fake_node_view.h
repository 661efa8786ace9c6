// A node as the DRA driver sees it through kubelet::NodeView, for its tests: a trn2.48xlarge
// whose devices' health a test sets (the driver is told, as NodeMonitor tells it), and whose
// core preparation (reset) always succeeds.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <utility>

#include "common/base/change_notifier.h"
#include "common/kubelet/node_view.h"
#include "common/topology/node.h"

namespace torus::dra::testing {

class FakeNodeView : public kubelet::NodeView {
 public:
  FakeNodeView() { snapshot_.node = *topology::catalogNode("trn2.48xlarge"); }
  kubelet::NodeSnapshot snapshot() const override {
    std::lock_guard lock(mutex_);
    return snapshot_;
  }
  ChangeNotifier::Subscription onChange(std::function<void()> notify) override {
    return notifier_.subscribe(std::move(notify));
  }
  Result<void> prepareCores(const topology::CoreSet&, const topology::CoreSet&) override {
    return okResult();
  }
  void setHealth(int device, topology::DeviceHealth health) {
    {
      std::lock_guard lock(mutex_);
      snapshot_.node.devices[static_cast<std::size_t>(device)].health = std::move(health);
    }
    notifier_.notify();
  }

 private:
  mutable std::mutex mutex_;
  kubelet::NodeSnapshot snapshot_;
  ChangeNotifier notifier_;
};

}  // namespace torus::dra::testing
