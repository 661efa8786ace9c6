// (Over 400 lines on purpose: one matrix, one reference model, read together.)
// Every collective × data type × reduction × size (0, 1, primes, counts that do not divide by
// the rank count, multi-block sizes) × runtime-owned and user buffers × in place and out of
// place, on 1 to 8 ranks run as forked processes: over shared memory, over libfabric (tcp on
// loopback), and as several "hosts" (TORUS_COLL_HOST_ID) so the hierarchical and flat inter-host
// paths run. Each rank checks its own output against values computed independently of the
// reduction kernels (pattern.h).
#include <cstdlib>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "node-runtime/collectives/communicator.h"
#include "node-runtime/collectives/core/pattern.h"
#include "node-runtime/collectives/ofi/ofi_endpoint.h"
#include "tests/integration/collectives/rank_launcher.h"

namespace torus::coll {
namespace {

using testing::LaunchOptions;
using testing::launchRanks;
using testing::summarizeFailures;

constexpr std::size_t kCounts[] = {0, 1, 2, 7, 13, 64, 1000, 4099, 20011};
constexpr std::size_t kMaxCount = 20011;
constexpr std::byte kSentinel{0xA5};

// Two regions per rank: A (inputs) and B (outputs), big enough for size × kMaxCount f64.
class Sweep {
 public:
  Sweep(Communicator& comm, bool runtime) : comm_(comm), runtime_(runtime) {}

  Result<void> prepare() {
    regionBytes_ = static_cast<std::size_t>(comm_.size()) * kMaxCount * 8;
    if (runtime_) {
      auto buffer = comm_.allocate(2 * regionBytes_);
      if (!buffer) return std::move(buffer).error();
      owned_ = std::move(*buffer);
      a_ = owned_.data();
      b_ = owned_.data() + regionBytes_;
    } else {
      user_.resize(2 * regionBytes_);
      a_ = user_.data();
      b_ = user_.data() + regionBytes_;
    }
    return okResult();
  }

  std::string run() {
    for (DataType type : kAllDataTypes) {
      for (std::size_t count : kCounts) {
        for (bool inPlace : {false, true}) {
          for (ReduceOp op : kAllReduceOps) {
            if (auto e = allReduce(type, op, count, inPlace); !e.empty()) return e;
            if (auto e = reduce(type, op, count, inPlace); !e.empty()) return e;
            if (auto e = reduceScatter(type, op, count, inPlace); !e.empty()) return e;
          }
          if (auto e = allGather(type, count, inPlace); !e.empty()) return e;
          if (auto e = allToAll(type, count, inPlace); !e.empty()) return e;
          if (auto e = broadcast(type, count, inPlace); !e.empty()) return e;
        }
      }
    }
    if (auto e = sendRecvRing(); !e.empty()) return e;
    if (auto e = permuteRing(); !e.empty()) return e;
    if (auto status = comm_.barrier(); !status) return status.error().message;
    return {};
  }

 private:
  std::string where(std::string_view op, DataType type, std::size_t count, bool inPlace,
                    std::string_view detail = {}) const {
    return std::string(op) + " " + std::string(dataTypeName(type)) +
           " count=" + std::to_string(count) + (inPlace ? " in-place" : " out-of-place") +
           (runtime_ ? " runtime" : " user") + " buffers, rank " + std::to_string(rank()) + " of " +
           std::to_string(size()) + (detail.empty() ? "" : ": ") + std::string(detail);
  }
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  std::span<std::byte> span(std::byte* base, std::size_t bytes) const { return {base, bytes}; }
  void clear() {
    std::memset(a_, 0x5A, regionBytes_);
    std::memset(b_, static_cast<int>(kSentinel), regionBytes_);
  }

  std::string allReduce(DataType type, ReduceOp op, std::size_t count, bool inPlace) {
    const std::size_t bytes = count * dataTypeSize(type);
    clear();
    std::byte* in = inPlace ? b_ : a_;
    fillPattern(span(in, bytes), type, op, rank(), 0);
    if (auto s = comm_.allReduce(in, b_, count, type, op); !s) {
      return where("allReduce", type, count, inPlace, s.error().message);
    }
    auto diff = compareElements(span(b_, bytes), type, [&](std::size_t i) {
      return expectedReduction(size(), i, type, op);
    });
    return diff.empty()
               ? diff
               : where("allReduce " + std::string(reduceOpName(op)), type, count, inPlace, diff);
  }

  std::string reduce(DataType type, ReduceOp op, std::size_t count, bool inPlace) {
    const std::size_t bytes = count * dataTypeSize(type);
    const int root = static_cast<int>(count % static_cast<std::size_t>(size()));
    clear();
    std::byte* in = inPlace ? b_ : a_;
    fillPattern(span(in, bytes), type, op, rank(), 0);
    if (auto s = comm_.reduce(in, b_, count, type, op, root); !s) {
      return where("reduce", type, count, inPlace, s.error().message);
    }
    std::string diff;
    if (rank() == root) {
      diff = compareElements(span(b_, bytes), type,
                             [&](std::size_t i) { return expectedReduction(size(), i, type, op); });
    } else if (!inPlace) {
      for (std::size_t i = 0; i < bytes && diff.empty(); ++i) {
        if (b_[i] != kSentinel) diff = "non-root output was written at byte " + std::to_string(i);
      }
    }
    return diff.empty()
               ? diff
               : where("reduce " + std::string(reduceOpName(op)), type, count, inPlace, diff);
  }

  std::string reduceScatter(DataType type, ReduceOp op, std::size_t count, bool inPlace) {
    const std::size_t bytes = count * dataTypeSize(type);
    const std::size_t total = bytes * static_cast<std::size_t>(size());
    clear();
    std::byte* in = inPlace ? b_ : a_;
    std::byte* out = inPlace ? b_ + static_cast<std::size_t>(rank()) * bytes : b_;
    fillPattern(span(in, total), type, op, rank(), 0);
    if (auto s = comm_.reduceScatter(in, out, count, type, op); !s) {
      return where("reduceScatter", type, count, inPlace, s.error().message);
    }
    const std::size_t first = static_cast<std::size_t>(rank()) * count;
    auto diff = compareElements(span(out, bytes), type, [&](std::size_t i) {
      return expectedReduction(size(), first + i, type, op);
    });
    return diff.empty() ? diff
                        : where("reduceScatter " + std::string(reduceOpName(op)), type, count,
                                inPlace, diff);
  }

  std::string allGather(DataType type, std::size_t count, bool inPlace) {
    const std::size_t bytes = count * dataTypeSize(type);
    clear();
    std::byte* in = inPlace ? b_ + static_cast<std::size_t>(rank()) * bytes : a_;
    fillPattern(span(in, bytes), type, ReduceOp::kSum, rank(), 0);
    if (auto s = comm_.allGather(in, b_, count, type); !s) {
      return where("allGather", type, count, inPlace, s.error().message);
    }
    for (int p = 0; p < size(); ++p) {
      auto diff =
          compareElements(span(b_ + static_cast<std::size_t>(p) * bytes, bytes), type,
                          [&](std::size_t i) { return patternValue(p, i, type, ReduceOp::kSum); });
      if (!diff.empty()) {
        return where("allGather", type, count, inPlace,
                     "block from rank " + std::to_string(p) + ": " + diff);
      }
    }
    return {};
  }

  std::string allToAll(DataType type, std::size_t count, bool inPlace) {
    const std::size_t bytes = count * dataTypeSize(type);
    const std::size_t total = bytes * static_cast<std::size_t>(size());
    clear();
    std::byte* in = inPlace ? b_ : a_;
    fillPattern(span(in, total), type, ReduceOp::kSum, rank(), 0);
    if (auto s = comm_.allToAll(in, b_, count, type); !s) {
      return where("allToAll", type, count, inPlace, s.error().message);
    }
    for (int p = 0; p < size(); ++p) {
      const std::size_t first = static_cast<std::size_t>(rank()) * count;
      auto diff = compareElements(
          span(b_ + static_cast<std::size_t>(p) * bytes, bytes), type,
          [&](std::size_t i) { return patternValue(p, first + i, type, ReduceOp::kSum); });
      if (!diff.empty()) {
        return where("allToAll", type, count, inPlace,
                     "block from rank " + std::to_string(p) + ": " + diff);
      }
    }
    return {};
  }

  std::string broadcast(DataType type, std::size_t count, bool inPlace) {
    const std::size_t bytes = count * dataTypeSize(type);
    const int root = static_cast<int>((count / 2) % static_cast<std::size_t>(size()));
    clear();
    std::byte* in = inPlace ? b_ : a_;
    if (rank() == root) fillPattern(span(in, bytes), type, ReduceOp::kSum, rank(), 0);
    if (auto s = comm_.broadcast(in, b_, count, type, root); !s) {
      return where("broadcast", type, count, inPlace, s.error().message);
    }
    auto diff = compareElements(span(b_, bytes), type, [&](std::size_t i) {
      return patternValue(root, i, type, ReduceOp::kSum);
    });
    return diff.empty() ? diff : where("broadcast", type, count, inPlace, diff);
  }

  // 0 -> 1 -> ... -> size-1 -> 0; rank 0 sends first, the others receive first.
  std::string sendRecvRing() {
    if (size() == 1) return {};
    for (std::size_t count : kCounts) {
      const std::size_t bytes = count * 4;
      clear();
      fillPattern(span(a_, bytes), DataType::kI32, ReduceOp::kSum, rank(), 7);
      const int next = (rank() + 1) % size();
      const int prev = (rank() + size() - 1) % size();
      Result<void> first = rank() == 0 ? comm_.send(a_, count, DataType::kI32, next)
                                       : comm_.recv(b_, count, DataType::kI32, prev);
      if (!first) return where("send/recv", DataType::kI32, count, false, first.error().message);
      Result<void> second = rank() == 0 ? comm_.recv(b_, count, DataType::kI32, prev)
                                        : comm_.send(a_, count, DataType::kI32, next);
      if (!second) return where("send/recv", DataType::kI32, count, false, second.error().message);
      auto diff = compareElements(span(b_, bytes), DataType::kI32, [&](std::size_t i) {
        return patternValue(prev, 7 + i, DataType::kI32, ReduceOp::kSum);
      });
      if (!diff.empty()) return where("send/recv", DataType::kI32, count, false, diff);
    }
    return {};
  }

  // Every rank sends to rank+1 and receives from rank-1 in one call: the ring step of Neuron's
  // Permute. With one rank both halves are skipped.
  std::string permuteRing() {
    for (std::size_t count : kCounts) {
      const std::size_t bytes = count * 4;
      clear();
      fillPattern(span(a_, bytes), DataType::kI32, ReduceOp::kSum, rank(), 3);
      const int next = size() == 1 ? -1 : (rank() + 1) % size();
      const int prev = size() == 1 ? -1 : (rank() + size() - 1) % size();
      if (auto s = comm_.permute(a_, b_, count, DataType::kI32, next, prev); !s) {
        return where("permute", DataType::kI32, count, false, s.error().message);
      }
      if (prev < 0) continue;
      auto diff = compareElements(span(b_, bytes), DataType::kI32, [&](std::size_t i) {
        return patternValue(prev, 3 + i, DataType::kI32, ReduceOp::kSum);
      });
      if (!diff.empty()) return where("permute", DataType::kI32, count, false, diff);
    }
    return {};
  }

  Communicator& comm_;
  bool runtime_;
  std::size_t regionBytes_ = 0;
  Buffer owned_;
  std::vector<std::byte> user_;
  std::byte* a_ = nullptr;
  std::byte* b_ = nullptr;
};

std::string runSweep(CommOptions options) {
  auto comm = Communicator::create(std::move(options));
  if (!comm) return "create: " + comm.error().message;
  for (bool runtime : {true, false}) {
    Sweep sweep(**comm, runtime);
    if (auto status = sweep.prepare(); !status) return "prepare: " + status.error().message;
    if (auto failure = sweep.run(); !failure.empty()) return failure;
  }
  return {};
}

class ShmSweep : public ::testing::TestWithParam<int> {};

TEST_P(ShmSweep, EveryOpTypeReductionAndSizeMatchesTheReference) {
  LaunchOptions options;
  options.size = GetParam();
  options.commTimeout = std::chrono::milliseconds(20000);
  options.deadline = std::chrono::milliseconds(100000);
  const auto outcomes = launchRanks(options, runSweep);
  EXPECT_EQ(summarizeFailures(outcomes), "");
  EXPECT_EQ(testing::torusShmNamesOf(outcomes[0].pid), std::vector<std::string>{})
      << "shared-memory names left behind";
}

// TORUS_COLL_ALGO=direct: the small sizes take the direct path too.
TEST(ShmSweepDirect, SmallCollectivesWithoutTheSlotPathMatchTheReference) {
  LaunchOptions options;
  options.size = 3;
  options.commTimeout = std::chrono::milliseconds(20000);
  const auto outcomes = launchRanks(options, [](CommOptions commOptions) {
    commOptions.algorithm = Algorithm::kDirect;
    return runSweep(std::move(commOptions));
  });
  EXPECT_EQ(summarizeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShmSweep, ::testing::Range(1, 9),
                         [](const auto& param) { return std::to_string(param.param) + "ranks"; });

// Every rank over libfabric (tcp;ofi_rxm on loopback), as if each were on its own host.
class OfiSweep : public ::testing::TestWithParam<int> {};

TEST_P(OfiSweep, EveryOpTypeReductionAndSizeMatchesTheReference) {
  LaunchOptions options;
  options.size = GetParam();
  options.commTimeout = std::chrono::milliseconds(20000);
  options.deadline = std::chrono::milliseconds(110000);
  const auto outcomes = launchRanks(options, [](CommOptions commOptions) {
    commOptions.transport = Transport::kOfi;
    return runSweep(std::move(commOptions));
  });
  EXPECT_EQ(summarizeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, OfiSweep, ::testing::Range(1, 9),
                         [](const auto& param) { return std::to_string(param.param) + "ranks"; });

// rxm's own eager/rendezvous protocol, which the endpoint uses when the operator turns rxm's
// pass-through off (and which needs the endpoint's warm-up), on an odd number of ranks.
TEST(OfiSweepRxmProtocol, EveryOpTypeReductionAndSizeMatchesTheReference) {
  LaunchOptions options;
  options.size = 3;
  options.commTimeout = std::chrono::milliseconds(20000);
  options.deadline = std::chrono::milliseconds(110000);
  const auto outcomes = launchRanks(options, [](CommOptions commOptions) {
    ::setenv("FI_OFI_RXM_ENABLE_PASSTHRU", "0", 1);
    commOptions.transport = Transport::kOfi;
    return runSweep(std::move(commOptions));
  });
  EXPECT_EQ(summarizeFailures(outcomes), "");
}

// With registration forced on (what efa needs), runtime tensors and the algorithms' scratch are
// registered once and every transfer inside them reuses that; user buffers register per
// transfer. Results stay right either way.
TEST(OfiRegistration, TensorsAreRegisteredOnceAndUserBuffersPerTransfer) {
  LaunchOptions options;
  options.size = 2;
  options.commTimeout = std::chrono::milliseconds(20000);
  const auto outcomes = launchRanks(options, [](CommOptions commOptions) -> std::string {
    commOptions.transport = Transport::kOfi;
    commOptions.ofiRegisterAlways = true;
    auto comm = Communicator::create(std::move(commOptions));
    if (!comm) return "create: " + comm.error().message;
    constexpr std::size_t kCount = 64 * 1024;
    auto tensor = (*comm)->allocate(kCount * sizeof(float));
    if (!tensor) return "allocate: " + tensor.error().message;
    for (float& x : tensor->as<float>())
      x = 1.0F;
    const RegistrationCounts before = (*comm)->registrationCounts();
    for (int i = 0; i < 10; ++i) {
      auto status = (*comm)->allReduce(tensor->data(), tensor->data(), kCount, DataType::kF32,
                                       ReduceOp::kSum);
      if (!status) return "allReduce on a tensor: " + status.error().message;
    }
    const RegistrationCounts tensors = (*comm)->registrationCounts();
    if (tensor->as<float>()[kCount - 1] != 1024.0F) return "tensor sum is wrong";
    if (tensors.perTransfer != before.perTransfer) {
      return "tensor transfers registered themselves " +
             std::to_string(tensors.perTransfer - before.perTransfer) + " times";
    }
    if (tensors.regionHits < before.regionHits + 10) return "tensor transfers missed the region";
    std::vector<float> user(kCount, 2.0F);
    if (auto status =
            (*comm)->allReduce(user.data(), user.data(), kCount, DataType::kF32, ReduceOp::kSum);
        !status) {
      return "allReduce on a user buffer: " + status.error().message;
    }
    if (user[kCount - 1] != 4.0F) return "user buffer sum is wrong";
    if ((*comm)->registrationCounts().perTransfer == tensors.perTransfer) {
      return "a user buffer's transfers used no registration of their own";
    }
    return "";
  });
  EXPECT_EQ(summarizeFailures(outcomes), "");
}

// Ranks grouped into "hosts" by TORUS_COLL_HOST_ID: shared memory inside each, libfabric between.
struct HostsCase {
  const char* name;
  std::vector<int> hostOfRank;
  Algorithm algorithm = Algorithm::kAuto;
};

class MultiHostSweep : public ::testing::TestWithParam<HostsCase> {};

TEST_P(MultiHostSweep, EveryOpTypeReductionAndSizeMatchesTheReference) {
  const HostsCase& hosts = GetParam();
  LaunchOptions options;
  options.size = static_cast<int>(hosts.hostOfRank.size());
  options.commTimeout = std::chrono::milliseconds(20000);
  options.deadline = std::chrono::milliseconds(110000);
  const auto outcomes = launchRanks(options, [&](CommOptions commOptions) {
    commOptions.hostId =
        "host" + std::to_string(hosts.hostOfRank[static_cast<std::size_t>(commOptions.rank)]);
    commOptions.algorithm = hosts.algorithm;
    return runSweep(std::move(commOptions));
  });
  EXPECT_EQ(summarizeFailures(outcomes), "");
  EXPECT_EQ(testing::torusShmNamesOf(outcomes[0].pid), std::vector<std::string>{})
      << "shared-memory names left behind";
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, MultiHostSweep,
    ::testing::Values(HostsCase{"TwoHostsOfTwo", {0, 0, 1, 1}},
                      HostsCase{"TwoHostsOfTwoInterleaved", {0, 1, 0, 1}},
                      HostsCase{"ThreeHostsOfTwo", {0, 0, 1, 1, 2, 2}},
                      HostsCase{"UnevenHosts", {0, 0, 1}},
                      HostsCase{"TwoHostsOfTwoFlat", {0, 0, 1, 1}, Algorithm::kFlat},
                      HostsCase{"TwoHostsOfTwoRing", {0, 0, 1, 1}, Algorithm::kRing}),
    [](const auto& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace torus::coll

namespace torus::coll {
namespace {

// Shares of 1 MiB and more take the non-temporal store path; check it at aligned and odd
// offsets (the streaming loop needs a 16-byte aligned destination and handles head and tail).
std::string runLargeAllReduce(CommOptions options) {
  auto comm = Communicator::create(std::move(options));
  if (!comm) return "create: " + comm.error().message;
  constexpr std::size_t kCount = 1000003;  // prime
  for (DataType type : {DataType::kF32, DataType::kF64, DataType::kI32}) {
    const std::size_t elem = dataTypeSize(type);
    for (bool runtime : {true, false}) {
      for (std::size_t offset : {std::size_t{0}, elem}) {
        for (bool inPlace : {false, true}) {
          const std::size_t bytes = kCount * elem;
          Buffer tensor;
          std::vector<std::byte> heap;
          std::byte* base = nullptr;
          if (runtime) {
            auto allocated = (*comm)->allocate(2 * bytes + 64);
            if (!allocated) return "allocate: " + allocated.error().message;
            tensor = std::move(*allocated);
            base = tensor.data();
          } else {
            heap.resize(2 * bytes + 64);
            base = heap.data();
          }
          std::byte* in = base + offset;
          std::byte* out = inPlace ? in : base + bytes + 32 + offset;
          fillPattern({in, bytes}, type, ReduceOp::kSum, (*comm)->rank(), 0);
          if (auto s = (*comm)->allReduce(in, out, kCount, type, ReduceOp::kSum); !s) {
            return s.error().message;
          }
          auto diff = compareElements({out, bytes}, type, [&](std::size_t i) {
            return expectedReduction((*comm)->size(), i, type, ReduceOp::kSum);
          });
          if (!diff.empty()) {
            return std::string(dataTypeName(type)) + (runtime ? " runtime" : " user") +
                   " offset=" + std::to_string(offset) + (inPlace ? " in-place: " : ": ") + diff;
          }
        }
      }
    }
  }
  return {};
}

// Blocks of 1 MiB and more are copied with streaming stores too (AllGather, AllToAll,
// Broadcast), at an odd offset so the head and tail paths run.
std::string runLargeCopies(CommOptions options) {
  auto comm = Communicator::create(std::move(options));
  if (!comm) return "create: " + comm.error().message;
  const int rank = (*comm)->rank();
  const auto n = static_cast<std::size_t>((*comm)->size());
  constexpr std::size_t kCount = 300007;  // 1.2 MB of f32 per block
  constexpr DataType kType = DataType::kF32;
  const std::size_t block = kCount * 4;
  auto tensor = (*comm)->allocate(2 * n * block + 64);
  if (!tensor) return "allocate: " + tensor.error().message;
  std::byte* in = tensor->data() + 4;
  std::byte* out = tensor->data() + n * block + 8;
  const auto patternOf = [](int r, std::size_t first) {
    return [r, first](std::size_t i) { return patternValue(r, first + i, kType, ReduceOp::kSum); };
  };

  fillPattern({in, block}, kType, ReduceOp::kSum, rank, 0);
  if (auto s = (*comm)->allGather(in, out, kCount, kType); !s) return s.error().message;
  for (std::size_t p = 0; p < n; ++p) {
    auto diff = compareElements({out + p * block, block}, kType, patternOf(static_cast<int>(p), 0));
    if (!diff.empty()) return "allGather block " + std::to_string(p) + ": " + diff;
  }

  fillPattern({in, n * block}, kType, ReduceOp::kSum, rank, 0);
  if (auto s = (*comm)->allToAll(in, out, kCount, kType); !s) return s.error().message;
  for (std::size_t p = 0; p < n; ++p) {
    auto diff =
        compareElements({out + p * block, block}, kType,
                        patternOf(static_cast<int>(p), static_cast<std::size_t>(rank) * kCount));
    if (!diff.empty()) return "allToAll block " + std::to_string(p) + ": " + diff;
  }

  const int root = static_cast<int>(n) - 1;
  fillPattern({in, block}, kType, ReduceOp::kSum, rank, 0);
  if (auto s = (*comm)->broadcast(in, out, kCount, kType, root); !s) return s.error().message;
  if (auto diff = compareElements({out, block}, kType, patternOf(root, 0)); !diff.empty()) {
    return "broadcast: " + diff;
  }
  return {};
}

TEST(LargeCopies, StreamingStoresGiveTheReferenceResult) {
  for (int size : {2, 3}) {
    LaunchOptions options;
    options.size = size;
    options.commTimeout = std::chrono::milliseconds(20000);
    EXPECT_EQ(summarizeFailures(launchRanks(options, runLargeCopies)), "") << size << " ranks";
  }
}

class LargeAllReduce : public ::testing::TestWithParam<int> {};

TEST_P(LargeAllReduce, StreamingStoresGiveTheReferenceResult) {
  LaunchOptions options;
  options.size = GetParam();
  options.commTimeout = std::chrono::milliseconds(20000);
  const auto outcomes = launchRanks(options, runLargeAllReduce);
  EXPECT_EQ(summarizeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, LargeAllReduce, ::testing::Values(2, 3),
                         [](const auto& param) { return std::to_string(param.param) + "ranks"; });

// Runs `body` on `ranks` ranks that all use libfabric and the given algorithm; the failures.
std::string runOverOfi(int ranks, Algorithm algorithm, std::string (*body)(CommOptions)) {
  LaunchOptions options;
  options.size = ranks;
  options.commTimeout = std::chrono::milliseconds(20000);
  options.deadline = std::chrono::milliseconds(110000);
  return summarizeFailures(launchRanks(options, [algorithm, body](CommOptions commOptions) {
    commOptions.transport = Transport::kOfi;
    commOptions.algorithm = algorithm;
    return body(std::move(commOptions));
  }));
}

// Recursive doubling forced over libfabric on multi-megabyte buffers, in and out of place: 3
// ranks fold in and out, 4 run two doubling rounds on the partial result.
class LargeDoubling : public ::testing::TestWithParam<int> {};

TEST_P(LargeDoubling, SlicedExchangesGiveTheReferenceResult) {
  EXPECT_EQ(runOverOfi(GetParam(), Algorithm::kRecursiveDoubling, runLargeAllReduce), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, LargeDoubling, ::testing::Values(2, 3, 4),
                         [](const auto& param) { return std::to_string(param.param) + "ranks"; });

// The ring over libfabric on chunks of several slices (a quarter of a chunk, 256 KiB to 1 MiB),
// each reduced as it lands: chunks of 4 MiB and 4 MiB + 4 B (1 MiB slices) give steps with
// unequal slice counts (4 and 5), in and out of place, for AllReduce,
// ReduceScatter (partial sums alternate between two scratch areas) and AllGather.
std::string runLargeRing(CommOptions options) {
  auto comm = Communicator::create(std::move(options));
  if (!comm) return "create: " + comm.error().message;
  const int rank = (*comm)->rank();
  const auto n = static_cast<std::size_t>((*comm)->size());
  constexpr std::size_t kSliceElements = (std::size_t{1} << 20) / 4;
  const std::size_t reduceCount = n * 4 * kSliceElements + 1;
  const std::size_t blockCount = 4 * kSliceElements + 1;
  std::vector<std::byte> a(std::max(reduceCount, n * blockCount) * 4);
  std::vector<std::byte> b(a.size());
  const std::pair<DataType, ReduceOp> cases[] = {{DataType::kF32, ReduceOp::kSum},
                                                 {DataType::kI32, ReduceOp::kMax}};
  for (const auto& testCase : cases) {
    // Plain names, not a structured binding: clang 14 cannot capture bindings in the lambdas.
    const DataType type = testCase.first;
    const ReduceOp op = testCase.second;
    for (bool inPlace : {false, true}) {
      const std::string where = std::string(dataTypeName(type)) + " " +
                                std::string(reduceOpName(op)) +
                                (inPlace ? " in-place" : " out-of-place") + ": ";
      std::byte* in = inPlace ? b.data() : a.data();
      fillPattern({in, reduceCount * 4}, type, op, rank, 0);
      if (auto s = (*comm)->allReduce(in, b.data(), reduceCount, type, op); !s) {
        return "allReduce " + where + s.error().message;
      }
      auto diff = compareElements({b.data(), reduceCount * 4}, type, [&](std::size_t i) {
        return expectedReduction(static_cast<int>(n), i, type, op);
      });
      if (!diff.empty()) return "allReduce " + where + diff;

      const std::size_t blockBytes = blockCount * 4;
      std::byte* mine = b.data() + static_cast<std::size_t>(rank) * blockBytes;
      fillPattern({in, n * blockBytes}, type, op, rank, 0);
      std::byte* out = inPlace ? mine : b.data();
      if (auto s = (*comm)->reduceScatter(in, out, blockCount, type, op); !s) {
        return "reduceScatter " + where + s.error().message;
      }
      const std::size_t first = static_cast<std::size_t>(rank) * blockCount;
      diff = compareElements({out, blockBytes}, type, [&](std::size_t i) {
        return expectedReduction(static_cast<int>(n), first + i, type, op);
      });
      if (!diff.empty()) return "reduceScatter " + where + diff;

      std::byte* block = inPlace ? mine : a.data();
      fillPattern({block, blockBytes}, type, ReduceOp::kSum, rank, 0);
      if (auto s = (*comm)->allGather(block, b.data(), blockCount, type); !s) {
        return "allGather " + where + s.error().message;
      }
      for (std::size_t p = 0; p < n; ++p) {
        diff = compareElements({b.data() + p * blockBytes, blockBytes}, type, [&](std::size_t i) {
          return patternValue(static_cast<int>(p), i, type, ReduceOp::kSum);
        });
        if (!diff.empty()) return "allGather " + where + "block " + std::to_string(p) + ": " + diff;
      }
    }
  }
  return {};
}

class LargeRing : public ::testing::TestWithParam<int> {};

TEST_P(LargeRing, SlicedStepsGiveTheReferenceResult) {
  EXPECT_EQ(runOverOfi(GetParam(), Algorithm::kRing, runLargeRing), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, LargeRing, ::testing::Values(2, 4, 5),
                         [](const auto& param) { return std::to_string(param.param) + "ranks"; });

}  // namespace
}  // namespace torus::coll
