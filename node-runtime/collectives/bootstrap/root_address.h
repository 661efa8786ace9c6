// The bootstrap's TCP addresses: "host:port" or "[v6]:port" (NEURON_RT_ROOT_COMM_ID), resolved,
// listened on by rank 0 and connected to by the others.
#pragma once

#include <string>
#include <string_view>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "node-runtime/collectives/core/coll_types.h"

namespace torus::coll {

// Binds and listens on `address` ("host:port"; port 0 picks one). Lets a launcher bind before it
// forks its ranks, so no rank races another program for the port.
Result<UniqueFd> listenOn(std::string_view address);
// The port a listening socket is bound to.
Result<int> boundPort(const UniqueFd& listener);
// Connects to the root, retrying while it is not listening yet, until the deadline.
Result<UniqueFd> connectToRoot(const std::string& address, Deadline deadline);

}  // namespace torus::coll
