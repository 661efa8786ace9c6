#include "node-runtime/collectives/net/hierarchical_group.h"

#include <algorithm>
#include <string>

#include "common/base/log.h"

namespace torus::coll {
namespace {

// Chunk boundaries (elements) of `count` split over n parts.
std::size_t shardBegin(std::size_t count, int parts, int index) {
  const std::size_t per = count / static_cast<std::size_t>(parts);
  const std::size_t extra = count % static_cast<std::size_t>(parts);
  const auto i = static_cast<std::size_t>(index);
  return i * per + std::min(i, extra);
}

}  // namespace

Result<void> HierarchicalGroup::allReduce(const GroupCall& call, const void* send, void* recv,
                                          std::size_t count, DataType type, ReduceOp op) {
  const std::size_t elem = dataTypeSize(type);
  const int parts = local_.size();
  const auto hostStage = [&] { return call.what() + " (host stage)"; };
  const GroupCall local{call.sequence, call.deadline, call.timeout, hostStage};
  if (auto status = local_.allReduce(local, send, recv, count, type, op); !status) return status;
  auto* out = static_cast<std::byte*>(recv);
  const int mine = local_.rank();
  const std::size_t begin = shardBegin(count, parts, mine);
  const std::size_t end = shardBegin(count, parts, mine + 1);
  if (auto status =
          column_.allReduce(call, out + begin * elem, out + begin * elem, end - begin, type, op);
      !status) {
    return status;
  }
  for (int k = 0; k < parts; ++k) {
    const std::size_t first = shardBegin(count, parts, k);
    const std::size_t last = shardBegin(count, parts, k + 1);
    const auto sharing = [&] {
      return call.what() + " (sharing shard " + std::to_string(k) + " on the host)";
    };
    const GroupCall share{call.sequence, call.deadline, call.timeout, sharing};
    if (auto status =
            local_.broadcast(share, out + first * elem, out + first * elem, last - first, type, k);
        !status) {
      return status;
    }
  }
  return okResult();
}

}  // namespace torus::coll
