// Group: a set of ranks and the collectives that run among them, whatever carries the bytes.
// Two kinds: ShmGroup (shm/shm_group.h; ranks of one host, through shared memory) and NetGroup
// (net/net_group.h; ranks anywhere, through one libfabric endpoint), plus HierarchicalGroup
// (net/hierarchical_group.h), which runs AllReduce over a host's ShmGroup and a column NetGroup.
// The Communicator picks one at creation and runs every collective through it, so no operation
// asks which transport it is on.
//
// Counts are in elements, as in communicator.h. A group reports failures as errors naming the
// ranks; breaking the communicator, the sequence numbers and the status board are the
// Communicator's.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/base/result.h"
#include "node-runtime/collectives/core/coll_types.h"
#include "node-runtime/collectives/core/data_type.h"

namespace torus::coll {

// What the communicator hands every call: the sequence number (the libfabric tags carry it), the
// deadline of the whole operation, and the text errors start with ("allReduce seq=7 on comm-x
// (rank 1 of 4)").
struct GroupCall {
  std::uint64_t sequence = 0;
  // The whole operation's deadline, which libfabric waits keep; a ShmGroup bounds each of its
  // waits by `timeout` instead, so the communicator may leave this at Deadline::max() for it.
  Deadline deadline;
  std::chrono::milliseconds timeout{0};
  FunctionRef<std::string()> what;
};

class Group {
 public:
  virtual ~Group() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  virtual Result<void> allReduce(const GroupCall& call, const void* send, void* recv,
                                 std::size_t count, DataType type, ReduceOp op) = 0;
  virtual Result<void> allGather(const GroupCall& call, const void* send, void* recv,
                                 std::size_t sendCount, DataType type) = 0;
  virtual Result<void> reduceScatter(const GroupCall& call, const void* send, void* recv,
                                     std::size_t recvCount, DataType type, ReduceOp op) = 0;
  virtual Result<void> allToAll(const GroupCall& call, const void* send, void* recv,
                                std::size_t countPerRank, DataType type) = 0;
  virtual Result<void> broadcast(const GroupCall& call, const void* send, void* recv,
                                 std::size_t count, DataType type, int root) = 0;
  virtual Result<void> reduce(const GroupCall& call, const void* send, void* recv,
                              std::size_t count, DataType type, ReduceOp op, int root) = 0;
  virtual Result<void> barrier(const GroupCall& call) = 0;
  // Sends `bytes` to sendTo and receives them from recvFrom at once (either may be -1: that half
  // is skipped); the caller numbers the messages of each pair (1, 2, ...) and checks the peers.
  virtual Result<void> permute(const GroupCall& call, const void* send, void* recv,
                               std::size_t bytes, int sendTo, int recvFrom,
                               std::uint64_t sendMessage, std::uint64_t recvMessage) = 0;
};

}  // namespace torus::coll
