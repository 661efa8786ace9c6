#include "node-runtime/health/deep_check/device_memory.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <span>
#include <system_error>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/file_io.h"
#include "common/base/unique_fd.h"
#include "node-runtime/discovery/pci_functions.h"
#include "node-runtime/health/deep_check/memory_pattern.h"

namespace torus::health {
namespace {

// Drains the write-combining buffers before reading back. An sfence on x86, a full barrier
// elsewhere; written out rather than std::atomic_thread_fence, which -fsanitize=thread refuses.
void drainWriteCombining() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_sfence();
  asm volatile("" ::: "memory");  // and no compiler reordering across it
#elif defined(__aarch64__)
  asm volatile("dsb st" ::: "memory");
#else
  __sync_synchronize();
#endif
}

namespace fs = std::filesystem;

constexpr std::uint64_t kPageBytes = 4096;

std::string hex(std::uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "0x%" PRIx64, value);
  return buffer;
}

// One shared mapping of a window of a file; unmapped and closed when destroyed.
class MappedWindow {
 public:
  static Result<MappedWindow> map(const fs::path& path, int openFlags, int protection,
                                  std::uint64_t offset, std::size_t bytes) {
    MappedWindow window;
    window.fd_.reset(::open(path.c_str(), openFlags | O_CLOEXEC));
    if (!window.fd_) {
      const int error = errno;
      // Not allowed to open it this way: a property of the mount or the process, not the device.
      const bool refused = error == EROFS || error == EACCES || error == EPERM;
      return makeError(refused ? ErrorCode::kPermissionDenied : ErrorCode::kUnavailable,
                       path.string() + ": " + errnoText(error));
    }
    void* address = ::mmap(nullptr, bytes, protection, MAP_SHARED, window.fd_.get(),
                           static_cast<off_t>(offset));
    if (address == MAP_FAILED) {
      // EINVAL: a kernel built with CONFIG_IO_STRICT_DEVMEM refuses to map a region a driver
      // claimed, as the Neuron driver claims BAR 4 (v3/neuron_dhal_v3.c:1186). Not the memory.
      const int error = errno;
      return makeError(error == EINVAL ? ErrorCode::kPermissionDenied : ErrorCode::kUnavailable,
                       path.string() + ": mmap of " + std::to_string(bytes) + " bytes at " +
                           hex(offset) + ": " + errnoText(error));
    }
    window.address_ = address;
    window.bytes_ = bytes;
    return window;
  }
  MappedWindow() = default;
  MappedWindow(MappedWindow&& other) noexcept
      : fd_(std::move(other.fd_)),
        address_(std::exchange(other.address_, nullptr)),
        bytes_(std::exchange(other.bytes_, 0)) {}
  MappedWindow& operator=(MappedWindow&&) = delete;
  MappedWindow(const MappedWindow&) = delete;
  ~MappedWindow() {
    if (address_ != nullptr) ::munmap(address_, bytes_);
  }
  std::span<std::uint64_t> words() const {
    return {static_cast<std::uint64_t*>(address_), bytes_ / sizeof(std::uint64_t)};
  }

 private:
  UniqueFd fd_;
  void* address_ = nullptr;
  std::size_t bytes_ = 0;
};

Result<std::uint64_t> barBytes(const fs::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return makeError(ErrorCode::kNotFound, path.string() + ": " + errnoText(errno));
  }
  // The kernel sizes a resource file as its BAR.
  if (info.st_size <= 0) {
    return makeError(
        ErrorCode::kFailedPrecondition,
        path.string() + ": the memory BAR is empty (size " + std::to_string(info.st_size) + ")");
  }
  return static_cast<std::uint64_t>(info.st_size);
}

}  // namespace

DeviceMemoryFiles deviceMemoryFiles(const discovery::DiscoveryRoots& roots,
                                    const std::string& pciBdf) {
  const std::string bar = "resource" + std::to_string(kDeviceMemoryBar);
  const fs::path function = roots.sys / "bus" / "pci" / "devices" / pciBdf;
  return DeviceMemoryFiles{function, function / bar, function / (bar + "_wc")};
}

MemoryTestResult testDeviceMemory(const discovery::DiscoveryRoots& roots,
                                  const topology::Device& device, std::uint64_t windowBytes) {
  const auto started = std::chrono::steady_clock::now();
  MemoryTestResult result;
  const auto finish = [&](std::string problem) {
    result.problem = std::move(problem);
    result.passed = result.problem.empty();
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return result;
  };
  if (device.pciBdf.empty() || !discovery::isPciAddress(device.pciBdf)) {
    result.tested = false;
    finish("device memory not tested: no PCI function is known for neuron" +
           std::to_string(device.index) +
           " (the driver numbers devices by firmware routing id, so no other function may stand "
           "in for it)");
    result.passed = false;
    return result;
  }
  const DeviceMemoryFiles files = deviceMemoryFiles(roots, device.pciBdf);
  auto size = barBytes(files.uncached);
  if (!size) return finish("device memory: " + size.error().message);
  const std::uint64_t window = std::min(windowBytes, *size) / kPageBytes * kPageBytes;
  if (window == 0) {
    return finish("device memory: " + files.uncached.string() + " (" + std::to_string(*size) +
                  " bytes) has no whole page to test");
  }
  result.windowOffset = (*size - window) / kPageBytes * kPageBytes;
  result.windowBytes = window;
  auto writer = MappedWindow::map(files.writeCombining, O_RDWR, PROT_READ | PROT_WRITE,
                                  result.windowOffset, window);
  if (!writer && writer.error().code == ErrorCode::kPermissionDenied) {
    result.tested = false;
    result.windowBytes = 0;
    finish("device memory not tested: " + writer.error().message +
           " (the BAR must be writable and mappable to test it; the chart mounts /sys "
           "read-only)");
    result.passed = false;
    return result;
  }
  if (!writer) return finish("device memory: " + writer.error().message);
  auto reader = MappedWindow::map(files.uncached, O_RDONLY, PROT_READ, result.windowOffset, window);
  if (!reader) return finish("device memory: " + reader.error().message);

  for (const MemoryPattern pattern : kAllMemoryPatterns) {
    fillPattern(pattern, result.windowOffset, writer->words());
    drainWriteCombining();
    if (auto bad = verifyPattern(pattern, result.windowOffset, reader->words())) {
      return finish("device memory " + files.uncached.string() + " " +
                    std::string(patternName(pattern)) + ": " + std::to_string(bad->badWords) +
                    " of " + std::to_string(window / sizeof(std::uint64_t)) +
                    " words differ; first at offset " + hex(bad->offset) + ": wrote " +
                    hex(bad->expected) + ", read " + hex(bad->actual));
    }
  }
  return finish("");
}

}  // namespace torus::health
