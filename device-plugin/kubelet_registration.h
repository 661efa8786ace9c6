// Register one plugin endpoint with kubelet (v1beta1 Registration service on kubelet.sock).
#pragma once

#include <chrono>
#include <string>

#include "common/base/result.h"
#include "device-plugin/resource_kind.h"

namespace torus::plugin {

// Blocks until kubelet answers or `timeout` passes; kubelet dials our socket back during the call,
// so our server must already be serving. Errors name the socket and kubelet's reason.
Result<void> registerWithKubelet(const std::string& kubeletSocket, const std::string& endpoint,
                                 ResourceKind kind, std::chrono::milliseconds timeout);

}  // namespace torus::plugin
