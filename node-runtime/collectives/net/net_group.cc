// NetGroup's plumbing: tags, posting a set of transfers and waiting for them with a deadline and
// a liveness check, and the point-to-point calls. The collectives themselves are in
// net_algorithms.cc.
#include "node-runtime/collectives/net/net_group.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include <sched.h>

#include "common/base/log.h"
#include "common/base/spin.h"

namespace torus::coll {
namespace {

constexpr std::uint32_t kMessageBits = 12;
constexpr std::uint32_t kSequenceBits = 16;
constexpr std::uint32_t kRankBits = 16;
constexpr std::uint16_t kPointToPointGroupBit = 0x8000;
constexpr auto kLivenessCheckEvery = std::chrono::milliseconds(2);

// Cost model constants, measured on libfabric tcp over loopback (docs/algorithms.md): per-message
// latency, wire bandwidth and reduction bandwidth.
constexpr double kLatencySeconds = 15e-6;
constexpr double kWireBytesPerSecond = 2e9;
constexpr double kReduceBytesPerSecond = 8e9;

}  // namespace

NetAllReduce chooseNetAllReduce(int ranks, std::size_t bytes) {
  if (ranks <= 1) return NetAllReduce::kRing;
  const double n = ranks;
  const double b = static_cast<double>(bytes);
  const double rounds = std::ceil(std::log2(n)) + ((ranks & (ranks - 1)) != 0 ? 2 : 0);
  const double ring = 2 * (n - 1) * kLatencySeconds + 2 * (n - 1) / n * b / kWireBytesPerSecond;
  const double doubling =
      rounds * kLatencySeconds + rounds * (b / kWireBytesPerSecond + b / kReduceBytesPerSecond);
  return doubling <= ring ? NetAllReduce::kRecursiveDoubling : NetAllReduce::kRing;
}

NetGroup::NetGroup(std::shared_ptr<OfiEndpoint> endpoint, std::vector<int> members,
                   std::vector<int> labels, int myRank, std::uint16_t groupId, bool spin,
                   NetAllReduce allReduce)
    : endpoint_(std::move(endpoint)),
      members_(std::move(members)),
      labels_(std::move(labels)),
      rank_(myRank),
      groupId_(groupId),
      spin_(spin),
      allReduce_(allReduce) {}

std::uint64_t NetGroup::tagOf(const Transfer& transfer, int senderRank) const {
  const std::uint64_t group = transfer.pointToPoint ? (groupId_ | kPointToPointGroupBit) : groupId_;
  const auto sender = static_cast<std::uint64_t>(members_[static_cast<std::size_t>(senderRank)]);
  const std::uint64_t sequence = transfer.sequence & ((1U << kSequenceBits) - 1);
  return (group << (kRankBits + kSequenceBits + kMessageBits)) |
         (sender << (kSequenceBits + kMessageBits)) | (sequence << kMessageBits) |
         (transfer.message & ((1U << kMessageBits) - 1));
}

std::string NetGroup::label(int groupRank) const {
  return std::to_string(labels_[static_cast<std::size_t>(groupRank)]);
}

std::size_t NetGroup::sliceBytes(std::size_t chunkBytes, std::size_t messagesPerSlice) const {
  // A chunk travels in up to four slices, so the reduction of one runs while the next are on the
  // wire: on loopback TCP a 2-rank 1 MiB AllReduce moves ~1.4x as much in two 256 KiB slices as in
  // one 512 KiB message (docs/benchmarks.md). Slices stay between 256 KiB, below which the
  // per-message cost shows (128 KiB slices lose ~20 % at 64 MiB), and 1 MiB, which reaches the
  // provider's full bandwidth.
  constexpr std::size_t kSmallest = std::size_t{256} << 10;
  constexpr std::size_t kLargest = std::size_t{1} << 20;
  const std::size_t preferred = std::clamp(chunkBytes / 4, kSmallest, kLargest);
  constexpr std::size_t kBudget = (std::size_t{1} << kMessageBits) - 1;
  const std::size_t slicesAllowed = std::max<std::size_t>(1, kBudget / messagesPerSlice);
  std::size_t slice = std::max(preferred, (chunkBytes + slicesAllowed - 1) / slicesAllowed);
  slice = std::min(slice, std::max<std::size_t>(endpoint_->maxMessageBytes(), 4096));
  return (slice + 63) & ~std::size_t{63};
}

std::byte* NetGroup::scratch(std::size_t bytes) {
  if (scratch_.size() < bytes) {
    scratchRegistration_.reset();
    scratch_.resize(bytes);
    // Registered once per growth; should it fail, transfers register themselves one by one.
    auto registration = endpoint_->registerRegion(scratch_.data(), scratch_.size());
    if (registration) {
      scratchRegistration_ = std::move(*registration);
    } else {
      TORUS_LOG(Warn, Ofi, "scratch buffer not registered", {"bytes", scratch_.size()},
                {"error", registration.error().message});
    }
  }
  return scratch_.data();
}

Error NetGroup::waitError(const GroupCall& call, std::span<const Transfer> transfers,
                          const std::vector<bool>& finished, std::string_view why) const {
  std::vector<int> silent;  // receives not matched: these ranks never sent
  std::vector<int> deaf;    // sends not taken
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    if (finished[i]) continue;
    auto& list = transfers[i].isSend ? deaf : silent;
    if (std::find(list.begin(), list.end(), transfers[i].peer) == list.end()) {
      list.push_back(transfers[i].peer);
    }
  }
  const auto names = [&](const std::vector<int>& ranks) {
    std::string text = ranks.size() == 1 ? "rank " : "ranks ";
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      text += (i > 0 ? ", " : "") + label(ranks[i]);
    }
    return text;
  };
  std::string message = call.what() + ": " + stage_ + ": ";
  if (!silent.empty()) {
    message += "nothing from " + names(silent);
  } else {
    message += names(deaf) + " did not take what this rank sent";
  }
  message += " ";
  message += why;
  return makeError(ErrorCode::kDeadlineExceeded, std::move(message));
}

Result<void> NetGroup::checkStop(const GroupCall& call, Clock::time_point now,
                                 Clock::time_point& nextLivenessCheck) {
  if (now >= call.deadline) {
    return makeError(ErrorCode::kDeadlineExceeded,
                     call.what() + ": " + stage_ + ": the provider took no message in " +
                         std::to_string(call.timeout.count()) + " ms");
  }
  if (!trouble_ || now < nextLivenessCheck) return okResult();
  nextLivenessCheck = now + kLivenessCheckEvery;
  const std::optional<std::string> trouble = trouble_();
  if (!trouble) return okResult();
  return makeError(ErrorCode::kUnavailable, call.what() + ": " + stage_ + ": " + *trouble);
}

Result<void> NetGroup::run(const GroupCall& call, std::span<const Transfer> transfers,
                           FunctionRef<void(std::size_t)> onReceived) {
  while (ops_.size() < transfers.size())
    ops_.push_back(std::make_unique<NetOp>());
  // Receives first, so data that arrives finds its buffer instead of the unexpected queue. A
  // full provider queue is retried, bounded like every wait: a peer that died with our messages
  // queued for it must not keep this rank here.
  auto nextLivenessCheck = Clock::now() + kLivenessCheckEvery;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < transfers.size(); ++i) {
      const Transfer& t = transfers[i];
      if (t.isSend != (pass == 1)) continue;
      const int peer = members_[static_cast<std::size_t>(t.peer)];
      while (true) {
        const auto posted =
            t.isSend ? endpoint_->postSend(peer, t.data, t.bytes, tagOf(t, rank_), *ops_[i])
                     : endpoint_->postRecv(peer, t.data, t.bytes, tagOf(t, t.peer), *ops_[i]);
        if (posted) break;
        if (posted.error().code != ErrorCode::kResourceExhausted) {
          // What was posted already still refers to our buffers: the communicator is broken
          // from here on and never reuses them for another transfer.
          return posted.error().withContext(call.what() + ": " + stage_);
        }
        if (auto stop = checkStop(call, Clock::now(), nextLivenessCheck); !stop) return stop;
        ::sched_yield();
      }
    }
  }

  std::vector<bool> finished(transfers.size(), false);
  std::size_t remaining = transfers.size();
  std::uint64_t idle = 0;
  while (remaining > 0) {
    TORUS_RETURN_IF_ERROR(endpoint_->progress(), call.what());
    bool progressed = false;
    for (std::size_t i = 0; i < transfers.size(); ++i) {
      if (finished[i]) continue;
      const NetOp::State state = ops_[i]->current();
      if (state == NetOp::State::kPending) continue;
      if (state == NetOp::State::kFailed) {
        return makeError(ErrorCode::kUnavailable,
                         call.what() + ": " + stage_ + ": " +
                             (transfers[i].isSend ? "sending to rank " : "receiving from rank ") +
                             label(transfers[i].peer) + " failed: " + ops_[i]->error);
      }
      finished[i] = true;
      --remaining;
      progressed = true;
      if (!transfers[i].isSend) onReceived(i);
    }
    if (remaining == 0) break;
    if (progressed) {
      idle = 0;
      continue;
    }
    ++idle;
    // Spin briefly while the peer is likely a few microseconds away, then yield, then sleep:
    // a rank that waits long (or shares its core) must not starve the one it waits for.
    if (spin_ && idle < 4096) {
      cpuRelax();
      continue;
    }
    const auto now = Clock::now();
    if (now >= call.deadline) {
      return waitError(call, transfers, finished,
                       "in " + std::to_string(call.timeout.count()) + " ms");
    }
    if (auto stop = checkStop(call, now, nextLivenessCheck); !stop) return stop;
    if (idle < 20000) {
      ::sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return okResult();
}

Result<void> NetGroup::permute(const GroupCall& call, const void* send, void* recv,
                               std::size_t bytes, int sendTo, int recvFrom,
                               std::uint64_t sendMessage, std::uint64_t recvMessage) {
  const std::size_t slice = sliceBytes(bytes, 1);
  transfers_.clear();
  const auto addSlices = [&](bool isSend, int peer, std::byte* data, std::uint64_t message) {
    if (peer < 0) return;
    std::uint32_t k = 0;
    std::size_t offset = 0;
    do {  // a zero-byte message still travels, so the receiver knows it was sent
      const std::size_t n = std::min(slice, bytes - offset);
      transfers_.push_back({isSend, peer, data + offset, n, k++, message, true});
      offset += n;
    } while (offset < bytes);
  };
  stage_ = "point to point";
  addSlices(true, sendTo, const_cast<std::byte*>(static_cast<const std::byte*>(send)), sendMessage);
  addSlices(false, recvFrom, static_cast<std::byte*>(recv), recvMessage);
  return runPlain(call, transfers_);
}

Result<void> NetGroup::barrier(const GroupCall& call) {
  // Dissemination: in round k every rank tells rank+2^k and hears from rank-2^k; after
  // ceil(log2 n) rounds everyone has heard, indirectly, from everyone.
  const int n = size();
  std::uint32_t round = 0;
  for (int distance = 1; distance < n; distance *= 2, ++round) {
    transfers_.clear();
    transfers_.push_back({true, (rank_ + distance) % n, nullptr, 0, round, call.sequence, false});
    transfers_.push_back(
        {false, (rank_ - distance + n) % n, nullptr, 0, round, call.sequence, false});
    stage_ = "dissemination barrier";
    if (auto status = runPlain(call, transfers_); !status) return status;
  }
  return okResult();
}

}  // namespace torus::coll
