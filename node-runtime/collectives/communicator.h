// Communicator: a group of ranks that run collectives, over shared memory between ranks of one
// host and over libfabric between hosts.
//
// Created from (rank, world size, root address) through the TCP bootstrap; ranks on the same host
// are found there. When every rank is on one host, everything below runs on shared memory. When
// ranks span hosts (or TORUS_COLL_TRANSPORT=ofi), collectives run as message passing over one
// libfabric endpoint per rank (net/net_group.h); with several ranks per host, AllReduce runs
// hierarchically: AllReduce on each host over shared memory, then each local rank runs the
// inter-host AllReduce of its shard, then each host shares the shards again.
//
// Data path ("direct" design): every rank publishes, per operation, where its input and output
// live as (shared-memory segment, offset); after an arrival barrier each rank does its share of
// the work straight in the peers' memory (rank r reduces chunk r from every input and writes the
// result into every output), then a completion barrier. Buffers from allocate() live in shared
// memory, so this runs with no copy beyond the reduction itself; plain user buffers are copied
// through a per-rank staging segment. Up to kInlineBytes per rank, AllReduce, AllGather,
// Broadcast and Barrier go through the control slots instead, with a single wait.
//
// Errors: every wait is bounded by the timeout. A peer that exits is noticed through its pidfd
// within about a millisecond; a peer that is alive but absent is named when the timeout runs out.
// Either way the error names the missing rank(s), the communicator and the sequence number, the
// communicator is broken from then on (every later call returns the same error), and the peers
// are told through the control segment so they fail fast too.
//
// Owns: the control segment, its own segments (allocations, staging), its mappings of the peers'
// segments, the peers' pidfds and its async worker thread. Not thread-safe: one thread per
// communicator at a time (the *Async calls hand operations to the worker instead).
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
#include "node-runtime/collectives/bootstrap.h"
#include "node-runtime/collectives/coll_types.h"
#include "node-runtime/collectives/data_type.h"
#include "node-runtime/collectives/shm_segment.h"
#include "node-runtime/collectives/status.h"

namespace torus::coll {

inline constexpr std::chrono::milliseconds kDefaultTimeout{5 * 60 * 1000};

// Which algorithms run, set by TORUS_COLL_ALGO for comparing and for working around a suspected
// bug. kAuto: shared memory takes the control slots up to kInlineBytes per rank and the direct
// path above; libfabric picks ring or recursive doubling by the cost model; ranks on several
// hosts run AllReduce hierarchically. kDirect: shared memory never uses the slots. kRing,
// kRecursiveDoubling: that AllReduce on libfabric. kFlat: no hierarchical AllReduce.
enum class Algorithm { kAuto, kDirect, kRing, kRecursiveDoubling, kFlat };
Result<Algorithm> parseAlgorithm(std::string_view text);
std::string_view algorithmName(Algorithm algorithm);

// How ranks reach each other. kAuto: shared memory within a host, libfabric between hosts;
// kShm: shared memory only (ranks on other hosts are an error); kOfi: libfabric for every rank,
// also within a host (to test and measure the network path on one machine).
enum class Transport { kAuto, kShm, kOfi };
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

// Fills rootAddress from NEURON_RT_ROOT_COMM_ID, timeout from TORUS_COLL_TIMEOUT_MS, algorithm
// from TORUS_COLL_ALGO, transport from TORUS_COLL_TRANSPORT, hostId from TORUS_COLL_HOST_ID and
// jobSecret from TORUS_COLL_JOB_SECRET when they are set; read once, at communicator creation, as
// STYLE.md asks.
Result<void> applyEnvironment(CommOptions& options);

class SegmentRegistry;
class BootstrapLink;
class OfiEndpoint;
struct RegistrationCounts;
class NetGroup;
struct NetCall;

// A runtime-owned tensor in shared memory (as a Neuron runtime owns device memory). Collectives
// on it run without staging copies. Valid after its communicator is gone (it then is plain
// memory), released when destroyed: the peers drop their mappings at their next operation.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;
  ~Buffer();

  std::byte* data() const { return segment_.data(); }
  std::size_t size() const { return bytes_; }
  template <typename T>
  std::span<T> as() const {
    return {reinterpret_cast<T*>(data()), bytes_ / sizeof(T)};
  }

 private:
  friend class Communicator;
  std::shared_ptr<SegmentRegistry> registry_;
  ShmSegment segment_;
  std::shared_ptr<void> registration_;  // libfabric's, when the provider needs one; after segment_
  std::uint64_t id_ = 0;
  std::size_t bytes_ = 0;
};

struct ControlLayout;

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
  // What one collective needs from the communicator: everyone's input and output pointers.
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

  Communicator() = default;
  Result<void> checkCaller(std::string_view call) const;
  bool useSlots(OpKind op, std::size_t bytes) const;
  Result<void> setup(CommOptions& options);
  Result<void> createControl(std::uint64_t session);
  Result<void> attachControl(const std::string& context);
  void registerStatus();  // on the process-wide status board, until destroyed
  // A communicator of `members` (ranks of this one, in their new order) with this one's settings,
  // not connected to anything yet (split, the host's communicator).
  std::unique_ptr<Communicator> childOf(const std::vector<int>& members, std::string name,
                                        std::uint64_t session) const;
  Result<void> runCollective(Plan plan, FunctionRef<void(const Views&)> body);
  Result<void> runInline(OpDescriptor desc, const void* send, std::size_t bytes,
                         FunctionRef<void(std::span<const std::byte* const>)> body);
  std::string opContext(const OpDescriptor& desc) const;
  template <typename Describe>
  Result<void> arriveAndWait(Describe what);
  Result<void> meet(std::string_view what);  // a barrier outside any collective (setup)
  Result<const std::byte*> resolve(int owner, SegmentRef ref, std::size_t bytes);
  Result<void> ensureStaging(std::size_t bytes);
  void exchangeFreed();
  Result<void> validatePeers(const OpDescriptor& mine);
  Result<void> validatePeer(int peer, const OpDescriptor& theirs, const OpDescriptor& mine) const;
  Result<void> pointToPoint(OpKind kind, const void* send, void* recv, std::size_t count,
                            DataType type, int sendTo, int recvFrom);
  Result<void> shmPost(const void* data, std::size_t bytes, int peer, std::uint64_t message);
  // ---- libfabric (communicator_net.cc) ----
  Result<void> setupNet(const CommOptions& options, std::shared_ptr<BootstrapLink> link,
                        const std::string& context);
  Result<Buffer> allocateShared(std::size_t bytes);  // a tensor in a shared-memory segment
  Result<void> buildLocal(const std::vector<int>& members, int hostIndex,
                          const std::string& context);
  void buildColumn(const std::vector<int>& column, int myIndex, std::uint16_t groupId);
  Result<void> runNet(OpKind op, FunctionRef<Result<void>(const NetCall&)> body);
  Result<void> netAllReduce(const NetCall& call, const void* send, void* recv, std::size_t count,
                            DataType type, ReduceOp op);
  Result<std::unique_ptr<Communicator>> splitNet(int color, int key,
                                                 const std::vector<std::int32_t>& all,
                                                 const std::vector<int>& members);
  template <typename Done, typename Pending, typename Describe>
  Result<void> waitUntil(Done done, Pending pending, Describe what);
  // Waits until arrived(r) holds for every rank r.
  template <typename Arrived, typename Describe>
  Result<void> waitForAll(Arrived arrived, Describe what);
  Error fail(Error error);
  std::string segmentName(int owner, std::uint64_t id) const;
  void unlinkSegmentsOf(int owner) const;
  std::string rankList(const std::vector<int>& ranks) const;
  // How messages name rank r: its number in the communicator the user holds (a host's
  // communicator inside a multi-host one names the ranks by their numbers in the outer one).
  std::string rankName(int r) const {
    return labels_.empty() ? std::to_string(r)
                           : std::to_string(labels_[static_cast<std::size_t>(r)]);
  }
  // Communicator ranks of the dead ranks the bootstrap link knows of.
  std::vector<int> deadMembers() const;
  // What the bootstrap link (or, for a host's communicator, its outer one's link) has heard that
  // breaks this communicator: a member that died, or one that announced an abort. Cheap when
  // nothing has happened.
  std::optional<std::string> remoteTrouble() const;

  int rank_ = 0;
  int size_ = 1;
  std::string name_;
  std::chrono::milliseconds timeout_{kDefaultTimeout};
  std::uint64_t session_ = 0;
  std::uint64_t sequence_ = 0;
  std::uint64_t epoch_ = 0;
  std::uint64_t splits_ = 0;
  bool spin_ = true;      // false when ranks outnumber CPUs: yield at once
  bool slotPath_ = true;  // small collectives through the control slots (Algorithm::kAuto)
  Algorithm algorithm_ = Algorithm::kAuto;
  Transport transport_ = Transport::kAuto;
  ShmSegment control_;
  ControlLayout* layout_ = nullptr;
  std::vector<RankInfo> ranks_;
  std::vector<UniqueFd> pidfds_;  // per rank; invalid for self or when pidfd_open failed
  std::shared_ptr<SegmentRegistry> registry_;
  ShmSegment staging_;
  std::uint64_t stagingId_ = 0;
  std::map<std::pair<int, std::uint64_t>, ShmSegment> peerSegments_;
  std::vector<std::uint64_t> sent_;       // per peer: messages sent to it
  std::vector<std::uint64_t> received_;   // per peer: messages received from it
  std::vector<std::uint64_t> freedSeen_;  // per peer: freed segments already dropped
  std::vector<std::byte> scratch_;        // reduction block, private to this rank
  Views views_;                           // reused by every collective
  std::vector<const std::byte*> inlineViews_;
  std::optional<Error> broken_;
  std::shared_ptr<CommStatus> status_;  // what statusReport() shows about this communicator
  std::optional<StatusRegistration> statusRegistration_;
  bool waitPublished_ = false;
  // libfabric: set when ranks span hosts or TORUS_COLL_TRANSPORT=ofi.
  std::shared_ptr<BootstrapLink> link_;
  std::shared_ptr<OfiEndpoint> endpoint_;
  std::unique_ptr<NetGroup> net_;        // every rank
  std::unique_ptr<NetGroup> column_;     // same local index on every host (hierarchical)
  std::unique_ptr<Communicator> local_;  // the ranks of this host, over shared memory
  // Set on a host's communicator (local_): its outer communicator's remoteTrouble().
  std::function<std::optional<std::string>()> outerTrouble_;
  std::vector<int> endpointRanks_;       // endpoint rank of each of my ranks
  std::vector<int> hostOf_;              // host index of each rank
  std::vector<int> labels_;              // outer rank of each rank (host communicators)
  std::uint16_t nextGroupId_ = 0;        // first tag group id free on this rank's endpoint
  std::unique_ptr<AsyncWorker> worker_;  // last: stopped before anything it uses goes away
};

}  // namespace torus::coll
