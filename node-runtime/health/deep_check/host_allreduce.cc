#include "node-runtime/health/deep_check/host_allreduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>

#include "node-runtime/collectives/bootstrap/bootstrap.h"
#include "node-runtime/collectives/communicator.h"

namespace torus::health {
namespace {

using Clock = std::chrono::steady_clock;
using coll::DataType;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// What one rank thread found; merged by exerciseLinks after every thread has joined.
struct RankOutcome {
  std::optional<double> seconds;
  std::string problem;
};

class RankRun {
 public:
  RankRun(coll::Communicator& comm, std::span<const int> ring, const HostAllReduceOptions& options,
          RankOutcome& out)
      : comm_(comm), ring_(ring), options_(options), out_(out) {}

  Result<void> run() { return ringAllReduce(); }

 private:
  std::string deviceName(int rank) const {
    return "neuron" + std::to_string(ring_[static_cast<std::size_t>(rank)]);
  }

  // One ring step: send `sendChunk` to the next rank, receive into `recvInto` from the previous.
  // Even ranks send first and odd ranks receive first, so blocking sends cannot wait in a circle.
  Result<void> step(const std::uint64_t* sendChunk, std::uint64_t* recvInto, std::size_t words) {
    const int size = comm_.size();
    const int next = (comm_.rank() + 1) % size;
    const int previous = (comm_.rank() + size - 1) % size;
    const std::size_t bytes = words * sizeof(std::uint64_t);
    if (comm_.rank() % 2 == 0) {
      TORUS_RETURN_IF_ERROR(comm_.send(sendChunk, bytes, DataType::kU8, next),
                            "to " + deviceName(next));
      TORUS_RETURN_IF_ERROR(comm_.recv(recvInto, bytes, DataType::kU8, previous),
                            "from " + deviceName(previous));
      return okResult();
    }
    TORUS_RETURN_IF_ERROR(comm_.recv(recvInto, bytes, DataType::kU8, previous),
                          "from " + deviceName(previous));
    TORUS_RETURN_IF_ERROR(comm_.send(sendChunk, bytes, DataType::kU8, next),
                          "to " + deviceName(next));
    return okResult();
  }

  Result<void> ringAllReduce() {
    const auto size = static_cast<std::size_t>(comm_.size());
    const std::size_t chunkWords =
        std::max<std::size_t>(1, options_.bytes / sizeof(std::uint64_t) / size);
    const std::size_t words = chunkWords * size;
    auto data = comm_.allocate(words * sizeof(std::uint64_t));
    if (!data) return std::move(data).error();
    auto incoming = comm_.allocate(chunkWords * sizeof(std::uint64_t));
    if (!incoming) return std::move(incoming).error();
    std::span<std::uint64_t> mine = data->as<std::uint64_t>();
    std::span<std::uint64_t> scratch = incoming->as<std::uint64_t>();
    const std::uint64_t contribution = static_cast<std::uint64_t>(comm_.rank()) + 1;
    for (std::size_t i = 0; i < words; ++i)
      mine[i] = contribution * (i + 1);
    const auto chunk = [&](std::size_t c) { return mine.data() + (c % size) * chunkWords; };
    const std::size_t rank = static_cast<std::size_t>(comm_.rank());

    TORUS_RETURN_IF_ERROR(comm_.barrier(), "before the AllReduce ring");
    const auto start = Clock::now();
    for (std::size_t s = 0; s + 1 < size; ++s) {  // reduce-scatter
      TORUS_RETURN_IF_ERROR(step(chunk(rank + size - s), scratch.data(), chunkWords),
                            "AllReduce ring, reduce-scatter step " + std::to_string(s));
      std::uint64_t* target = chunk(rank + size - s - 1);
      for (std::size_t i = 0; i < chunkWords; ++i)
        target[i] += scratch[i];
    }
    for (std::size_t s = 0; s + 1 < size; ++s) {  // all-gather
      TORUS_RETURN_IF_ERROR(step(chunk(rank + size + 1 - s), chunk(rank + size - s), chunkWords),
                            "AllReduce ring, all-gather step " + std::to_string(s));
    }
    out_.seconds = secondsSince(start);
    const std::uint64_t ranksSum = static_cast<std::uint64_t>(size) * (size + 1) / 2;
    for (std::size_t i = 0; i < words; ++i) {
      if (mine[i] != ranksSum * (i + 1)) {
        return makeError(ErrorCode::kInternal,
                         "AllReduce ring: " + deviceName(comm_.rank()) + " holds " +
                             std::to_string(mine[i]) + " at element " + std::to_string(i) +
                             ", expected " + std::to_string(ranksSum * (i + 1)));
      }
    }
    return okResult();
  }

  coll::Communicator& comm_;
  std::span<const int> ring_;
  const HostAllReduceOptions& options_;
  RankOutcome& out_;
};

}  // namespace

HostAllReduce runHostAllReduce(std::span<const int> ring, const HostAllReduceOptions& options) {
  HostAllReduce result;
  if (ring.size() < 2) return result;

  auto listener = coll::listenOn("127.0.0.1:0");
  if (!listener) {
    result.problem = "deep check communicator: " + listener.error().message;
    return result;
  }
  auto port = coll::boundPort(*listener);
  if (!port) {
    result.problem = "deep check communicator: " + port.error().message;
    return result;
  }
  std::vector<RankOutcome> outcomes(ring.size());
  {
    std::vector<std::jthread> ranks;
    for (std::size_t r = 0; r < ring.size(); ++r) {
      RankOutcome& out = outcomes[r];
      coll::CommOptions comm;
      comm.rank = static_cast<int>(r);
      comm.size = static_cast<int>(ring.size());
      comm.rootAddress = "127.0.0.1:" + std::to_string(*port);
      comm.timeout = options.timeout;
      comm.name = "deep-check";
      if (r == 0) comm.rootListener = std::move(*listener);
      ranks.emplace_back([&, comm = std::move(comm)]() mutable {
        const std::string device =
            "neuron" + std::to_string(ring[static_cast<std::size_t>(comm.rank)]);
        auto created = coll::Communicator::create(std::move(comm));
        if (!created) {
          out.problem = device + ": " + created.error().message;
          return;
        }
        auto done = RankRun(**created, ring, options, out).run();
        if (!done) out.problem = device + ": " + done.error().message;
      });
    }
  }
  for (const RankOutcome& out : outcomes) {
    if (out.seconds) result.seconds = std::max(result.seconds.value_or(0), *out.seconds);
    if (result.problem.empty() && !out.problem.empty()) result.problem = out.problem;
  }
  // A wrong sum or a failure on any rank voids the ring's time.
  if (!result.problem.empty()) result.seconds.reset();
  return result;
}

}  // namespace torus::health
