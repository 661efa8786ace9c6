// The vocabulary every part of the collectives shares — which collective runs, what a rank
// announces about it, where a buffer lives — so the lower files (control segment layout,
// segment registry, status board, the libfabric group) need not include communicator.h.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

#include "node-runtime/collectives/core/data_type.h"

namespace torus::coll {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// Collectives up to this many bytes per rank go through the control slots (one wait).
inline constexpr std::size_t kInlineBytes = 512;

enum class OpKind : std::uint32_t {
  kNone,
  kSetup,
  kBarrier,
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kBroadcast,
  kReduce,
  kSend,
  kRecv,
  kPermute,
};
std::string_view opName(OpKind op);

// Where a rank's input or output lives, as the peers can find it. segment 0 = nothing.
struct SegmentRef {
  std::uint64_t segment = 0;
  std::uint64_t offset = 0;
};

// What a rank announces about the collective it is in; peers compare and use it.
struct OpDescriptor {
  std::uint64_t sequence = 0;
  OpKind op = OpKind::kNone;
  DataType type = DataType::kU8;
  ReduceOp reduceOp = ReduceOp::kSum;
  std::int32_t root = 0;
  std::uint64_t count = 0;
  SegmentRef in;
  SegmentRef out;
};

// A non-owning reference to a callable, so the per-collective body costs no allocation.
template <typename Signature>
class FunctionRef;
template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F>
  FunctionRef(F&& f)  // NOLINT(google-explicit-constructor)
      : object_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace torus::coll
