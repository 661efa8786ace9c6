#include "node-runtime/reset/core_reset.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include "common/base/file_io.h"
#include "common/base/log.h"
#include "common/base/parse.h"
#include "common/base/strings.h"
#include "node-runtime/discovery/sysfs_attribute.h"

namespace torus::reset {
namespace {

namespace fs = std::filesystem;

bool isCoreDirName(const std::string& name) {
  constexpr std::string_view kPrefix = "neuron_core";
  return name.size() > kPrefix.size() && name.starts_with(kPrefix) &&
         std::all_of(name.begin() + kPrefix.size(), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

// What the resets started by one resetAndWait came to.
struct ResetRound {
  // Written, but the driver never showed it took them: state never read RESET and the request
  // count did not rise. It does that while a process holds the device (neuron_cdev.c:2985).
  std::vector<int> ignored;
  std::optional<Error> error;  // the first failure other than an ignored reset
};

// Starts the resets of `devices` together, then waits for the driver to report each ready again:
// a reset takes the driver a while (seconds on some devices), and a 16-device container should
// wait for one, not sixteen in a row. Every reset started is waited for, so a failure names every
// device that failed and none is left mid-reset by an early return.
ResetRound resetAndWait(const discovery::DiscoveryRoots& roots, const std::vector<int>& devices,
                        const ResetPolicy& policy) {
  ResetRound round;
  std::vector<int> started;
  std::map<int, std::optional<std::uint64_t>> requestsBefore;
  for (const int device : devices) {
    requestsBefore[device] = resetRequestCount(roots, device);
    if (auto written = discovery::writeAttribute(roots.resetFile(device), "1\n"); !written) {
      round.error =
          std::move(written).error().withContext("resetting neuron" + std::to_string(device));
      break;
    }
    started.push_back(device);
  }
  const auto deadline = std::chrono::steady_clock::now() + policy.readyTimeout;
  std::vector<std::string> invalid;
  std::set<int> seenResetting;
  std::vector<int> pending = started;
  while (!pending.empty()) {
    std::vector<int> stillResetting;
    for (const int device : pending) {
      const std::string name = "neuron" + std::to_string(device);
      auto state =
          discovery::readParsed(roots.resetFile(device), "reset", discovery::parseResetState);
      if (!state) {
        if (!round.error) round.error = std::move(state).error().withContext("resetting " + name);
        continue;
      }
      if (*state == 0) {
        seenResetting.insert(device);
        stillResetting.push_back(device);
        continue;
      }
      if (!seenResetting.contains(device)) {
        const std::optional<std::uint64_t> before = requestsBefore[device];
        const std::optional<std::uint64_t> after = resetRequestCount(roots, device);
        if (!before || !after || *after <= *before) {
          round.ignored.push_back(device);
          continue;
        }
      }
      if (*state == 2) invalid.push_back(name);
    }
    pending = std::move(stillResetting);
    if (pending.empty()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      std::vector<std::string> names;
      for (const int device : pending)
        names.push_back("neuron" + std::to_string(device));
      round.error = makeError(ErrorCode::kDeadlineExceeded,
                              "resetting " + joinStrings(names, ", ") + ": still in reset after " +
                                  std::to_string(policy.readyTimeout.count()) + " ms" +
                                  policy.whenStillResetting);
      return round;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!invalid.empty()) {
    round.error = makeError(ErrorCode::kInternal, "resetting " + joinStrings(invalid, ", ") +
                                                      ": the driver reports state INVALID (2)");
  }
  return round;
}

}  // namespace

std::chrono::milliseconds driverResetLimit(const topology::InstanceType* type) {
  if (type != nullptr && type->generation != topology::Generation::kTrn2) {
    return std::chrono::seconds(120);
  }
  return std::chrono::seconds(480);
}

Result<void> resetDevice(const discovery::DiscoveryRoots& roots, int device,
                         const ResetPolicy& policy) {
  topology::DeviceSet one;
  one.insert(device);
  return resetDevices(roots, one, policy);
}

std::optional<std::uint64_t> resetRequestCount(const discovery::DiscoveryRoots& roots, int device) {
  std::uint64_t sum = 0;
  int cores = 0;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(roots.deviceDir(device), ec)) {
    if (!isCoreDirName(entry.path().filename().string())) continue;
    auto text =
        readSmallFile(entry.path() / "stats" / "other_info" / "reset_req_count" / "total", 64);
    auto count = text ? parseUint64(*text) : Result<std::uint64_t>(std::move(text).error());
    if (!count) return std::nullopt;
    sum += *count;
    ++cores;
  }
  if (ec || cores == 0) return std::nullopt;
  return sum;
}

Result<void> resetDevices(const discovery::DiscoveryRoots& roots,
                          const topology::DeviceSet& devices, const ResetPolicy& policy) {
  std::vector<int> pending = devices.ids();
  for (int attempt = 1; !pending.empty(); ++attempt) {
    std::vector<std::string> nodes;
    for (const int device : pending)
      nodes.push_back(roots.deviceNode(device).string());
    const HolderScan scan = findHoldersOfAny(policy.procRoot, nodes);
    if (!scan.unseen.empty()) {
      return makeError(ErrorCode::kPermissionDenied,
                       "resetting neuron" + std::to_string(pending.front()) +
                           ": cannot tell whether a process holds it: " + unseenText(scan) +
                           "; the driver ignores a reset while the device is open, so none was "
                           "written");
    }
    std::vector<int> retry;
    std::vector<int> free;
    for (std::size_t i = 0; i < pending.size(); ++i) {
      const auto held = scan.holders.find(nodes[i]);
      if (held == scan.holders.end()) {
        free.push_back(pending[i]);
        continue;
      }
      const std::string name = "neuron" + std::to_string(pending[i]);
      if (attempt >= policy.attempts) {
        return makeError(ErrorCode::kFailedPrecondition,
                         "resetting " + name + ": " + nodes[i] + " is still open by " +
                             holdersText(held->second) + " after " + std::to_string(attempt) +
                             " attempts; the driver refuses a reset while the device is open");
      }
      TORUS_LOG(Debug, Runtime, "device open; reset deferred", {"device", pending[i]},
                {"holders", holdersText(held->second)}, {"attempt", attempt});
      retry.push_back(pending[i]);
    }
    ResetRound round = resetAndWait(roots, free, policy);
    if (round.error) return std::move(*round.error);
    if (!round.ignored.empty()) {
      std::vector<std::string> names;
      for (const int device : round.ignored)
        names.push_back("neuron" + std::to_string(device));
      if (attempt >= policy.attempts) {
        return makeError(
            ErrorCode::kFailedPrecondition,
            "resetting " + joinStrings(names, ", ") + ": not done: the driver did not take the " +
                "reset in " + std::to_string(attempt) +
                " attempts (its state never read RESET and no core's reset_req_count rose); it "
                "ignores a reset while a process holds the device, and one may open it after each "
                "check");
      }
      TORUS_LOG(Info, Runtime, "the driver ignored a reset; checking holders and trying again",
                {"devices", joinStrings(names, ", ")}, {"attempt", attempt});
      retry.insert(retry.end(), round.ignored.begin(), round.ignored.end());
    }
    pending = std::move(retry);
    if (!pending.empty()) std::this_thread::sleep_for(policy.retryDelay);
  }
  return okResult();
}

}  // namespace torus::reset
