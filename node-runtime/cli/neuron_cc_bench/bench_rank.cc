#include "node-runtime/cli/neuron_cc_bench/bench_rank.h"

#include <chrono>
#include <cstring>
#include <vector>

#include "node-runtime/collectives/core/pattern.h"

namespace torus::cli {
namespace {

using coll::Communicator;
using coll::DataType;
using coll::ReduceOp;

constexpr BenchOp kOps[] = {BenchOp::kAllReduce, BenchOp::kAllGather, BenchOp::kReduceScatter,
                            BenchOp::kAllToAll,  BenchOp::kBroadcast, BenchOp::kReduce,
                            BenchOp::kSendRecv};

// One size: `count` as the collective takes it, and the bytes nccl-tests reports for it.
struct SizePlan {
  std::size_t count = 0;
  std::size_t bytes = 0;     // S in the algbw formula
  std::size_t inBytes = 0;   // this rank's input
  std::size_t outBytes = 0;  // this rank's output
};

SizePlan planFor(BenchOp op, std::size_t bytes, std::size_t elem, int ranks) {
  const auto n = static_cast<std::size_t>(ranks);
  SizePlan plan;
  switch (op) {
    case BenchOp::kAllReduce:
    case BenchOp::kBroadcast:
    case BenchOp::kReduce:
    case BenchOp::kSendRecv:
      plan.count = bytes / elem;
      plan.bytes = plan.inBytes = plan.outBytes = plan.count * elem;
      break;
    case BenchOp::kAllGather:
      plan.count = bytes / (elem * n);
      plan.inBytes = plan.count * elem;
      plan.bytes = plan.outBytes = plan.count * elem * n;
      break;
    case BenchOp::kReduceScatter:
      plan.count = bytes / (elem * n);
      plan.outBytes = plan.count * elem;
      plan.bytes = plan.inBytes = plan.count * elem * n;
      break;
    case BenchOp::kAllToAll:
      plan.count = bytes / (elem * n);
      plan.bytes = plan.inBytes = plan.outBytes = plan.count * elem * n;
      break;
  }
  return plan;
}

// The buffers of one size: runtime-owned tensors or plain heap memory.
class Buffers {
 public:
  Result<void> prepare(Communicator& comm, const SizePlan& plan, bool runtime, bool inPlace) {
    const std::size_t span = std::max(plan.inBytes, plan.outBytes);
    const std::size_t inSize = inPlace ? 0 : plan.inBytes;
    const std::size_t outSize = inPlace ? span : plan.outBytes;
    if (runtime) {
      auto in = comm.allocate(std::max<std::size_t>(inSize, 64));
      if (!in) return std::move(in).error();
      auto out = comm.allocate(std::max<std::size_t>(outSize, 64));
      if (!out) return std::move(out).error();
      inTensor_ = std::move(*in);
      outTensor_ = std::move(*out);
      in_ = inTensor_.data();
      out_ = outTensor_.data();
    } else {
      inHeap_.assign(std::max<std::size_t>(inSize, 64), std::byte{0});
      outHeap_.assign(std::max<std::size_t>(outSize, 64), std::byte{0});
      in_ = inHeap_.data();
      out_ = outHeap_.data();
    }
    if (inPlace) in_ = out_;
    return okResult();
  }
  std::byte* in() const { return in_; }
  std::byte* out() const { return out_; }

 private:
  coll::Buffer inTensor_;
  coll::Buffer outTensor_;
  std::vector<std::byte> inHeap_;
  std::vector<std::byte> outHeap_;
  std::byte* in_ = nullptr;
  std::byte* out_ = nullptr;
};

Result<void> runOnce(Communicator& comm, const BenchSettings& s, const SizePlan& plan,
                     std::byte* in, std::byte* out) {
  const int rank = comm.rank();
  const int n = comm.size();
  const std::size_t elem = coll::dataTypeSize(s.type);
  switch (s.op) {
    case BenchOp::kAllReduce:
      return comm.allReduce(in, out, plan.count, s.type, s.reduceOp);
    case BenchOp::kAllGather:
      return comm.allGather(s.inPlace ? out + static_cast<std::size_t>(rank) * plan.inBytes : in,
                            out, plan.count, s.type);
    case BenchOp::kReduceScatter:
      return comm.reduceScatter(
          in, s.inPlace ? in + static_cast<std::size_t>(rank) * plan.count * elem : out, plan.count,
          s.type, s.reduceOp);
    case BenchOp::kAllToAll:
      return comm.allToAll(in, out, plan.count, s.type);
    case BenchOp::kBroadcast:
      return comm.broadcast(in, out, plan.count, s.type, 0);
    case BenchOp::kReduce:
      return comm.reduce(in, out, plan.count, s.type, s.reduceOp, 0);
    case BenchOp::kSendRecv: {
      // Ring exchange: everyone sends to rank+1 and receives from rank-1. Sends are blocking, so
      // odd ranks receive first; that breaks every cycle of waiting.
      const int next = (rank + 1) % n;
      const int prev = (rank + n - 1) % n;
      if (rank % 2 == 0) {
        TORUS_RETURN_IF_ERROR(comm.send(in, plan.count, s.type, next), "send");
        return comm.recv(out, plan.count, s.type, prev);
      }
      TORUS_RETURN_IF_ERROR(comm.recv(out, plan.count, s.type, prev), "recv");
      return comm.send(in, plan.count, s.type, next);
    }
  }
  return okResult();
}

// Fills this rank's input with the pattern (where it lives for in-place runs).
void fillInput(const Communicator& comm, const BenchSettings& s, const SizePlan& plan,
               std::byte* in, std::byte* out) {
  const int rank = comm.rank();
  if (s.op == BenchOp::kAllGather && s.inPlace) {
    coll::fillPattern({out + static_cast<std::size_t>(rank) * plan.inBytes, plan.inBytes}, s.type,
                      s.reduceOp, rank, 0);
    return;
  }
  coll::fillPattern({in, plan.inBytes}, s.type, s.reduceOp, rank, 0);
}

std::string verify(const Communicator& comm, const BenchSettings& s, const SizePlan& plan,
                   std::byte* in, std::byte* out) {
  const int rank = comm.rank();
  const int n = comm.size();
  const std::size_t elem = coll::dataTypeSize(s.type);
  const auto reduced = [&](std::size_t first) {
    return [&, first](std::size_t i) {
      return coll::expectedReduction(n, first + i, s.type, s.reduceOp);
    };
  };
  switch (s.op) {
    case BenchOp::kAllReduce:
      return coll::compareElements({out, plan.outBytes}, s.type, reduced(0));
    case BenchOp::kReduce:
      return rank == 0 ? coll::compareElements({out, plan.outBytes}, s.type, reduced(0)) : "";
    case BenchOp::kReduceScatter: {
      std::byte* result = s.inPlace ? in + static_cast<std::size_t>(rank) * plan.outBytes : out;
      return coll::compareElements({result, plan.outBytes}, s.type,
                                   reduced(static_cast<std::size_t>(rank) * plan.count));
    }
    case BenchOp::kBroadcast:
      return coll::compareElements({out, plan.outBytes}, s.type, [&](std::size_t i) {
        return coll::patternValue(0, i, s.type, s.reduceOp);
      });
    case BenchOp::kSendRecv: {
      const int prev = (rank + n - 1) % n;
      return coll::compareElements({out, plan.outBytes}, s.type, [&](std::size_t i) {
        return coll::patternValue(prev, i, s.type, s.reduceOp);
      });
    }
    case BenchOp::kAllGather:
    case BenchOp::kAllToAll:
      for (int p = 0; p < n; ++p) {
        const std::size_t first =
            s.op == BenchOp::kAllToAll ? static_cast<std::size_t>(rank) * plan.count : 0;
        const std::size_t block = plan.count * elem;
        auto diff = coll::compareElements(
            {out + static_cast<std::size_t>(p) * block, block}, s.type,
            [&](std::size_t i) { return coll::patternValue(p, first + i, s.type, s.reduceOp); });
        if (!diff.empty()) return "block from rank " + std::to_string(p) + ": " + diff;
      }
      return {};
  }
  return {};
}

}  // namespace

Result<BenchOp> parseBenchOp(std::string_view text) {
  for (BenchOp op : kOps) {
    if (benchOpName(op) == text) return op;
  }
  return makeError(ErrorCode::kInvalidArgument,
                   "unknown op \"" + std::string(text) +
                       "\" (expected allreduce, allgather, reducescatter, alltoall, broadcast, "
                       "reduce or sendrecv)");
}

std::string_view benchOpName(BenchOp op) {
  switch (op) {
    case BenchOp::kAllReduce:
      return "allreduce";
    case BenchOp::kAllGather:
      return "allgather";
    case BenchOp::kReduceScatter:
      return "reducescatter";
    case BenchOp::kAllToAll:
      return "alltoall";
    case BenchOp::kBroadcast:
      return "broadcast";
    case BenchOp::kReduce:
      return "reduce";
    case BenchOp::kSendRecv:
      return "sendrecv";
  }
  return "?";
}

double busFactor(BenchOp op, int ranks) {
  const double n = ranks;
  switch (op) {
    case BenchOp::kAllReduce:
      return 2.0 * (n - 1) / n;
    case BenchOp::kAllGather:
    case BenchOp::kReduceScatter:
    case BenchOp::kAllToAll:
      return (n - 1) / n;
    default:
      return 1.0;
  }
}

Result<bool> runBenchRank(Communicator& comm, const BenchSettings& s, std::FILE* out) {
  const bool leader = comm.rank() == 0;
  const std::size_t elem = coll::dataTypeSize(s.type);
  if (leader && !s.json) {
    std::fprintf(out, "# neuron-cc-bench: op=%s ranks=%d dtype=%s redop=%s buffers=%s %s\n",
                 std::string(benchOpName(s.op)).c_str(), comm.size(),
                 std::string(coll::dataTypeName(s.type)).c_str(),
                 std::string(coll::reduceOpName(s.reduceOp)).c_str(),
                 s.runtimeBuffers ? "runtime" : "user", s.inPlace ? "in-place" : "out-of-place");
    std::fprintf(out, "# time = mean over iterations and ranks; GB/s with GB = 1e9 bytes\n");
    std::fprintf(out, "%12s %12s %6s %12s %10s %10s %7s\n", "size(B)", "count", "type", "time(us)",
                 "algbw", "busbw", "check");
  }
  bool allOk = true;
  for (std::size_t bytes = s.minBytes; bytes <= s.maxBytes; bytes = bytes == 0 ? 1 : bytes * 2) {
    const SizePlan plan = planFor(s.op, bytes, elem, comm.size());
    Buffers buffers;
    TORUS_RETURN_IF_ERROR(buffers.prepare(comm, plan, s.runtimeBuffers, s.inPlace),
                          "allocating buffers of " + std::to_string(bytes) + " bytes");
    fillInput(comm, s, plan, buffers.in(), buffers.out());
    for (int i = 0; i < s.warmup; ++i) {
      TORUS_RETURN_IF_ERROR(runOnce(comm, s, plan, buffers.in(), buffers.out()), "warm-up");
    }
    TORUS_RETURN_IF_ERROR(comm.barrier(), "barrier before timing");
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < s.iters; ++i) {
      TORUS_RETURN_IF_ERROR(runOnce(comm, s, plan, buffers.in(), buffers.out()), "timed run");
    }
    const double localUs =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count() /
        std::max(1, s.iters);
    // Checked on a fresh run: in-place runs overwrite their input every iteration.
    std::int32_t checkOk = 1;
    std::string failure;
    if (s.check) {
      fillInput(comm, s, plan, buffers.in(), buffers.out());
      TORUS_RETURN_IF_ERROR(runOnce(comm, s, plan, buffers.in(), buffers.out()), "check run");
      failure = verify(comm, s, plan, buffers.in(), buffers.out());
      checkOk = failure.empty() ? 1 : 0;
      if (!failure.empty()) {
        std::fprintf(stderr, "neuron-cc-bench: rank %d, %zu bytes: %s\n", comm.rank(), bytes,
                     failure.c_str());
      }
    }
    double stats[1] = {localUs};
    TORUS_RETURN_IF_ERROR(comm.allReduce(stats, stats, 1, DataType::kF64, ReduceOp::kSum),
                          "averaging times");
    std::int32_t verdict = checkOk;
    TORUS_RETURN_IF_ERROR(comm.allReduce(&verdict, &verdict, 1, DataType::kI32, ReduceOp::kMin),
                          "gathering checks");
    allOk = allOk && verdict == 1;
    const double timeUs = stats[0] / comm.size();
    const double algbw = timeUs > 0 ? static_cast<double>(plan.bytes) / (timeUs * 1e3) : 0;
    const double busbw = algbw * busFactor(s.op, comm.size());
    const char* check = !s.check ? "off" : verdict == 1 ? "ok" : "fail";
    if (leader) {
      if (s.json) {
        std::fprintf(out,
                     "{\"op\":\"%s\",\"ranks\":%d,\"bytes\":%zu,\"count\":%zu,\"dtype\":\"%s\","
                     "\"redop\":\"%s\",\"buffers\":\"%s\",\"in_place\":%s,\"iters\":%d,"
                     "\"time_us\":%.3f,\"algbw_GBps\":%.4f,\"busbw_GBps\":%.4f,\"check\":\"%s\"}\n",
                     std::string(benchOpName(s.op)).c_str(), comm.size(), plan.bytes, plan.count,
                     std::string(coll::dataTypeName(s.type)).c_str(),
                     std::string(coll::reduceOpName(s.reduceOp)).c_str(),
                     s.runtimeBuffers ? "runtime" : "user", s.inPlace ? "true" : "false", s.iters,
                     timeUs, algbw, busbw, check);
      } else {
        std::fprintf(out, "%12zu %12zu %6s %12.2f %10.3f %10.3f %7s\n", plan.bytes, plan.count,
                     std::string(coll::dataTypeName(s.type)).c_str(), timeUs, algbw, busbw, check);
      }
      std::fflush(out);
    }
    if (bytes == 0 && s.maxBytes == 0) break;
  }
  return allOk;
}

}  // namespace torus::cli
