#include "node-runtime/collectives/bootstrap/line_socket.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <poll.h>
#include <sys/socket.h>

namespace torus::coll {
namespace {

Error sysError(std::string_view what, int err) {
  return makeError(ErrorCode::kUnavailable, std::string(what) + ": " + std::strerror(err));
}

}  // namespace

int millisLeft(Deadline deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

std::optional<std::string> LineSocket::takeLine() {
  const auto newline = buffer_.find('\n');
  if (newline == std::string::npos) return std::nullopt;
  std::string line = buffer_.substr(0, newline);
  buffer_.erase(0, newline + 1);
  return line;
}

Result<bool> LineSocket::fill(int timeoutMs, std::string_view what) {
  if (buffer_.size() > kMaxLine) {
    return makeError(ErrorCode::kInvalidArgument, std::string(what) + ": line too long");
  }
  pollfd pfd{fd_.get(), POLLIN, 0};
  const int ready = ::poll(&pfd, 1, timeoutMs);
  if (ready < 0 && errno == EINTR) return true;
  if (ready < 0) return sysError(what, errno);
  if (ready == 0) return false;
  char chunk[1024];
  const ssize_t got = ::recv(fd_.get(), chunk, sizeof(chunk), MSG_DONTWAIT);
  if (got < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (got < 0) return sysError(what, errno);
  if (got == 0) {
    return makeError(ErrorCode::kUnavailable, std::string(what) + ": connection closed");
  }
  buffer_.append(chunk, static_cast<std::size_t>(got));
  return true;
}

Result<std::string> LineSocket::readLine(Deadline deadline, std::string_view what) {
  while (true) {
    if (auto line = takeLine()) return std::move(*line);
    auto filled = fill(millisLeft(deadline), what);
    if (!filled) return std::move(filled).error();
    if (!*filled) {
      return makeError(ErrorCode::kDeadlineExceeded, std::string(what) + ": timed out");
    }
  }
}

Result<std::optional<std::string>> LineSocket::pollLine(std::string_view what) {
  while (true) {
    if (auto line = takeLine()) return line;
    auto filled = fill(0, what);
    if (!filled) return std::move(filled).error();
    if (!*filled) return std::optional<std::string>();
  }
}

Result<void> LineSocket::send(std::string_view data, Deadline deadline) {
  while (!data.empty()) {
    pollfd pfd{fd_.get(), POLLOUT, 0};
    const int ready = ::poll(&pfd, 1, millisLeft(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return makeError(ErrorCode::kDeadlineExceeded, "bootstrap send timed out");
    const ssize_t sent = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0) return sysError("bootstrap send", errno);
    data.remove_prefix(static_cast<std::size_t>(sent));
  }
  return okResult();
}

}  // namespace torus::coll
