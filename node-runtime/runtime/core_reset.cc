#include "node-runtime/runtime/core_reset.h"

#include <filesystem>
#include <system_error>
#include <thread>

#include "common/base/file_io.h"
#include "common/base/log.h"
#include "common/base/parse.h"
#include "common/base/strings.h"
#include "node-runtime/discovery/sysfs_attribute.h"

namespace torus::runtime {
namespace {

namespace fs = std::filesystem;

std::string holdersText(const std::vector<DeviceHolder>& holders) {
  std::vector<std::string> items;
  for (const DeviceHolder& holder : holders) {
    items.push_back("pid " + std::to_string(holder.pid) + " (" + holder.command + ")");
  }
  return joinStrings(items, ", ");
}

}  // namespace

std::vector<DeviceHolder> findHolders(const std::string& procRoot, const std::string& deviceNode) {
  std::vector<DeviceHolder> holders;
  std::error_code ec;
  std::error_code canonicalError;
  const fs::path target = fs::weakly_canonical(deviceNode, canonicalError);
  for (const fs::directory_entry& process : fs::directory_iterator(procRoot, ec)) {
    const std::string name = process.path().filename().string();
    auto pid = parseInt(name, 1, 1 << 30);
    if (!pid || std::to_string(*pid) != name) continue;
    std::error_code fdError;
    for (const fs::directory_entry& fd : fs::directory_iterator(process.path() / "fd", fdError)) {
      std::error_code linkError;
      const fs::path link = fs::read_symlink(fd.path(), linkError);
      if (!linkError && (link == target || link == fs::path(deviceNode))) {
        auto command = readSmallFile(process.path() / "comm", 256);
        holders.push_back({*pid, command ? std::string(trim(*command)) : "?"});
        break;
      }
    }
  }
  return holders;
}

Result<void> resetDevice(const discovery::DiscoveryRoots& roots, int device,
                         const ResetPolicy& policy) {
  const std::string name = "neuron" + std::to_string(device);
  const fs::path resetFile = roots.neuronClass() / name / "reset";
  const std::string node = roots.deviceNode(device).string();
  for (int attempt = 1;; ++attempt) {
    const std::vector<DeviceHolder> holders = findHolders(policy.procRoot, node);
    if (holders.empty()) break;
    if (attempt >= policy.attempts) {
      return makeError(ErrorCode::kFailedPrecondition,
                       "resetting " + name + ": " + node + " is still open by " +
                           holdersText(holders) + " after " + std::to_string(attempt) +
                           " attempts; the driver refuses a reset while the device is open");
    }
    TORUS_LOG(Debug, Runtime, "device open; reset deferred", {"device", device},
              {"holders", holdersText(holders)}, {"attempt", attempt});
    std::this_thread::sleep_for(policy.retryDelay);
  }
  TORUS_RETURN_IF_ERROR(discovery::writeAttribute(resetFile, "1\n"), "resetting " + name);
  const auto deadline = std::chrono::steady_clock::now() + policy.readyTimeout;
  while (true) {
    auto state = discovery::readParsed(resetFile, "reset", discovery::parseResetState);
    if (!state) return std::move(state).error().withContext("resetting " + name);
    if (*state == 1) return okResult();
    if (*state == 2) {
      return makeError(ErrorCode::kInternal,
                       "resetting " + name + ": the driver reports state INVALID (2)");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return makeError(ErrorCode::kDeadlineExceeded,
                       "resetting " + name + ": still in reset after " +
                           std::to_string(policy.readyTimeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Result<void> resetDevices(const discovery::DiscoveryRoots& roots,
                          const topology::DeviceSet& devices, const ResetPolicy& policy) {
  Result<void> result;
  devices.forEach([&](int device) {
    if (!result.ok()) return;
    result = resetDevice(roots, device, policy);
  });
  return result;
}

}  // namespace torus::runtime
