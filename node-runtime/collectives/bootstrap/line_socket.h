// A TCP socket that speaks text lines with deadlines: the bootstrap's wire (bootstrap.cc) and,
// after it, the link that carries address exchanges and goodbyes (bootstrap_link.cc).
//
// Owns: the fd and what was read past the last complete line.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "node-runtime/collectives/core/coll_types.h"

namespace torus::coll {

// Milliseconds from now to `deadline` for poll(), 0 when it has passed.
int millisLeft(Deadline deadline);

class LineSocket {
 public:
  // Lines longer than this are refused (a peer that is not one of ours).
  static constexpr std::size_t kMaxLine = 4096;

  LineSocket() = default;
  explicit LineSocket(UniqueFd fd) : fd_(std::move(fd)) {}

  explicit operator bool() const { return static_cast<bool>(fd_); }
  int fd() const { return fd_.get(); }
  void close() { fd_.reset(); }

  // The next line (without '\n'). kDeadlineExceeded at the deadline, kUnavailable when the
  // other side closed the connection.
  Result<std::string> readLine(Deadline deadline, std::string_view what);
  // A complete line if one is there now; nullopt if not; kUnavailable once the peer closed.
  Result<std::optional<std::string>> pollLine(std::string_view what);
  Result<void> send(std::string_view data, Deadline deadline);

 private:
  std::optional<std::string> takeLine();
  // Reads what is there (waiting up to `timeoutMs`); false on timeout.
  Result<bool> fill(int timeoutMs, std::string_view what);

  UniqueFd fd_;
  std::string buffer_;
};

}  // namespace torus::coll
