#include "node-runtime/collectives/core/status.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "common/base/file_io.h"
#include "common/base/unique_fd.h"

namespace torus::coll {
namespace {

struct Board {
  std::mutex mutex;
  std::vector<std::weak_ptr<CommStatus>> entries;
};

Board& board() {
  static Board instance;  // intentionally process-wide: a status query sees every communicator
  return instance;
}

std::atomic<int> signalPipe{-1};

void onStatusSignal(int) {
  const int fd = signalPipe.load(std::memory_order_relaxed);
  if (fd >= 0) {
    const int saved = errno;
    const char byte = 1;
    (void)!::write(fd, &byte, 1);  // async-signal-safe; the reporter thread does the rest
    errno = saved;
  }
}

// The reporting thread and its pipe live for the rest of the process once installed.
struct Reporter {
  UniqueFd readEnd;
  UniqueFd writeEnd;
  int outputFd = 2;
  std::jthread thread;
};

}  // namespace

StatusRegistration::StatusRegistration(std::shared_ptr<CommStatus> status)
    : status_(std::move(status)) {
  std::lock_guard lock(board().mutex);
  auto& entries = board().entries;
  std::erase_if(entries, [](const auto& weak) { return weak.expired(); });
  entries.push_back(status_);
}

StatusRegistration::~StatusRegistration() {
  if (!status_) return;
  std::lock_guard lock(board().mutex);
  std::erase_if(board().entries, [this](const auto& weak) {
    auto entry = weak.lock();
    return !entry || entry == status_;
  });
}

std::string statusReport() {
  std::vector<std::shared_ptr<CommStatus>> live;
  {
    std::lock_guard lock(board().mutex);
    for (const auto& weak : board().entries) {
      if (auto entry = weak.lock()) live.push_back(std::move(entry));
    }
  }
  if (live.empty()) return "no communicators\n";
  const auto nowNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now().time_since_epoch())
                         .count();
  std::string out;
  for (const auto& s : live) {
    out += "comm=" + s->name + " rank=" + std::to_string(s->rank) + "/" + std::to_string(s->size);
    const auto op = static_cast<OpKind>(s->op.load(std::memory_order_relaxed));
    const auto sequence = s->sequence.load(std::memory_order_relaxed);
    std::lock_guard lock(s->mutex);
    if (s->brokenBy) {
      out += " broken: " + *s->brokenBy + "\n";
      continue;
    }
    if (op == OpKind::kNone) {
      out += " idle after seq=" + std::to_string(sequence) + "\n";
      continue;
    }
    const auto runningMs = (nowNs - s->startedNs.load(std::memory_order_relaxed)) / 1000000;
    // Appended piece by piece: GCC 12 -O3 warns (-Wrestrict) on " " + std::string&&.
    out += ' ';
    out += opName(op);
    out += " seq=" + std::to_string(sequence) + " running " + std::to_string(runningMs) + " ms";
    if (!s->waitingFor.empty()) {
      out += s->waitingFor.size() == 1 ? ", waiting for rank " : ", waiting for ranks ";
      for (std::size_t i = 0; i < s->waitingFor.size(); ++i) {
        const int r = s->waitingFor[i];
        if (i > 0) out += ", ";
        out += std::to_string(r);
        if (static_cast<std::size_t>(r) < s->pids.size()) {
          out += " (pid " + std::to_string(s->pids[static_cast<std::size_t>(r)]) + ")";
        }
      }
    }
    out += "\n";
  }
  return out;
}

Result<void> installStatusSignal(int signal, int fd) {
  static std::mutex installMutex;
  static std::unique_ptr<Reporter> reporter;  // lives until exit, like the signal disposition
  std::lock_guard lock(installMutex);
  if (reporter) return okResult();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    return makeError(ErrorCode::kInternal, std::string("status pipe: ") + std::strerror(errno));
  }
  auto next = std::make_unique<Reporter>();
  next->readEnd = UniqueFd(fds[0]);
  next->writeEnd = UniqueFd(fds[1]);
  next->outputFd = fd;
  const int readFd = next->readEnd.get();
  const int outputFd = fd;
  next->thread = std::jthread([readFd, outputFd](std::stop_token stop) {
    while (!stop.stop_requested()) {
      pollfd pfd{readFd, POLLIN, 0};
      if (::poll(&pfd, 1, 100) <= 0) continue;
      char drain[64];
      while (::read(readFd, drain, sizeof(drain)) > 0) {
      }
      writeFully(outputFd, statusReport());
    }
  });
  signalPipe.store(next->writeEnd.get());
  struct sigaction action {};
  action.sa_handler = onStatusSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(signal, &action, nullptr) != 0) {
    signalPipe.store(-1);
    return makeError(ErrorCode::kInvalidArgument,
                     "sigaction(" + std::to_string(signal) + "): " + std::strerror(errno));
  }
  reporter = std::move(next);
  return okResult();
}

InFlightMark::InFlightMark(CommStatus* status, bool& waitPublished, OpKind op,
                           std::uint64_t sequence)
    : status_(status), waitPublished_(waitPublished) {
  if (status_ == nullptr) return;
  status_->startedNs.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count(),
                           std::memory_order_relaxed);
  status_->sequence.store(sequence, std::memory_order_relaxed);
  status_->op.store(static_cast<std::uint32_t>(op), std::memory_order_relaxed);
}

InFlightMark::~InFlightMark() {
  if (status_ == nullptr) return;
  status_->op.store(0, std::memory_order_relaxed);
  if (waitPublished_) {  // only waits that took the slow path published anything
    std::lock_guard lock(status_->mutex);
    status_->waitingFor.clear();
    waitPublished_ = false;
  }
}

}  // namespace torus::coll
