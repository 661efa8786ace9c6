#include "node-runtime/collectives/bootstrap_link.h"

#include <algorithm>
#include <sstream>

#include <poll.h>

#include "common/base/log.h"
#include "common/base/parse.h"

namespace torus::coll {
namespace {

std::string toHex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2 + 1);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out.empty() ? "-" : out;  // never an empty field
}

Result<std::string> fromHex(std::string_view hex) {
  if (hex == "-") return std::string();
  if (hex.size() % 2 != 0) return makeError(ErrorCode::kInvalidArgument, "odd-length hex blob");
  std::string out(hex.size() / 2, '\0');
  for (std::size_t i = 0; i < out.size(); ++i) {
    int value = 0;
    for (int k = 0; k < 2; ++k) {
      const char c = hex[2 * i + static_cast<std::size_t>(k)];
      const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (digit < 0) return makeError(ErrorCode::kInvalidArgument, "bad hex digit in blob");
      value = value * 16 + digit;
    }
    out[i] = static_cast<char>(value);
  }
  return out;
}

}  // namespace

BootstrapLink::BootstrapLink(int rank, int size, std::vector<LineSocket> sockets)
    : rank_(rank),
      size_(size),
      sockets_(std::move(sockets)),
      pending_(sockets_.size()),
      departed_(static_cast<std::size_t>(size), false),
      dead_(static_cast<std::size_t>(size), false) {}

BootstrapLink::~BootstrapLink() {
  const auto deadline = Clock::now() + std::chrono::milliseconds(200);
  for (LineSocket& socket : sockets_) {
    if (socket) (void)socket.send("BYE\n", deadline);
  }
}

void BootstrapLink::markDead(int rank) {
  if (dead_[static_cast<std::size_t>(rank)] || departed_[static_cast<std::size_t>(rank)]) return;
  dead_[static_cast<std::size_t>(rank)] = true;
  deadList_.push_back(rank);
  TORUS_LOG(Warn, Coll, "rank gone without a goodbye", {"rank", rank});
  if (rank_ != 0) return;
  const auto deadline = Clock::now() + std::chrono::milliseconds(200);
  for (std::size_t r = 1; r < sockets_.size(); ++r) {
    if (sockets_[r] && !dead_[r] && !departed_[r]) {
      (void)sockets_[r].send("DEAD " + std::to_string(rank) + "\n", deadline);
    }
  }
}

// Reads whatever arrived on every socket: goodbyes and deaths are applied, data lines kept for
// allGather.
void BootstrapLink::pollLocked() {
  for (std::size_t s = 0; s < sockets_.size(); ++s) {
    LineSocket& socket = sockets_[s];
    const int peer = rank_ == 0 ? static_cast<int>(s) : 0;
    while (socket) {
      auto line = socket.pollLine("bootstrap link");
      if (!line) {
        socket.close();
        markDead(peer);
        break;
      }
      if (!line->has_value()) break;
      const std::string& text = **line;
      if (text == "BYE") {
        departed_[static_cast<std::size_t>(peer)] = true;
        socket.close();
      } else if (text.rfind("DEAD ", 0) == 0) {
        if (auto rank = parseInt(std::string_view(text).substr(5), 0, size_ - 1)) markDead(*rank);
      } else {
        pending_[s].push_back(text);
      }
    }
  }
}

std::vector<int> BootstrapLink::deadRanks() {
  std::lock_guard lock(mutex_);
  pollLocked();
  return deadList_;
}

Result<std::string> BootstrapLink::nextDataLine(int from, Deadline deadline) {
  const auto index = static_cast<std::size_t>(rank_ == 0 ? from : 0);
  while (true) {
    pollLocked();
    if (!pending_[index].empty()) {
      std::string line = std::move(pending_[index].front());
      pending_[index].erase(pending_[index].begin());
      return line;
    }
    if (dead_[static_cast<std::size_t>(from)] || !sockets_[index]) {
      return makeError(ErrorCode::kUnavailable,
                       "rank " + std::to_string(from) + " is gone (bootstrap connection closed)");
    }
    if (!deadList_.empty()) {
      return makeError(ErrorCode::kUnavailable,
                       "rank " + std::to_string(deadList_.front()) + " is gone");
    }
    if (Clock::now() >= deadline) {
      return makeError(ErrorCode::kDeadlineExceeded,
                       "nothing from rank " + std::to_string(from) + " before the deadline");
    }
    pollfd pfd{sockets_[index].fd(), POLLIN, 0};
    (void)::poll(&pfd, 1, std::min(millisLeft(deadline), 10));
  }
}

Result<std::vector<std::string>> BootstrapLink::allGather(const std::string& mine,
                                                          Deadline deadline) {
  std::lock_guard lock(mutex_);
  std::vector<std::string> all(static_cast<std::size_t>(size_));
  all[static_cast<std::size_t>(rank_)] = mine;
  const auto parseBlob = [&](std::string_view line, int expectRank) -> Result<std::string> {
    std::istringstream in{std::string(line)};
    std::string kind;
    int rank = -1;
    std::string hex;
    if (expectRank < 0) {
      in >> kind >> hex;
    } else {
      in >> kind >> rank >> hex;
    }
    if (!in || kind != "G" || (expectRank >= 0 && rank != expectRank)) {
      return makeError(ErrorCode::kInternal, "unexpected line on the bootstrap link: \"" +
                                                 std::string(line.substr(0, 80)) + "\"");
    }
    return fromHex(hex);
  };
  if (rank_ == 0) {
    for (int r = 1; r < size_; ++r) {
      auto line = nextDataLine(r, deadline);
      if (!line) return std::move(line).error().withContext("gathering addresses");
      auto blob = parseBlob(*line, -1);
      if (!blob) return std::move(blob).error().withContext("rank " + std::to_string(r));
      all[static_cast<std::size_t>(r)] = std::move(*blob);
    }
    std::string reply;
    for (int r = 0; r < size_; ++r) {
      reply += "G " + std::to_string(r) + " " + toHex(all[static_cast<std::size_t>(r)]) + "\n";
    }
    for (int r = 1; r < size_; ++r) {
      TORUS_RETURN_IF_ERROR(sockets_[static_cast<std::size_t>(r)].send(reply, deadline),
                            "sending the addresses to rank " + std::to_string(r));
    }
    return all;
  }
  TORUS_RETURN_IF_ERROR(sockets_[0].send("G " + toHex(mine) + "\n", deadline),
                        "sending this rank's address to rank 0");
  for (int r = 0; r < size_; ++r) {
    auto line = nextDataLine(0, deadline);
    if (!line) return std::move(line).error().withContext("waiting for the addresses");
    auto blob = parseBlob(*line, r);
    if (!blob) return std::move(blob).error();
    all[static_cast<std::size_t>(r)] = std::move(*blob);
  }
  return all;
}

}  // namespace torus::coll
