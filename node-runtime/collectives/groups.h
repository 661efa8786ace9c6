// Groups: the groups one communicator runs its collectives on, and what they share with the
// communicator's splits (the bootstrap link, the libfabric endpoint), as Gloo hands a Context
// its Device. group_builder.h builds them, at creation and at split; the Communicator keeps its
// identity, sequence numbers, broken state, status and async worker, and runs every collective
// on run():
//   - every rank on one host: a ShmGroup (shm/shm_group.h, the "direct" data path);
//   - ranks on several hosts, or TORUS_COLL_TRANSPORT=ofi: a NetGroup of all ranks (net/);
//   - several hosts with several ranks each: a HierarchicalGroup, whose AllReduce runs over the
//     host's ShmGroup and a column NetGroup, everything else over the NetGroup of all ranks.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "node-runtime/collectives/bootstrap/bootstrap_wire.h"
#include "node-runtime/collectives/core/group.h"
#include "node-runtime/collectives/core/status.h"
#include "node-runtime/collectives/ofi/ofi_endpoint.h"
#include "node-runtime/collectives/shm/buffer.h"
#include "node-runtime/collectives/shm/segment_space.h"

namespace torus::coll {

// Which algorithms run, set by TORUS_COLL_ALGO for comparing and for working around a suspected
// bug. kAuto: shared memory takes the control slots up to kInlineBytes per rank and the direct
// path above; libfabric picks ring or recursive doubling by the cost model; ranks on several
// hosts run AllReduce hierarchically. kDirect: shared memory never uses the slots. kRing,
// kRecursiveDoubling: that AllReduce on libfabric. kFlat: no hierarchical AllReduce.
enum class Algorithm { kAuto, kDirect, kRing, kRecursiveDoubling, kFlat };

// How ranks reach each other. kAuto: shared memory within a host, libfabric between hosts;
// kShm: shared memory only (ranks on other hosts are an error); kOfi: libfabric for every rank,
// also within a host (to test and measure the network path on one machine).
enum class Transport { kAuto, kShm, kOfi };

// Who the groups are for: one communicator's rank, its members and its settings.
struct GroupSettings {
  int rank = 0;
  std::string name;             // the communicator's, for logs and errors
  std::uint64_t session = 0;    // the same on every member
  std::vector<RankInfo> ranks;  // every member's, by rank
  std::chrono::milliseconds timeout{0};
  Algorithm algorithm = Algorithm::kAuto;
  Transport transport = Transport::kAuto;
  bool spin = true;  // false when ranks outnumber CPUs: yield at once
  int size() const { return static_cast<int>(ranks.size()); }
};

class BootstrapLink;
class NetGroup;
class ShmGroup;
class HierarchicalGroup;

class Groups {
 public:
  Groups(const Groups&) = delete;
  Groups& operator=(const Groups&) = delete;
  ~Groups();

  // The group every collective runs on.
  Group& run() const { return *run_; }
  // Whether libfabric carries any of it: its waits run against the whole call's deadline.
  bool overNetwork() const { return net_ != nullptr; }
  // "shm", "ofi" (every rank over libfabric) or "shm+ofi" (hierarchical).
  std::string transportName() const;
  // The first tag group id free on this rank's endpoint (split tells the others).
  std::uint16_t nextGroupId() const { return nextGroupId_; }

  // Runtime-owned tensor of `bytes` bytes, registered with libfabric when the provider needs it.
  Result<Buffer> allocate(std::size_t bytes);
  RegistrationCounts registrationCounts() const;
  // The host group's waits show on the status board.
  void publishTo(CommStatus* status, bool* waitPublished);
  // What the bootstrap link has heard that breaks the communicator: a member that died, or one
  // that announced an abort. Cheap when nothing has happened.
  std::optional<std::string> remoteTrouble() const;
  // The communicator broke: hostmates waiting on shared memory learn of it at once, ranks on
  // other hosts through the bootstrap link (unless it is the link that told us), and the
  // segments of hostmates that died are removed (unlinkSegmentsOfTheDead).
  void abort(const std::string& message);

 private:
  friend class GroupBuilder;
  explicit Groups(GroupSettings settings);
  // Communicator ranks of the dead ranks the bootstrap link knows of.
  std::vector<int> deadMembers() const;
  // Removes the shared-memory segments of members that died on this host (they cannot).
  void unlinkSegmentsOfTheDead() const;
  // With a host group and a column, AllReduce runs hierarchically; else on the group of all.
  void useHierarchyWhenComplete();

  GroupSettings settings_;
  Group* run_ = nullptr;
  std::unique_ptr<ShmGroup> shm_;  // every rank on this host
  // libfabric: set when ranks span hosts or TORUS_COLL_TRANSPORT=ofi.
  std::shared_ptr<BootstrapLink> link_;
  std::shared_ptr<OfiEndpoint> endpoint_;
  std::optional<SegmentSpace> segments_;  // tensors when no host group owns them
  std::unique_ptr<NetGroup> net_;         // every rank
  std::unique_ptr<ShmGroup> local_;       // the ranks of this host (hierarchical)
  std::unique_ptr<NetGroup> column_;      // same local index on every host (hierarchical)
  std::unique_ptr<HierarchicalGroup> hierarchical_;
  std::vector<int> endpointRanks_;  // endpoint rank of each rank
  std::vector<int> hostOf_;         // host index of each rank
  std::uint16_t nextGroupId_ = 0;
};

}  // namespace torus::coll
