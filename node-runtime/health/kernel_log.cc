#include "node-runtime/health/kernel_log.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "common/base/log.h"
#include "node-runtime/discovery/kernel_ring.h"
#include "node-runtime/discovery/pci_functions.h"

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

constexpr std::chrono::milliseconds kRingInterval{1000};

// The first PCI address (discovery::isPciAddress) that starts a word of `line`; "" when there is
// none.
std::string pciAddressIn(std::string_view line) {
  constexpr std::size_t kLength = std::string_view("DDDD:BB:DD.F").size();
  for (std::size_t at = 0; at + kLength <= line.size(); ++at) {
    const bool wordStart = at == 0 || !std::isalnum(static_cast<unsigned char>(line[at - 1]));
    if (wordStart && discovery::isPciAddress(line.substr(at, kLength)))
      return std::string(line.substr(at, kLength));
  }
  return "";
}

// The 16 hexadecimal digits after "serial-num=" (AWS's NEURON_HW_ERR lines), lower-cased; "" when
// the line has none or another shape.
std::string serialNumberIn(std::string_view line) {
  constexpr std::string_view kKey = "serial-num=";
  const std::size_t at = line.find(kKey);
  if (at == std::string_view::npos) return "";
  std::string serial;
  for (std::size_t i = at + kKey.size();
       i < line.size() && std::isxdigit(static_cast<unsigned char>(line[i])); ++i) {
    serial += static_cast<char>(std::tolower(static_cast<unsigned char>(line[i])));
  }
  return serial.size() == 16 ? serial : "";
}

}  // namespace

std::optional<int> deviceOfSerialNumber(const std::vector<std::string>& serials,
                                        std::string_view serialNumber) {
  if (serialNumber.empty()) return std::nullopt;
  const auto found = std::find(serials.begin(), serials.end(), serialNumber);
  if (found == serials.end()) return std::nullopt;
  return static_cast<int>(found - serials.begin());
}

std::optional<int> deviceOfPciFunction(const std::vector<std::string>& functions,
                                       std::string_view pciAddress) {
  const auto found = std::find(functions.begin(), functions.end(), pciAddress);
  if (found == functions.end()) return std::nullopt;
  return static_cast<int>(found - functions.begin());
}

std::string_view lastRingLine(std::string_view ring) {
  // Only complete lines count: text after the final newline is still being written.
  std::size_t end = ring.rfind('\n');
  while (end != std::string_view::npos && end > 0) {
    const std::size_t previous = ring.rfind('\n', end - 1);
    const std::size_t begin = previous == std::string_view::npos ? 0 : previous + 1;
    if (end > begin) return ring.substr(begin, end - begin);
    end = previous;  // an empty line: the one before it
  }
  return {};
}

std::vector<std::string_view> ringLinesAfter(std::string_view ring, std::string_view last) {
  std::size_t from = 0;
  if (!last.empty()) {
    // The last occurrence that is a whole line.
    for (std::size_t at = ring.rfind(last); at != std::string_view::npos;
         at = at == 0 ? std::string_view::npos : ring.rfind(last, at - 1)) {
      const bool starts = at == 0 || ring[at - 1] == '\n';
      const std::size_t end = at + last.size();
      if (starts && end < ring.size() && ring[end] == '\n') {
        from = end + 1;
        break;
      }
    }
  }
  std::vector<std::string_view> lines;
  while (from < ring.size()) {
    const std::size_t newline = ring.find('\n', from);
    if (newline == std::string_view::npos) break;  // not complete yet: the next read has it
    if (newline > from) lines.push_back(ring.substr(from, newline - from));
    from = newline + 1;
  }
  return lines;
}

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
  error.pciAddress = pciAddressIn(line);
  error.serialNumber = serialNumberIn(line);
  for (const std::string_view prefix : {"nd-id=", "device=", "neuron", "nd"}) {
    if (const int device = numberAfter(line, prefix); device >= 0) {
      error.device = device;
      break;
    }
  }
  return error;
}

Result<std::unique_ptr<KernelLogWatcher>> KernelLogWatcher::start(const std::filesystem::path& path,
                                                                  OnError onError, Source source,
                                                                  OnReadable onReadable) {
  std::string opened;
  if (source != Source::kSyslog) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (fd) {
      ::lseek(fd.get(), 0, SEEK_END);  // /dev/kmsg: skip the ring buffer; a file: what is there
      return std::make_unique<KernelLogWatcher>(std::move(fd), path.string(), std::move(onError),
                                                std::move(onReadable));
    }
    opened = "cannot read the kernel log " + path.string() + ": " + std::strerror(errno);
    const bool refused = errno == EPERM || errno == EACCES;
    if (source == Source::kFile || !refused) return makeError(ErrorCode::kUnavailable, opened);
  }
  auto ring = discovery::readKernelRing();
  if (!ring) {
    return makeError(ErrorCode::kUnavailable,
                     opened.empty() ? ring.error().message : opened + "; " + ring.error().message);
  }
  return std::make_unique<KernelLogWatcher>(std::string(lastRingLine(*ring)), std::move(onError),
                                            std::move(onReadable));
}

KernelLogWatcher::KernelLogWatcher(UniqueFd fd, std::string path, OnError onError,
                                   OnReadable onReadable)
    : fd_(std::move(fd)),
      path_(std::move(path)),
      onError_(std::move(onError)),
      onReadable_(std::move(onReadable)) {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

KernelLogWatcher::KernelLogWatcher(std::string lastLine, OnError onError, OnReadable onReadable)
    : path_("syslog(2)"), onError_(std::move(onError)), onReadable_(std::move(onReadable)) {
  thread_ = std::jthread(
      [this, last = std::move(lastLine)](std::stop_token stop) { runRing(stop, last); });
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
    if (!fd_) {
      // Lost: try again from the log's end once a second.
      std::this_thread::sleep_for(std::chrono::seconds(1));
      UniqueFd reopened(::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
      if (!reopened) continue;
      ::lseek(reopened.get(), 0, SEEK_END);
      fd_ = std::move(reopened);
      pending.clear();
      noteReadable("");
      continue;
    }
    pollfd wait{fd_.get(), POLLIN, 0};
    ::poll(&wait, 1, 1000);
    const ssize_t got = ::read(fd_.get(), buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EPIPE) continue;  // kmsg records overwritten before we read them
      if (errno != EAGAIN && errno != EINTR) {
        noteReadable("reading " + path_ + " failed: " + std::strerror(errno));
        fd_ = UniqueFd();
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
      handle(line);
    }
    if (pending.size() > sizeof buffer) pending.clear();  // no newline in sight: not a log line
  }
}

void KernelLogWatcher::runRing(std::stop_token stop, std::string last) {
  std::mutex mutex;
  std::condition_variable_any wake;
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(mutex);
      wake.wait_for(lock, stop, kRingInterval, [] { return false; });
    }
    if (stop.stop_requested()) return;
    auto ring = discovery::readKernelRing();
    if (!ring) {
      noteReadable(ring.error().message);
      continue;
    }
    if (!lostBecause_.empty()) {
      // Read again: follow from what is there now (what came in between is lost either way).
      noteReadable("");
      last = std::string(lastRingLine(*ring));
      continue;
    }
    for (const std::string_view line : ringLinesAfter(*ring, last))
      handle(line);
    if (const std::string_view now = lastRingLine(*ring); !now.empty()) last = std::string(now);
  }
}

void KernelLogWatcher::noteReadable(const std::string& lostBecause) {
  if (lostBecause == lostBecause_) return;
  if (lostBecause.empty()) {
    TORUS_LOG(Info, Health, "the kernel log is read again", {"path", path_},
              {"was_lost_because", lostBecause_});
  } else {
    TORUS_LOG(Warn, Health, "kernel log read failed; retrying every second", {"path", path_},
              {"error", lostBecause});
  }
  lostBecause_ = lostBecause;
  if (onReadable_) onReadable_(lostBecause_);
}

void KernelLogWatcher::handle(std::string_view line) {
  if (auto error = parseKernelLine(line)) onError_(*error, std::string(line));
}

}  // namespace torus::health
