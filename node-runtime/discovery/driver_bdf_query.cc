#include "node-runtime/discovery/driver_bdf_query.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <linux/ioctl.h>
#include <sys/ioctl.h>

#include "common/base/unique_fd.h"

namespace torus::discovery {
namespace {

constexpr unsigned kNeuronIoctlBase = 'N';  // neuron_ioctl.h:584
constexpr unsigned kDeviceBdfExtNumber = 106;
constexpr int kMaxDeviceIndex = 63;  // MAX_NEURON_DEVICE_COUNT - 1

static_assert(sizeof(DeviceBdfExt) == 16, "struct neuron_ioctl_device_bdf_ext is 16 bytes");

}  // namespace

unsigned long deviceBdfExtRequest() {
  return _IOR(kNeuronIoctlBase, kDeviceBdfExtNumber, void*);
}

std::string bdfText(const DeviceBdfExt& answer) {
  char text[24];
  std::snprintf(text, sizeof(text), "%04x:%02x:%02x.%x", answer.domain & 0xffff, answer.bus & 0xff,
                answer.slot & 0x1f, answer.function & 0x7);
  return text;
}

Result<std::map<int, std::string>> queryDriverBdfs(const std::filesystem::path& deviceNode,
                                                   int openedIndex,
                                                   const std::vector<int>& indices) {
  const UniqueFd fd(::open(deviceNode.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return makeError(ErrorCode::kUnavailable,
                     deviceNode.string() + ": cannot open write-only: " + std::strerror(errno));
  }
  std::map<int, std::string> functions;
  for (const int index : indices) {
    if (index < openedIndex || index > kMaxDeviceIndex) continue;
    DeviceBdfExt answer;
    answer.ndIndex = static_cast<std::uint32_t>(index - openedIndex);
    if (::ioctl(fd.get(), deviceBdfExtRequest(), &answer) != 0) {
      // ENOTTY: the node is not the Neuron driver's. Anything else refuses this index only.
      if (errno == ENOTTY) {
        return makeError(ErrorCode::kUnavailable,
                         deviceNode.string() + ": the driver did not answer DEVICE_BDF_EXT for " +
                             "neuron" + std::to_string(index) + ": " + std::strerror(errno));
      }
      continue;
    }
    functions.emplace(index, bdfText(answer));
  }
  return functions;
}

}  // namespace torus::discovery
