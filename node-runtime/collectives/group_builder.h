// GroupBuilder: the one place that knows which groups (groups.h) a communicator runs on for a
// layout of ranks over hosts, and builds them: at creation, after the bootstrap, and at split,
// from the parent's groups. Every step that needs the others (control segments made before
// anyone maps them, the host groups' barrier over libfabric) is collective over the ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "node-runtime/collectives/core/coll_types.h"
#include "node-runtime/collectives/groups.h"
#include "node-runtime/collectives/shm/shm_segment.h"

namespace torus::coll {

struct SplitRequest {
  int color = -1;
  std::uint64_t index = 0;                         // the parent's split count, this one included
  const std::vector<std::int32_t>* all = nullptr;  // every parent rank's (color, key, nextGroupId)
  const std::vector<int>* members = nullptr;  // parent ranks in my new group, in their new order
  std::optional<GroupSettings> child;         // none for a negative color
  std::string context;                        // "split of <parent>"
};

class GroupBuilder {
 public:
  // After the bootstrap. `control` is the control segment rank 0 made as soon as the session was
  // known (empty on the other ranks); it goes again when the ranks span hosts. `link` is null for
  // a world of one.
  static Result<std::unique_ptr<Groups>> build(GroupSettings settings, ShmSegment control,
                                               std::shared_ptr<BootstrapLink> link,
                                               const OfiOptions& ofi, const std::string& context);
  // Collective over the parent's ranks (each passes its own request); null for a negative color.
  // `parentBarrier` is the parent communicator's barrier (a numbered collective of its own).
  static Result<std::unique_ptr<Groups>> split(Groups& parent, const SplitRequest& request,
                                               FunctionRef<Result<void>()> parentBarrier);

 private:
  // Every rank on this host: one ShmGroup.
  static Result<void> buildShm(Groups& groups, ShmSegment control, const std::string& context);
  static Result<void> buildNet(Groups& groups, const OfiOptions& ofi, const std::string& context);
  // The shared-memory group of this host's ranks: the host's lowest rank creates the control
  // segment, a barrier over libfabric, then the others map it.
  static Result<void> buildLocal(Groups& groups, const std::vector<int>& members, int hostIndex,
                                 const std::string& context);
  static void buildColumn(Groups& groups, const std::vector<int>& column, int myIndex,
                          std::uint16_t groupId);
  static Result<std::unique_ptr<Groups>> splitShm(const SplitRequest& request,
                                                  FunctionRef<Result<void>()> parentBarrier);
  static Result<std::unique_ptr<Groups>> splitNet(Groups& parent, const SplitRequest& request);
};

}  // namespace torus::coll
