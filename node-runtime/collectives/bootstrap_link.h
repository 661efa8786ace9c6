// What stays of the bootstrap after a communicator whose ranks use libfabric is created: rank 0
// keeps its connection to every rank, every other rank its connection to rank 0.
//
// It carries two things:
//  - allGather: each rank's small blob (a libfabric address) to every rank, through rank 0;
//  - liveness: a rank that exits says "BYE" first; a connection that closes without it means the
//    process died, and rank 0 tells everyone "DEAD r" at once, so a survivor waiting on that
//    rank fails within milliseconds naming it instead of running into its timeout. Ranks on
//    other hosts have no pidfd to watch, so this is how they learn.
//
// Wire (text lines): rank -> 0 "G <hex>", 0 -> rank "G <rank> <hex>" for every rank; "BYE";
// 0 -> rank "DEAD <rank>".
//
// Owns: the sockets. Thread-safe: one mutex (a parent and its sub-communicators share a link).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "node-runtime/collectives/line_socket.h"

namespace torus::coll {

class BootstrapLink {
 public:
  // rank 0: sockets[r] connects to rank r (sockets[0] empty); other ranks: sockets[0] only.
  BootstrapLink(int rank, int size, std::vector<LineSocket> sockets);
  BootstrapLink(const BootstrapLink&) = delete;
  BootstrapLink& operator=(const BootstrapLink&) = delete;
  ~BootstrapLink();  // says goodbye

  // Collective over every rank of the link: returns every rank's blob, indexed by rank.
  Result<std::vector<std::string>> allGather(const std::string& mine, Deadline deadline);

  // Ranks whose process is known to have died (without a goodbye). Cheap; never blocks.
  std::vector<int> deadRanks();

 private:
  void pollLocked();
  void markDead(int rank);
  Result<std::string> nextDataLine(int from, Deadline deadline);

  int rank_;
  int size_;
  std::vector<LineSocket> sockets_;
  std::vector<std::vector<std::string>> pending_;  // per socket: data lines read while polling
  std::vector<bool> departed_;                     // said goodbye
  std::vector<bool> dead_;
  std::vector<int> deadList_;
  std::mutex mutex_;
};

}  // namespace torus::coll
