// What one rank of neuron-cc-bench does: for each size, warm up, time `iters` collectives,
// average the time over ranks, optionally check the data, and (rank 0) print a row as
// nccl-tests does: time, algbw = bytes / time, busbw = algbw × the collective's bus factor.
//
// Owns: the size sweep, timing and reporting. Does not own: launching ranks (main.cc) or the
// collectives themselves (torus_collectives).
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

#include "common/base/result.h"
#include "node-runtime/collectives/communicator.h"

namespace torus::cli {

enum class BenchOp {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kBroadcast,
  kReduce,
  kSendRecv
};

Result<BenchOp> parseBenchOp(std::string_view text);
std::string_view benchOpName(BenchOp op);
// nccl-tests' factors: AllReduce 2(n-1)/n; AllGather, ReduceScatter, AllToAll (n-1)/n; else 1.
double busFactor(BenchOp op, int ranks);

struct BenchSettings {
  BenchOp op = BenchOp::kAllReduce;
  coll::DataType type = coll::DataType::kF32;
  coll::ReduceOp reduceOp = coll::ReduceOp::kSum;
  std::size_t minBytes = 8;
  std::size_t maxBytes = 64 << 20;
  int iters = 20;
  int warmup = 5;
  bool check = false;
  bool runtimeBuffers = true;
  bool inPlace = false;
  bool json = false;
};

// Runs the sweep on `comm`; rank 0 writes to `out`. Returns false when a check failed.
Result<bool> runBenchRank(coll::Communicator& comm, const BenchSettings& settings, std::FILE* out);

}  // namespace torus::cli
