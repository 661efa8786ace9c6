// What stays of the bootstrap after a communicator whose ranks use libfabric is created: rank 0
// keeps its connection to every rank, every other rank its connection to rank 0.
//
// It carries two things:
//  - allGather: each rank's small blob (a libfabric address) to every rank, through rank 0;
//  - liveness: a rank that exits says "BYE" first; a connection that closes without it means the
//    process died, and rank 0 tells everyone "DEAD r" at once, so a survivor waiting on that
//    rank fails within milliseconds naming it instead of running into its timeout. Ranks on
//    other hosts have no pidfd to watch, so this is how they learn.
//  - aborts: a rank whose communicator broke for any other reason (a provider error, a stage
//    over shared memory, a hostmate that died) says "ABORT <session> <rank> <why>"; rank 0
//    passes it on to every rank, so ranks on other hosts stop waiting for it too.
// Once watching (startWatching), a thread of the link's own reads the connections and rank 0
// passes deaths and aborts on at once, whatever this process is busy with: were rank 0 to do so
// only while it sat in a libfabric wait, survivors on other hosts would wait out the whole
// timeout.
//
// Wire (text lines): rank -> 0 "G <hex>", 0 -> rank "G <rank> <hex>" for every rank; "BYE";
// 0 -> rank "DEAD <rank>"; either way "ABORT <session> <rank> <why>".
//
// Owns: the sockets and the watching thread. Thread-safe: one mutex (a parent and its
// sub-communicators share a link).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "node-runtime/collectives/bootstrap/line_socket.h"

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

  // From now on a thread reads the connections (idempotent).
  void startWatching();
  // This rank's communicator `session` broke: every rank of the link hears why.
  void announceAbort(std::uint64_t session, int rank, const std::string& why);
  // The first abort another rank announced for `session`: its rank and why.
  std::optional<std::pair<int, std::string>> abortOf(std::uint64_t session);
  // Whether any rank died or announced an abort; lock-free, for hot wait loops.
  bool anyTrouble() const { return trouble_.load(std::memory_order_acquire); }

 private:
  void pollLocked();
  void markDead(int rank);
  void recordAbortLocked(std::uint64_t session, int rank, const std::string& why, int from);
  void watch();
  Result<std::string> nextDataLine(int from, Deadline deadline);

  int rank_;
  int size_;
  std::vector<LineSocket> sockets_;
  std::vector<std::vector<std::string>> pending_;  // per socket: data lines read while polling
  std::vector<bool> departed_;                     // said goodbye
  std::vector<bool> dead_;
  std::vector<int> deadList_;
  struct Abort {
    std::uint64_t session = 0;
    int rank = 0;
    std::string why;
  };
  std::vector<Abort> aborts_;
  std::atomic<bool> trouble_{false};
  std::mutex mutex_;
  UniqueFd stopWatching_;  // an eventfd: written to stop the thread
  std::thread watcher_;
};

}  // namespace torus::coll
