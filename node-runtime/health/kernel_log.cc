#include "node-runtime/health/kernel_log.h"

#include <cctype>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "common/base/log.h"

namespace torus::health {
namespace {

constexpr std::string_view kMarker = "NEURON_HW_ERR=";

// The number right after `prefix` where the prefix starts a word; -1 when there is none.
int numberAfter(std::string_view line, std::string_view prefix) {
  for (std::size_t at = line.find(prefix); at != std::string_view::npos;
       at = line.find(prefix, at + 1)) {
    const bool wordStart = at == 0 || !std::isalnum(static_cast<unsigned char>(line[at - 1]));
    std::size_t digits = at + prefix.size();
    int value = 0;
    int count = 0;
    while (digits < line.size() && std::isdigit(static_cast<unsigned char>(line[digits])) &&
           count < 3) {
      value = value * 10 + (line[digits] - '0');
      ++digits;
      ++count;
    }
    const bool wordEnd =
        digits == line.size() || !std::isalnum(static_cast<unsigned char>(line[digits]));
    if (wordStart && count > 0 && wordEnd) return value;
  }
  return -1;
}

}  // namespace

std::optional<KernelHardwareError> parseKernelLine(std::string_view line) {
  if (const std::size_t semicolon = line.find(';');
      semicolon != std::string_view::npos && semicolon < 64 && !line.empty() &&
      std::isdigit(static_cast<unsigned char>(line[0]))) {
    line.remove_prefix(semicolon + 1);  // a /dev/kmsg record: "prio,seq,usec,flags;message"
  }
  const std::size_t marker = line.find(kMarker);
  if (marker == std::string_view::npos) return std::nullopt;
  std::size_t end = marker + kMarker.size();
  while (end < line.size() &&
         (std::isupper(static_cast<unsigned char>(line[end])) ||
          std::isdigit(static_cast<unsigned char>(line[end])) || line[end] == '_')) {
    ++end;
  }
  KernelHardwareError error;
  error.type = std::string(line.substr(marker + kMarker.size(), end - marker - kMarker.size()));
  if (error.type.empty()) return std::nullopt;
  for (const std::string_view prefix : {"nd-id=", "device=", "neuron", "nd"}) {
    if (const int device = numberAfter(line, prefix); device >= 0) {
      error.device = device;
      break;
    }
  }
  return error;
}

Result<std::unique_ptr<KernelLogWatcher>> KernelLogWatcher::start(const std::filesystem::path& path,
                                                                  OnError onError) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    return makeError(ErrorCode::kUnavailable,
                     "cannot read the kernel log " + path.string() + ": " + std::strerror(errno));
  }
  ::lseek(fd.get(), 0, SEEK_END);  // /dev/kmsg: skip the ring buffer; a file: skip what is there
  return std::make_unique<KernelLogWatcher>(std::move(fd), path.string(), std::move(onError));
}

KernelLogWatcher::KernelLogWatcher(UniqueFd fd, std::string path, OnError onError)
    : fd_(std::move(fd)), path_(std::move(path)), onError_(std::move(onError)) {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

KernelLogWatcher::~KernelLogWatcher() {
  thread_.request_stop();
}

void KernelLogWatcher::run(std::stop_token stop) {
  std::string pending;
  char buffer[8192];
  while (!stop.stop_requested()) {
    // /dev/kmsg wakes poll() per record; a regular file is always "readable" and reads 0 at its
    // end, so it is re-checked after a pause (an idle agent must cost next to nothing).
    pollfd wait{fd_.get(), POLLIN, 0};
    ::poll(&wait, 1, 1000);
    const ssize_t got = ::read(fd_.get(), buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EPIPE) continue;  // kmsg records overwritten before we read them
      if (errno != EAGAIN && errno != EINTR) {
        TORUS_LOG(Warn, Health, "kernel log read failed; no longer following it", {"path", path_},
                  {"error", std::strerror(errno)});
        return;
      }
      continue;
    }
    if (got == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      continue;
    }
    pending.append(buffer, static_cast<std::size_t>(got));
    for (std::size_t newline; (newline = pending.find('\n')) != std::string::npos;) {
      const std::string line = pending.substr(0, newline);
      pending.erase(0, newline + 1);
      if (auto error = parseKernelLine(line)) onError_(*error, line);
    }
    if (pending.size() > sizeof buffer) pending.clear();  // no newline in sight: not a log line
  }
}

}  // namespace torus::health
