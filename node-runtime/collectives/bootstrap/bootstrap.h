// TCP bootstrap: how the ranks of a new communicator find each other through the root address
// (NEURON_RT_ROOT_COMM_ID = "host:port", "[v6]:port" for IPv6).
//
// Rank 0 listens; every other rank connects (retrying while the root is not up yet), says who it
// is (rank, world size, pid, host identity), and gets back the session id and everyone's pid and
// host (bootstrap_wire.h: the lines, and the job secret that authenticates them). Every wait is
// bounded by the deadline (the root gives up at 90 % of it and tells the others who is missing;
// they wait up to 20 % past it for that answer), and a timeout names the ranks that never came,
// instead of NCCL's and Neuron's infinite "retrying" loops. The root reads hellos from many
// connections at once, each within kHelloDeadline of its accept, so one silent connection cannot
// hold the root until the deadline.
//
// Owns: the sockets (closed when bootstrap returns) and the wire format (text lines). Does not own:
// what the session id names (the communicator uses it for its shared-memory names).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "node-runtime/collectives/bootstrap/bootstrap_link.h"
#include "node-runtime/collectives/bootstrap/bootstrap_wire.h"
#include "node-runtime/collectives/bootstrap/line_socket.h"
#include "node-runtime/collectives/bootstrap/root_address.h"

namespace torus::coll {

struct BootstrapResult {
  std::uint64_t session = 0;
  std::vector<RankInfo> ranks;  // indexed by rank
  // The connections to (rank 0: from) every rank, kept for address exchange and liveness;
  // null for a world of one.
  std::shared_ptr<BootstrapLink> link;
};

// "hostname/boot-id/ipc-namespace" of this process: ranks with equal ids share memory. Processes
// in different IPC namespaces (pods) on one machine are different hosts for the collectives.
std::string localHostId();
// "hostname/boot-id": ranks with equal ids compete for the same CPUs.
std::string localMachineId();

struct BootstrapRequest {
  int rank = 0;
  int size = 1;
  std::string rootAddress;
  std::string commName;   // for error messages
  std::string hostId;     // empty: localHostId()
  std::string jobSecret;  // the same for every rank of the job; empty: hellos are not authenticated
  UniqueFd rootListener;  // rank 0: use this socket instead of binding rootAddress
  Deadline deadline;
  // Rank 0 runs this with the session id after every rank checked in and before anyone is told,
  // so what it creates (the control segment) exists when the others proceed.
  std::function<Result<void>(std::uint64_t session)> onSessionReady;
};

Result<BootstrapResult> bootstrap(BootstrapRequest request);

}  // namespace torus::coll
