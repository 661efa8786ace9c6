// ShmGroup: the ranks of one host, joined through one shared control segment; every collective
// runs straight in the peers' memory.
//
// Data path ("direct" design): every rank publishes, per operation, where its input and output
// live as (shared-memory segment, offset); after an arrival barrier each rank does its share of
// the work straight in the peers' memory (rank r reduces chunk r from every input and writes the
// result into every output), then a completion barrier. Buffers from allocate() live in shared
// memory, so this runs with no copy beyond the reduction itself; plain user buffers are copied
// through a per-rank staging segment. Up to kInlineBytes per rank, AllReduce, AllGather,
// Broadcast and Barrier go through the control slots instead, with a single wait
// (shm_collectives.cc has the bodies; docs/algorithms.md the bytes each moves).
//
// Errors: every wait is bounded by the call's timeout. A peer that exits is noticed through its
// pidfd within about a millisecond (its segments are unlinked); a peer that gave up is noticed
// through its slot; trouble elsewhere (the bootstrap link, another host) through `trouble`. The
// error names the missing ranks by their labels and pids.
//
// Owns: the control segment, this rank's segments (tensors, staging), its mappings of the peers'
// segments and the peers' pidfds. One thread at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "node-runtime/collectives/bootstrap/bootstrap_wire.h"
#include "node-runtime/collectives/core/group.h"
#include "node-runtime/collectives/core/status.h"
#include "node-runtime/collectives/shm/segment_space.h"
#include "node-runtime/collectives/shm/shm_segment.h"

namespace torus::coll {

struct ControlLayout;

struct ShmGroupOptions {
  std::uint64_t session = 0;  // the same on every member; names the segments
  int rank = 0;
  std::vector<RankInfo> ranks;  // every member's, by group rank
  std::vector<int> labels;      // how errors name each member; empty: by group rank
  bool slotPath = true;         // small collectives through the control slots
  bool spin = true;             // false when ranks outnumber CPUs: yield at once
};

class ShmGroup final : public Group {
 public:
  // Rank 0 makes the control segment (before the others attach, with a barrier between).
  static Result<ShmSegment> createControl(std::uint64_t session, int size);

  explicit ShmGroup(ShmGroupOptions options);
  ~ShmGroup() override;
  ShmGroup(const ShmGroup&) = delete;
  ShmGroup& operator=(const ShmGroup&) = delete;

  // Maps the control segment (rank 0 passes the one it made), opens the peers' pidfds and meets
  // the peers once, after which the segment's name is gone. `context` starts its errors.
  Result<void> attach(ShmSegment control, const std::string& context,
                      std::chrono::milliseconds timeout);

  // What breaks a wait besides the peers here: polled about once a millisecond.
  void setTrouble(std::function<std::optional<std::string>()> trouble) {
    trouble_ = std::move(trouble);
  }
  // How errors name each member from now on (a split's host group takes its child's numbers).
  void setLabels(std::vector<int> labels) { labels_ = std::move(labels); }
  // Where slow waits publish whom they wait for (by label); nullptr: nowhere.
  void setStatus(CommStatus* status, bool* waitPublished) {
    status_ = status;
    waitPublished_ = waitPublished;
  }
  // Tells the peers this rank gave up, with why: their waits end at once with that reason.
  void markAborted(const std::string& reason);
  // Whether member `r`'s process has exited (its pidfd reads ready; a zombie counts). False for
  // this rank and for a peer whose pidfd could not be opened.
  bool exited(int r) const;
  // Removes every segment of a member whose process has exited. A killed rank cannot, and a
  // survivor may hear of the failure from another host (an abort over libfabric) before any wait
  // of its own sees the exit (Groups calls it when the communicator aborts and when it goes).
  void unlinkSegmentsOfExited() const;
  // Removes the segments of the member whose process is `pid`, which this rank learned died
  // (its bootstrap connection closed) perhaps before its pidfd reads ready; none when no member
  // is that process.
  void unlinkSegmentsOfProcess(int pid) const;

  Result<Buffer> allocate(std::size_t bytes, const std::string& what) {
    return segments_.allocate(bytes, what);
  }
  bool spins() const { return spin_; }

  std::uint64_t session() const { return session_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Result<void> allReduce(const GroupCall& call, const void* send, void* recv, std::size_t count,
                         DataType type, ReduceOp op) override;
  Result<void> allGather(const GroupCall& call, const void* send, void* recv, std::size_t sendCount,
                         DataType type) override;
  Result<void> reduceScatter(const GroupCall& call, const void* send, void* recv,
                             std::size_t recvCount, DataType type, ReduceOp op) override;
  Result<void> allToAll(const GroupCall& call, const void* send, void* recv,
                        std::size_t countPerRank, DataType type) override;
  Result<void> broadcast(const GroupCall& call, const void* send, void* recv, std::size_t count,
                         DataType type, int root) override;
  Result<void> reduce(const GroupCall& call, const void* send, void* recv, std::size_t count,
                      DataType type, ReduceOp op, int root) override;
  Result<void> barrier(const GroupCall& call) override;
  Result<void> permute(const GroupCall& call, const void* send, void* recv, std::size_t bytes,
                       int sendTo, int recvFrom, std::uint64_t sendMessage,
                       std::uint64_t recvMessage) override;

 private:
  // What one collective needs: everyone's input and output pointers.
  struct Views {
    std::vector<const std::byte*> in;  // per rank; nullptr when that rank has no input
    std::vector<std::byte*> out;       // per rank; nullptr when that rank has no output
  };
  struct Plan {
    OpDescriptor desc;
    const void* send = nullptr;
    std::size_t sendBytes = 0;  // this rank's input size
    void* recv = nullptr;
    std::size_t recvBytes = 0;  // this rank's output size
    bool stageSend = false;     // copy the input aside even if it is a runtime buffer
    // Bytes of rank p's input / output, for bounds checks on what p published.
    std::size_t (*peerInBytes)(const OpDescriptor&, int peer, int size) = nullptr;
    std::size_t (*peerOutBytes)(const OpDescriptor&, int peer, int size) = nullptr;
  };

  // The algorithm choice of the shared-memory path: the control slots or the direct path.
  bool useSlots(OpKind op, std::size_t bytes);
  Result<void> runCollective(const GroupCall& call, Plan plan,
                             FunctionRef<void(const Views&)> body);
  Result<void> runInline(const GroupCall& call, OpDescriptor desc, const void* send,
                         std::size_t bytes,
                         FunctionRef<void(std::span<const std::byte* const>)> body);
  template <typename Done, typename Pending>
  Result<void> waitUntil(const GroupCall& call, Done done, Pending pending);
  template <typename Arrived>
  Result<void> waitForAll(const GroupCall& call, Arrived arrived);
  Result<void> arriveAndWait(const GroupCall& call);
  Result<const std::byte*> resolve(int owner, SegmentRef ref, std::size_t bytes);
  Result<void> ensureStaging(std::size_t bytes);
  Result<void> post(const void* data, std::size_t bytes, int peer, std::uint64_t message);
  void exchangeFreed();
  Result<void> validatePeers(const OpDescriptor& mine) const;
  Result<void> validatePeer(int peer, const OpDescriptor& theirs, const OpDescriptor& mine) const;
  std::string label(int r) const;
  std::string rankList(const std::vector<int>& ranks) const;

  std::uint64_t session_;
  int rank_;
  int size_;
  std::vector<RankInfo> ranks_;
  std::vector<int> labels_;
  bool slotPath_;
  bool spin_;
  std::uint64_t sequence_ = 0;  // this group's collectives (slot parity, peer checks)
  std::uint64_t epoch_ = 0;     // arrivals
  ShmSegment control_;
  ControlLayout* layout_ = nullptr;
  std::vector<UniqueFd> pidfds_;  // per rank; invalid for self or when pidfd_open failed
  SegmentSpace segments_;
  ShmSegment staging_;
  std::uint64_t stagingId_ = 0;
  std::map<std::pair<int, std::uint64_t>, ShmSegment> peerSegments_;
  std::vector<std::uint64_t> freedSeen_;  // per peer: freed segments already dropped
  Views views_;                           // reused by every collective
  std::vector<const std::byte*> inlineViews_;
  std::function<std::optional<std::string>()> trouble_;
  CommStatus* status_ = nullptr;
  bool* waitPublished_ = nullptr;
  std::uint64_t loggedChoices_ = 0;  // bit 2*op + slots: each choice is logged once
};

}  // namespace torus::coll
