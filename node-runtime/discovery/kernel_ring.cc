#include "node-runtime/discovery/kernel_ring.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/klog.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/file_io.h"
#include "common/base/unique_fd.h"

namespace torus::discovery {
namespace {

// syslog(2)'s actions (sys/klog.h names none).
constexpr int kSyslogReadAll = 3;
constexpr int kSyslogSizeBuffer = 10;
// A log file larger than this is no kernel ring (those hold a few MiB at most).
constexpr std::size_t kMaxLogFileBytes = 64 * 1024 * 1024;
// One /dev/kmsg record is at most this long (the kernel's own limit is about 8 KiB).
constexpr std::size_t kMaxRecordBytes = 16 * 1024;

// /dev/kmsg from its oldest record: each read(2) returns one record; EPIPE says the ring dropped
// records under us (go on with the next), EAGAIN that there are no more.
Result<std::string> readKmsgRecords(int fd, const std::string& path) {
  std::string log;
  std::string record(kMaxRecordBytes, '\0');
  for (;;) {
    const ssize_t got = ::read(fd, record.data(), record.size());
    if (got > 0) {
      log.append(record.data(), static_cast<std::size_t>(got));
      if (log.back() != '\n') log += '\n';
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EPIPE) continue;
    if (got == 0 || errno == EAGAIN) return log;
    return makeError(ErrorCode::kUnavailable, path + ": " + std::strerror(errno));
  }
}

}  // namespace

Result<std::string> readKernelRing() {
  const auto refused = [] {
    return makeError(ErrorCode::kUnavailable,
                     std::string("syslog(2) refused reading the kernel log: ") +
                         std::strerror(errno) + " (it needs CAP_SYSLOG, which the chart grants)");
  };
  const int size = ::klogctl(kSyslogSizeBuffer, nullptr, 0);
  if (size < 0) return refused();
  // Each record gains its priority and time in the text: room for twice the raw buffer.
  std::string ring(static_cast<std::size_t>(size) * 2 + 4096, '\0');
  const int got = ::klogctl(kSyslogReadAll, ring.data(), static_cast<int>(ring.size()));
  if (got < 0) return refused();
  ring.resize(static_cast<std::size_t>(got));
  return ring;
}

Result<std::string> readKernelLogOnce(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == EPERM || errno == EACCES) return readKernelRing();
    return makeError(ErrorCode::kUnavailable, path.string() + ": " + std::strerror(errno));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    return makeError(ErrorCode::kUnavailable, path.string() + ": " + std::strerror(errno));
  }
  if (S_ISCHR(info.st_mode)) return readKmsgRecords(fd.get(), path.string());
  return readSmallFile(path, kMaxLogFileBytes);
}

}  // namespace torus::discovery
