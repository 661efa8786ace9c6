// A model of kubelet's device manager for one resource, in kubelet's own order, driving the real
// plugin over its socket: what makes kubelet give one id to two running pods when a pod-resources
// List lands mid-allocation (kubernetes/kubernetes#137534):
//   admit:  rebuild the allocated set if a recorded pod is no longer active; choose from what is
//           not allocated (GetPreferredAllocation); mark the choice allocated; call Allocate
//           outside the lock; only then record the pod's devices.
//   List:   the same rebuild (kubelet's pod-resources server calls it first), then the recorded
//           pods. A rebuild between "mark" and "record" forgets the in-flight ids.
// While it lives, the agent's pod-resources Lists are answered by this model (its list()); it
// hands them back to FakeKubelet's own assignments when destroyed, so a List the agent makes
// after a test body ends never reaches a model that is gone.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "tests/integration/device_plugin/fake_kubelet.h"

namespace torus::testing {

class KubeletDeviceManager {
 public:
  KubeletDeviceManager(FakeKubelet& kubelet, std::string resource);
  ~KubeletDeviceManager();
  KubeletDeviceManager(const KubeletDeviceManager&) = delete;
  KubeletDeviceManager& operator=(const KubeletDeviceManager&) = delete;

  // Admits one pod asking `size` ids: its ids, or why kubelet refused it. `inFlight` runs after
  // the ids were marked allocated and before Allocate is called (kubelet does other work there).
  Result<std::vector<std::string>> admit(const std::string& pod, int size,
                                         const std::function<void()>& inFlight = {});
  // The pod's containers ended: it is no longer active, and the next rebuild forgets it.
  void end(const std::string& pod);
  // What pod-resources List answers now.
  std::vector<FakeKubelet::PodHolding> list();
  // Ids that two active pods hold at once, with the pods.
  std::map<std::string, std::set<std::string>> sharedIds();

 private:
  void rebuildLocked();

  FakeKubelet& kubelet_;
  const std::string resource_;
  std::mutex mutex_;
  std::set<std::string> allocated_;
  std::map<std::string, std::vector<std::string>> recorded_;  // pod -> ids
  std::set<std::string> active_;
};

}  // namespace torus::testing
