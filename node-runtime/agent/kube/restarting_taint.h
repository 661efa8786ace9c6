// The taint a stopping device plugin puts on its Node (common/contracts/kubelet_view.h): set
// before kubelet loses our devices, so no scheduler binds a Neuron pod that kubelet would refuse,
// and removed once kubelet counts them again. A node's taints are one list in its spec, which a
// merge patch replaces whole, so a change reads the node and writes the list back pinned to the
// resourceVersion it read; a concurrent writer (kubelet, the node controller) makes it read again.
#pragma once

#include <string>

#include "common/base/result.h"
#include "common/kube/kube_client.h"

namespace torus::agent {

// Sets (present) or removes the taint; returns whether the node had to change.
Result<bool> setRestartingTaint(kube::KubeClient& client, const std::string& node, bool present);

}  // namespace torus::agent
