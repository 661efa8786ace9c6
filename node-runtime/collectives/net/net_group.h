// NetGroup: a set of ranks that reach each other through one libfabric endpoint, and the
// message-passing algorithms that run on it (net_algorithms.cc): ring and recursive doubling
// AllReduce, ring AllGather and ReduceScatter, pairwise AllToAll, binomial-tree Broadcast and
// Reduce, dissemination Barrier, Send/Recv and Permute. docs/algorithms.md has their steps.
//
// A communicator whose ranks span hosts (or that was told TORUS_COLL_TRANSPORT=ofi) runs its
// collectives on a NetGroup of all its ranks; with several ranks per host it also has a "column"
// NetGroup (the ranks with the same local index on every host) for the inter-host stage of the
// hierarchical AllReduce. Groups that share an endpoint keep apart by the group id in every tag.
//
// Tags: group id (16 bits) | sender's endpoint rank (16) | sequence (16) | message (12). Both sides
// of a pair number the messages of one collective the same way, so every message has its own tag
// and no provider ordering is assumed.
//
// Errors: every wait is bounded by the call's deadline and names the ranks not heard from; a
// failed transfer names its peer and the provider's reason; a rank the bootstrap link saw die
// is named within milliseconds.
//
// Owns: its NetOps and a scratch buffer. Does not own: the endpoint (shared with other groups).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "node-runtime/collectives/core/coll_types.h"
#include "node-runtime/collectives/core/group.h"
#include "node-runtime/collectives/ofi/ofi_endpoint.h"

namespace torus::coll {

// How AllReduce runs on a NetGroup; kAuto asks the cost model (chooseNetAllReduce).
enum class NetAllReduce { kAuto, kRing, kRecursiveDoubling };

// The cost model: ring moves 2(n-1)/n of the buffer in 2(n-1) steps and overlaps the reduction;
// recursive doubling moves the whole buffer in log2(n) steps and reduces it each time.
NetAllReduce chooseNetAllReduce(int ranks, std::size_t bytes);

class NetGroup final : public Group {
 public:
  // members: endpoint rank of each group rank; labels: how errors name each group rank (the
  // communicator's own rank numbers).
  // allReduce: which AllReduce runs (kAuto: the cost model, per size).
  NetGroup(std::shared_ptr<OfiEndpoint> endpoint, std::vector<int> members, std::vector<int> labels,
           int myRank, std::uint16_t groupId, bool spin, NetAllReduce allReduce);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }

  // What the bootstrap link heard that breaks the communicator (a rank that died or gave up),
  // polled every few milliseconds: it breaks the operation, also when it is about a rank outside
  // this group (a column's stage must not wait for a peer whose hostmate died).
  void setLiveness(std::function<std::optional<std::string>()> trouble) {
    trouble_ = std::move(trouble);
  }

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
  struct Transfer {
    bool isSend = false;
    int peer = 0;  // group rank
    std::byte* data = nullptr;
    std::size_t bytes = 0;
    std::uint32_t message = 0;   // numbers the messages of one collective between one pair
    std::uint64_t sequence = 0;  // tag sequence (the call's, or a p2p message number)
    bool pointToPoint = false;
  };

  // Posts every transfer (receives first), then waits for all; onReceived(i) runs once per
  // finished receive, in completion order, so reductions overlap the remaining traffic.
  Result<void> run(const GroupCall& call, std::span<const Transfer> transfers,
                   FunctionRef<void(std::size_t)> onReceived);
  Result<void> runPlain(const GroupCall& call, std::span<const Transfer> transfers) {
    return run(call, transfers, [](std::size_t) {});
  }
  Error waitError(const GroupCall& call, std::span<const Transfer> transfers,
                  const std::vector<bool>& finished, std::string_view why) const;
  std::uint64_t tagOf(const Transfer& transfer, int senderRank) const;
  std::string label(int groupRank) const;
  // Bytes per message so no pair exchanges more than the 4096 messages the tag can number.
  std::size_t sliceBytes(std::size_t chunkBytes, std::size_t messagesPerSlice) const;
  std::byte* scratch(std::size_t bytes);

  Result<void> ringReduceScatter(const GroupCall& call, const std::byte* in,
                                 const std::vector<std::size_t>& offsets, std::size_t elem,
                                 DataType type, ReduceOp op, std::byte* out, bool finalOnly,
                                 std::uint32_t firstMessage, std::size_t slice);
  Result<void> ringAllGather(const GroupCall& call, std::byte* out,
                             const std::vector<std::size_t>& offsets, std::uint32_t firstMessage,
                             std::size_t slice);
  Result<void> recursiveDoubling(const GroupCall& call, std::byte* buffer, std::size_t count,
                                 DataType type, ReduceOp op);

  std::shared_ptr<OfiEndpoint> endpoint_;
  std::vector<int> members_;
  std::vector<int> labels_;
  int rank_ = 0;
  std::uint16_t groupId_ = 0;
  bool spin_ = true;
  NetAllReduce allReduce_ = NetAllReduce::kAuto;
  unsigned loggedChoices_ = 0;  // AllReduce algorithms already logged
  std::function<std::optional<std::string>()> trouble_;
  // kDeadlineExceeded or kUnavailable once the call's deadline passed or a rank died.
  Result<void> checkStop(const GroupCall& call, Clock::time_point now,
                         Clock::time_point& nextLivenessCheck);
  std::vector<std::unique_ptr<NetOp>> ops_;  // NetOps never move: the provider holds their address
  std::vector<Transfer> transfers_;          // reused by the algorithms
  std::vector<std::byte> scratch_;
  std::shared_ptr<void> scratchRegistration_;  // the endpoint's, when its provider needs one
  const char* stage_ = "";                     // which algorithm step runs, for error messages
};

}  // namespace torus::coll
