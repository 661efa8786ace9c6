// Runs the ranks of a test communicator as forked processes, as they run in production (one
// process per rank), and collects what each one reports.
//
// The parent binds the root's listening socket on 127.0.0.1:0 before forking, so there is no
// port race; rank 0 inherits it. Each child runs `body` and exits; its message travels back over
// a pipe. Each child pins libfabric's tcp provider to loopback (FI_TCP_IFACE=lo). Everything is
// bounded: a child still running at the deadline is SIGKILLed and reported as hung.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "node-runtime/collectives/communicator.h"

namespace torus::coll::testing {

struct RankOutcome {
  int rank = 0;
  int pid = 0;
  bool exited = false;  // false: killed by a signal (or hung and killed by us)
  int exitCode = -1;    // when exited
  bool hung = false;    // still running at the deadline
  std::string message;  // what the rank wrote; empty on success
};

struct LaunchOptions {
  int size = 1;
  std::chrono::milliseconds commTimeout{10000};
  std::chrono::milliseconds deadline{60000};  // for the whole run
  // SIGKILL this rank after `killAfter` (to test peer death while others wait).
  std::optional<int> killRank;
  std::chrono::milliseconds killAfter{0};
  std::string jobSecret;  // given to every rank's CommOptions
  // Runs in the launcher, on a thread of its own, once the ranks are forked: something else that
  // reaches the root's port while the ranks bootstrap (joined before launchRanks returns).
  std::function<void(int rootPort)> intruder;
};

// `body` runs in the child with options ready for Communicator::create (rank 0 gets the
// listener). It returns "" for success or a description of what went wrong.
using RankBody = std::function<std::string(CommOptions options)>;

std::vector<RankOutcome> launchRanks(const LaunchOptions& options, const RankBody& body);

// "" when every rank exited 0 with an empty message; else one line per failing rank.
std::string summarizeFailures(const std::vector<RankOutcome>& outcomes);

// Shared-memory names in /dev/shm of communicators whose rank 0 had pid `rootPid` (the session id
// starts with it), to check nothing is left behind without counting other tests running now.
std::vector<std::string> torusShmNamesOf(int rootPid);

}  // namespace torus::coll::testing
