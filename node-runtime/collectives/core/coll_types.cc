#include "node-runtime/collectives/core/coll_types.h"

namespace torus::coll {

std::string_view opName(OpKind op) {
  switch (op) {
    case OpKind::kNone:
      return "none";
    case OpKind::kSetup:
      return "setup";
    case OpKind::kBarrier:
      return "barrier";
    case OpKind::kAllReduce:
      return "allReduce";
    case OpKind::kAllGather:
      return "allGather";
    case OpKind::kReduceScatter:
      return "reduceScatter";
    case OpKind::kAllToAll:
      return "allToAll";
    case OpKind::kBroadcast:
      return "broadcast";
    case OpKind::kReduce:
      return "reduce";
    case OpKind::kSend:
      return "send";
    case OpKind::kRecv:
      return "recv";
    case OpKind::kPermute:
      return "permute";
  }
  return "?";
}

}  // namespace torus::coll
