#include "node-runtime/collectives/bootstrap/bootstrap_link.h"

#include <algorithm>
#include <cerrno>
#include <sstream>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

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
  if (watcher_.joinable()) {
    const std::uint64_t one = 1;
    (void)!::write(stopWatching_.get(), &one, sizeof(one));
    watcher_.join();
  }
  std::lock_guard lock(mutex_);
  const auto deadline = Clock::now() + std::chrono::milliseconds(200);
  for (LineSocket& socket : sockets_) {
    if (socket) (void)socket.send("BYE\n", deadline);
  }
}

void BootstrapLink::markDead(int rank) {
  if (dead_[static_cast<std::size_t>(rank)] || departed_[static_cast<std::size_t>(rank)]) return;
  dead_[static_cast<std::size_t>(rank)] = true;
  deadList_.push_back(rank);
  trouble_.store(true, std::memory_order_release);
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
      } else if (text.rfind("ABORT ", 0) == 0) {
        // ABORT <session> <rank> <why>
        const std::string_view rest = std::string_view(text).substr(6);
        const std::size_t space1 = rest.find(' ');
        const std::size_t space2 =
            space1 == std::string_view::npos ? space1 : rest.find(' ', space1 + 1);
        if (space2 != std::string_view::npos) {
          auto session = parseUint64(rest.substr(0, space1));
          auto rank = parseInt(rest.substr(space1 + 1, space2 - space1 - 1), 0, size_ - 1);
          if (session && rank) {
            recordAbortLocked(*session, *rank, std::string(rest.substr(space2 + 1)), peer);
          }
        }
      } else {
        pending_[s].push_back(text);
      }
    }
  }
}

void BootstrapLink::recordAbortLocked(std::uint64_t session, int rank, const std::string& why,
                                      int from) {
  for (const Abort& known : aborts_) {
    if (known.session == session && known.rank == rank) return;
  }
  aborts_.push_back({session, rank, why});
  trouble_.store(true, std::memory_order_release);
  // Rank 0 passes it on to everyone but where it came from; other ranks tell rank 0.
  const std::string line =
      "ABORT " + std::to_string(session) + " " + std::to_string(rank) + " " + why + "\n";
  const auto deadline = Clock::now() + std::chrono::milliseconds(200);
  for (std::size_t s = 0; s < sockets_.size(); ++s) {
    const int peer = rank_ == 0 ? static_cast<int>(s) : 0;
    if (peer == from || peer == rank_ || !sockets_[s]) continue;
    if (dead_[static_cast<std::size_t>(peer)] || departed_[static_cast<std::size_t>(peer)])
      continue;
    (void)sockets_[s].send(line, deadline);
  }
}

void BootstrapLink::announceAbort(std::uint64_t session, int rank, const std::string& why) {
  std::string oneLine = why.substr(0, 400);
  for (char& c : oneLine) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::lock_guard lock(mutex_);
  recordAbortLocked(session, rank, oneLine, rank_);
}

std::optional<std::pair<int, std::string>> BootstrapLink::abortOf(std::uint64_t session) {
  std::lock_guard lock(mutex_);
  pollLocked();
  for (const Abort& known : aborts_) {
    if (known.session == session && known.rank != rank_) return std::pair(known.rank, known.why);
  }
  return std::nullopt;
}

void BootstrapLink::startWatching() {
  std::lock_guard lock(mutex_);
  if (watcher_.joinable()) return;
  stopWatching_ = UniqueFd(::eventfd(0, EFD_CLOEXEC));
  if (!stopWatching_) return;  // no thread: deaths are still seen when a wait polls
  watcher_ = std::thread([this] { watch(); });
}

void BootstrapLink::watch() {
  while (true) {
    std::vector<pollfd> fds{{stopWatching_.get(), POLLIN, 0}};
    {
      std::lock_guard lock(mutex_);
      for (const LineSocket& socket : sockets_) {
        if (socket) fds.push_back({socket.fd(), POLLIN, 0});
      }
    }
    // A socket closed by another thread since the list was made only costs a spurious wake-up.
    const int ready = ::poll(fds.data(), fds.size(), 100);
    if (ready < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) return;
    if (ready > 0) {
      std::lock_guard lock(mutex_);
      pollLocked();
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
