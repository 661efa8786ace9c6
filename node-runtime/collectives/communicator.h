// Communicator: a group of ranks that run collectives, over shared memory between ranks of one
// host and over libfabric between hosts. The front: creation (bootstrap, split), sequence numbers,
// the broken state, the status board, async operations — every collective then runs through one
// Group (core/group.h) of the Groups that group_builder.h builds for it (groups.h says which).
//
// Created from (rank, world size, root address) through the TCP bootstrap; ranks on the same host
// are found there.
//
// Errors: every wait is bounded by the timeout. A peer that exits is noticed within about a
// millisecond (pidfd on a host, the bootstrap link across hosts); a peer that is alive but absent
// is named when the timeout runs out. Either way the error names the missing rank(s), the
// communicator and the sequence number, the communicator is broken from then on (every later call
// returns the same error), and the peers are told so they fail fast too.
//
// Owns: its groups (with the bootstrap link and libfabric endpoint it shares with its splits) and
// its async worker thread. Not thread-safe: one thread per communicator at a time (the *Async calls
// hand operations to the worker instead).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "node-runtime/collectives/async_worker.h"
#include "node-runtime/collectives/bootstrap/bootstrap.h"
#include "node-runtime/collectives/core/coll_types.h"
#include "node-runtime/collectives/core/data_type.h"
#include "node-runtime/collectives/core/group.h"
#include "node-runtime/collectives/core/status.h"
#include "node-runtime/collectives/groups.h"
#include "node-runtime/collectives/shm/buffer.h"

namespace torus::coll {

inline constexpr std::chrono::milliseconds kDefaultTimeout{5 * 60 * 1000};

// Algorithm and Transport: groups.h.
Result<Algorithm> parseAlgorithm(std::string_view text);
std::string_view algorithmName(Algorithm algorithm);

Result<Transport> parseTransport(std::string_view text);
// "always" (register every buffer with libfabric, as efa needs) or "auto" (when the provider asks).
Result<bool> parseOfiRegister(std::string_view text);

struct CommOptions {
  int rank = 0;
  int size = 1;
  std::string rootAddress = "127.0.0.1:0";  // NEURON_RT_ROOT_COMM_ID
  std::chrono::milliseconds timeout = kDefaultTimeout;
  std::string name;       // shown in logs and errors; default "comm-<session>"
  UniqueFd rootListener;  // rank 0 only, optional: a socket already listening on rootAddress
  Algorithm algorithm = Algorithm::kAuto;
  Transport transport = Transport::kAuto;
  std::string hostId;  // which ranks share memory; empty: hostname/boot id/IPC namespace
  // Proves to each other that the ranks belong to one job (bootstrap_wire.h); the same for
  // every rank, from TORUS_COLL_JOB_SECRET. Empty: the bootstrap is not authenticated.
  std::string jobSecret;
  std::string ofiProvider;  // empty: FI_PROVIDER, else efa, tcp;ofi_rxm, tcp
  // Register buffers with libfabric even when the provider does not need it (the path efa
  // takes), from TORUS_COLL_OFI_REGISTER=always.
  bool ofiRegisterAlways = false;
};

// Fills the options from the variables that are set, through the one table that declares them
// (communicator_setup.cc): NEURON_RT_ROOT_COMM_ID, TORUS_COLL_TIMEOUT_MS, TORUS_COLL_JOB_SECRET,
// TORUS_COLL_ALGO, TORUS_COLL_TRANSPORT, TORUS_COLL_HOST_ID, TORUS_COLL_OFI_REGISTER. Read once,
// at communicator creation, as STYLE.md asks; an error names the variable.
Result<void> applyEnvironment(CommOptions& options);
// The names of the variables applyEnvironment reads, in its order.
std::vector<std::string_view> environmentVariables();

class Communicator {
 public:
  static Result<std::unique_ptr<Communicator>> create(CommOptions options);
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator();

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& name() const { return name_; }
  // Sequence number of the last collective started (1 for the first).
  std::uint64_t sequence() const { return sequence_; }
  // The error that broke this communicator, if any.
  const std::optional<Error>& brokenBy() const { return broken_; }
  // "shm", "ofi" (every rank over libfabric) or "shm+ofi" (hierarchical), and the provider.
  std::string transportName() const;

  // Collective: ranks passing the same color >= 0 form a new communicator, ranked by key (ties
  // by rank here); a negative color takes part but gets no communicator (nullptr). This
  // communicator stays usable; the new one has its own sequence numbers and failure state.
  Result<std::unique_ptr<Communicator>> split(int color, int key);

  // Runtime-owned tensor of `bytes` bytes (local, not collective).
  Result<Buffer> allocate(std::size_t bytes);
  // How libfabric transfers found their memory registrations so far (ofi_endpoint.h); zeros
  // unless ranks span hosts and the provider registers memory (efa, TORUS_COLL_OFI_REGISTER).
  RegistrationCounts registrationCounts() const;

  // Counts are in elements. In-place: recv == send (AllGather: send == recv + rank * sendCount
  // elements; ReduceScatter: recv == send + rank * recvCount elements).
  Result<void> allReduce(const void* send, void* recv, std::size_t count, DataType type,
                         ReduceOp op);
  Result<void> allGather(const void* send, void* recv, std::size_t sendCount, DataType type);
  Result<void> reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type,
                             ReduceOp op);
  // Block p of send goes to rank p; block p of recv comes from rank p; countPerRank per block.
  Result<void> allToAll(const void* send, void* recv, std::size_t countPerRank, DataType type);
  // send is read at root only; recv is written on every rank.
  Result<void> broadcast(const void* send, void* recv, std::size_t count, DataType type, int root);
  // recv is written at root only.
  Result<void> reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                      int root);
  // Blocking point-to-point: returns when the peer has the data (send) / the data is here (recv).
  Result<void> send(const void* data, std::size_t count, DataType type, int peer);
  Result<void> recv(void* data, std::size_t count, DataType type, int peer);
  Result<void> barrier();
  // One ring step: send to rank sendTo and receive from rank recvFrom at the same time (either
  // may be -1 to skip that half; ranks not in the pattern pass both -1 and return at once).
  Result<void> permute(const void* send, void* recv, std::size_t count, DataType type, int sendTo,
                       int recvFrom);

  // Asynchronous forms: the operation runs on this communicator's worker thread, after every
  // operation posted before it; wait() or test() the Request. Buffers must stay valid until the
  // request finished. While requests are outstanding, the synchronous calls above fail with
  // kFailedPrecondition instead of racing the worker.
  Request async(std::function<Result<void>(Communicator&)> operation);
  Request allReduceAsync(const void* send, void* recv, std::size_t count, DataType type,
                         ReduceOp op);
  Request allGatherAsync(const void* send, void* recv, std::size_t sendCount, DataType type);
  Request reduceScatterAsync(const void* send, void* recv, std::size_t recvCount, DataType type,
                             ReduceOp op);
  Request broadcastAsync(const void* send, void* recv, std::size_t count, DataType type, int root);
  Request barrierAsync();

 private:
  Communicator() = default;
  Result<void> setup(CommOptions& options);
  // This communicator's part in its groups: who it is and how it runs.
  GroupSettings groupSettings() const;
  // A communicator of `members` (ranks of this one, in their new order) with this one's settings,
  // not connected to anything yet (split).
  std::unique_ptr<Communicator> childOf(const std::vector<int>& members, std::string name,
                                        std::uint64_t session) const;
  // Takes its groups and shows on the process-wide status board, until destroyed.
  void useGroups(std::unique_ptr<Groups> groups);

  // The one path of every collective: refuses while async work is pending or once broken,
  // numbers it, marks it in flight, runs it on the group, and breaks the communicator if it fails.
  Result<void> run(OpKind op, FunctionRef<Result<void>(const GroupCall&)> body);
  Result<void> pointToPoint(OpKind kind, const void* send, void* recv, std::size_t count,
                            DataType type, int sendTo, int recvFrom);
  Result<void> checkCaller(std::string_view call) const;
  Result<void> checkRoot(std::string_view call, int root) const;
  Error fail(Error error);

  int rank_ = 0;
  int size_ = 1;
  std::string name_;
  std::chrono::milliseconds timeout_{kDefaultTimeout};
  std::uint64_t session_ = 0;
  std::uint64_t sequence_ = 0;
  std::uint64_t splits_ = 0;
  Algorithm algorithm_ = Algorithm::kAuto;
  Transport transport_ = Transport::kAuto;
  std::vector<RankInfo> ranks_;
  std::optional<Error> broken_;
  std::shared_ptr<CommStatus> status_;  // what statusReport() shows about this communicator
  std::optional<StatusRegistration> statusRegistration_;
  bool waitPublished_ = false;
  std::vector<std::uint64_t> sent_;      // per peer: point-to-point messages sent to it
  std::vector<std::uint64_t> received_;  // per peer: messages received from it
  std::unique_ptr<Groups> groups_;       // what every collective runs on
  std::unique_ptr<AsyncWorker> worker_;  // last: stopped before anything it uses goes away
};

}  // namespace torus::coll
