// PluginNodeView: the device plugin's window onto the node — the NodeMonitor's model and the
// runtime's device reset — so device-plugin/ never touches sysfs itself.
#pragma once

#include <chrono>

#include "common/kubelet/node_view.h"
#include "node-runtime/health/node_monitor.h"
#include "node-runtime/reset/core_reset.h"

namespace torus::agent {

// kubelet gives PreStartContainer 30 s (KubeletPreStartContainerRPCTimeoutInSecs,
// k8s.io/kubelet pkg/apis/deviceplugin/v1beta1/constants.go) and its DRA calls 45 s
// (defaultClientCallTimeout, pkg/kubelet/cm/dra/plugin/dra_plugin.go): a container start waits
// this much of a reset and then says it goes on, so kubelet retries the start instead of cutting
// the call off.
inline constexpr std::chrono::milliseconds kContainerStartResetBudget{25'000};

// The policy of resets for container starts: at most kContainerStartResetBudget of `limit`.
reset::ResetPolicy containerStartResetPolicy(std::chrono::milliseconds limit);

class PluginNodeView final : public kubelet::NodeView {
 public:
  PluginNodeView(health::NodeMonitor& monitor, reset::ResetPolicy policy)
      : monitor_(monitor), policy_(std::move(policy)) {}

  kubelet::NodeSnapshot snapshot() const override;
  ChangeNotifier::Subscription onChange(std::function<void()> notify) override {
    return monitor_.onChange(std::move(notify));
  }
  Result<void> prepareCores(const topology::CoreSet& cores,
                            const topology::CoreSet& inUseElsewhere) override;

 private:
  health::NodeMonitor& monitor_;
  const reset::ResetPolicy policy_;
};

}  // namespace torus::agent
