#include "node-runtime/simulator/sim_reset.h"

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <optional>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "common/base/file_io.h"
#include "common/base/log.h"
#include "common/base/parse.h"
#include "common/base/strings.h"
#include "common/base/unique_fd.h"
#include "node-runtime/reset/core_reset.h"

// Driver references are file:line in aws-neuron-driver 2.24.7.0 (HEAD fca19f7).
namespace torus::simulator {

namespace fs = std::filesystem;

namespace {

// The device states neuronN/reset shows (neuron_device.h:59-63; device_reset_show,
// neuron_cdev.c:2973-2977).
constexpr int kStateReset = 0;
constexpr int kStateReady = 1;
constexpr int kStateInvalid = 2;

// "/neuron3/stats/x" -> {3, "stats/x"}; indices below MAX_NEURON_DEVICE_COUNT (neuron_device.h:10).
struct DevicePath {
  int device = -1;
  std::string_view rest;
};
std::optional<DevicePath> splitDevicePath(std::string_view path) {
  constexpr std::string_view kPrefix = "/neuron";
  if (!path.starts_with(kPrefix)) return std::nullopt;
  path.remove_prefix(kPrefix.size());
  const std::size_t slash = path.find('/');
  const std::string_view number = path.substr(0, slash);
  auto device = parseInt(number, 0, 63);
  if (!device || std::to_string(*device) != number) return std::nullopt;
  return DevicePath{*device, slash == std::string_view::npos ? "" : path.substr(slash + 1)};
}

bool isCoreDirName(std::string_view name) {
  constexpr std::string_view kPrefix = "neuron_core";
  if (!name.starts_with(kPrefix) || name.size() == kPrefix.size()) return false;
  for (const char c : name.substr(kPrefix.size())) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Whether `rest` (under neuronN) is a file of the driver's metric tree, whose root is the device's
// own directory with the children info, stats and neuron_coreM (nsysfsmetric_register,
// neuron_sysfs_metrics.c:903-976; the cores at :633-729). Every file in it is made by
// nsysfsmetric_create_attr.
bool inMetricTree(std::string_view rest) {
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return false;
  const std::string_view top = rest.substr(0, slash);
  return top == "info" || top == "stats" || isCoreDirName(top);
}

// The neuron_coreM directories of a device: the cores the driver registered
// (neuron_sysfs_metrics.c:640-647), which are the cores its per-core counters count.
std::vector<fs::path> coreDirs(const fs::path& deviceDir) {
  std::vector<fs::path> cores;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(deviceDir, ec)) {
    if (isCoreDirName(entry.path().filename().string()) && entry.is_directory(ec)) {
      cores.push_back(entry.path());
    }
  }
  return cores;
}

// Rewrites a tree file in place. Not by rename: the local cluster's nodes see the tree through
// overlayfs, which keeps serving a lower file that was replaced under it. The new text goes over
// the old before the file is cut to its length, so a read in between sees no empty counter.
void replaceFile(const fs::path& file, std::string_view text) {
  const UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CLOEXEC));
  const bool written =
      fd.valid() &&
      ::pwrite(fd.get(), text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()) &&
      ::ftruncate(fd.get(), static_cast<off_t>(text.size())) == 0;
  if (!written) {
    TORUS_LOG(Warn, Simulator, "cannot update a simulated driver file; it keeps its old value",
              {"file", file.string()}, {"error", errnoText(errno)});
  }
}

// One more in the counter at `dir` (a node with total and present: COUNTER_NODE_INFO,
// neuron_sysfs_metrics.c:30-33,39-44), as nsysfsmetric_inc_counter adds a delta: total += 1,
// present = the delta (:1033-1034). A counter the tree lacks is skipped; one that does not hold a
// number (a garble fault) is left as it is.
void incrementCounter(const fs::path& dir) {
  const fs::path total = dir / "total";
  std::error_code ec;
  if (!fs::exists(total, ec)) return;
  auto text = readSmallFile(total, 256);
  auto value = text ? parseUint64(*text) : Result<std::uint64_t>(std::move(text).error());
  if (!value) {
    TORUS_LOG(Warn, Simulator, "counter is not a number; left as it is", {"file", total.string()},
              {"error", value.error().message});
    return;
  }
  replaceFile(total, std::to_string(*value + 1) + "\n");  // u64, wraps as the driver's does
  if (const fs::path present = dir / "present"; fs::exists(present, ec)) {
    replaceFile(present, "1\n");
  }
}

// Whether the HBM repair counter at `file` counts an error awaiting repair (a device without the
// counter, or one that does not hold a number, awaits none).
bool awaitsRepair(const fs::path& file) {
  auto text = readSmallFile(file, 256);
  if (!text) return false;
  const auto value = parseUint64(*text);
  return value && *value > 0;
}

// kstrtoll(buf, 10, &value) as the notify_delay store calls it (neuron_sysfs_metrics.c:460): an
// optional sign, decimal digits, at most one trailing newline and nothing more (sysfs hands the
// store a NUL-terminated copy, so the text ends at the first NUL).
std::optional<std::int64_t> kernelStrtoll(std::string_view text) {
  text = text.substr(0, text.find('\0'));
  bool negative = false;
  if (text.starts_with('-')) {
    negative = true;
    text.remove_prefix(1);
  } else if (text.starts_with('+')) {
    text.remove_prefix(1);
  }
  if (text.ends_with('\n')) text.remove_suffix(1);
  std::int64_t magnitude = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, magnitude, 10);
  if (text.empty() || text.front() < '0' || text.front() > '9' || ec != std::errc() || ptr != end) {
    return std::nullopt;
  }
  return negative ? -magnitude : magnitude;
}

}  // namespace

fs::path resetBehaviourFile(const fs::path& treeRoot, int device) {
  return treeRoot / "simulated-driver" / ("neuron" + std::to_string(device)) / "reset";
}

Result<ResetBehaviour> parseResetBehaviour(std::string_view text,
                                           std::chrono::milliseconds defaultDuration) {
  ResetBehaviour behaviour{defaultDuration, false};
  const std::vector<std::string_view> words = splitAndTrim(trim(text), ' ');
  std::size_t next = 0;
  if (next < words.size() && words[next] == "fail") {
    behaviour.fails = true;
    ++next;
  } else if (next < words.size() && words[next] == "slow") {
    ++next;
    if (next == words.size()) {
      return makeError(ErrorCode::kInvalidArgument, "reset behaviour \"slow\" needs MS");
    }
  }
  if (next < words.size()) {
    auto millis = parseInt(words[next], 0, 600'000);
    if (!millis) {
      return makeError(ErrorCode::kInvalidArgument,
                       "reset behaviour " + quoteJsonString(text) +
                           ": expected \"fail\", \"slow MS\" or \"fail MS\" (MS in [0, 600000])");
    }
    behaviour.duration = std::chrono::milliseconds(*millis);
    ++next;
  }
  if (next != words.size() || words.empty()) {
    return makeError(ErrorCode::kInvalidArgument,
                     "reset behaviour " + quoteJsonString(text) +
                         ": expected \"fail\", \"slow MS\" or \"fail MS\"");
  }
  return behaviour;
}

DriverAttribute driverAttribute(std::string_view path) {
  const auto split = splitDevicePath(path);
  if (!split) return {};
  DriverAttribute attribute{split->device, 0444, AttributeStore::kNone};
  const std::string_view rest = split->rest;
  if (rest == "reset") {
    // DEVICE_ATTR(reset, S_IWUSR | S_IRUSR, ...) (neuron_cdev.c:2993).
    attribute.mode = 0600;
    attribute.store = AttributeStore::kReset;
  } else if (rest == "core_count" || rest == "connected_devices") {
    // S_IRUSR and no store (neuron_cdev.c:3002,3037).
    attribute.mode = 0400;
  } else if (inMetricTree(rest)) {
    // S_IWUSR | S_IRUGO, with a store for every file (neuron_sysfs_metrics.c:486-511).
    attribute.mode = 0644;
    const std::string_view name = rest.substr(rest.rfind('/') + 1);
    if (name == "total" || name == "present" || name == "peak") {
      // The TOTAL, PRESENT and PEAK stores zero their value whatever is written (:402-452).
      attribute.store = AttributeStore::kClearCounter;
    } else if (rest == "info/notify_delay") {
      attribute.store = AttributeStore::kNotifyDelay;  // :458-468
    } else {
      // The OTHER store: pr_err, and the write "succeeds" (:469-473).
      attribute.store = AttributeStore::kIgnored;
    }
  }
  // Anything else the tree holds (the kernel's dev and uevent, the simulator's own link-speed
  // files) is served read-only.
  return attribute;
}

SimulatedResets::SimulatedResets(SimulatedResetOptions options) : options_(std::move(options)) {}

fs::path SimulatedResets::deviceDir(int device) const {
  return options_.treeRoot / "sys" / "devices" / "virtual" / "neuron_device" /
         ("neuron" + std::to_string(device));
}

fs::path SimulatedResets::repairableCounter(int device) const {
  return deviceDir(device) / "stats" / "hardware" / "mem_ecc_repairable_uncorrected";
}

void SimulatedResets::settleLocked(int device, DeviceState& state) {
  if (!state.resetting || options_.now() < state.readyAt) return;
  state.resetting = false;
  state.settled = state.outcome;
  if (state.outcome == kStateReady) {
    // The simulator's model of the firmware, not of the driver: a device reset is what carries out
    // the repair an uncorrectable HBM error waits for. The driver only reports the firmware's
    // repair state, and mem_ecc_repairable_uncorrected counts UEs only while it is 0x1 "pending"
    // (v3/neuron_dhal_v3.c:1081-1124), so once repaired the counter reads 0. The repair is of
    // what was pending when the reset was asked for: an error that comes while the reset runs
    // waits for the next one.
    if (state.repairPending) replaceFile(repairableCounter(device), "0\n");
  } else {
    // A reset that fails is counted in every core's reset_fail_count when it ends
    // (nr_reset_thread_fn, neuron_reset.c:121,131,139; nsysfsmetric_inc_reset_fail_count,
    // neuron_sysfs_metrics.c:1081-1103).
    for (const fs::path& core : coreDirs(deviceDir(device))) {
      incrementCounter(core / "stats" / "other_info" / "reset_fail_count");
    }
  }
}

ResetRequest SimulatedResets::write(int device, std::string_view text) {
  // driver_reset_store never reads buf: any write requests the reset (neuron_cdev.c:2979-2990).
  static_cast<void>(text);
  // It requests it only while open_count is 0 (:2985), and ncdev_open raises open_count for every
  // open but a write-only one (:50,2822-2830): the holder scan skips write-only descriptors too.
  const std::string node = (options_.devRoot / ("neuron" + std::to_string(device))).string();
  const reset::HolderScan scan = reset::findHoldersOfAny(options_.procRoot, {node});
  std::lock_guard lock(mutex_);
  if (const auto held = scan.holders.find(node); held != scan.holders.end()) {
    ++counts_.ignoredWhileHeld;
    TORUS_LOG(Info, Simulator, "reset ignored: the device is open, as the driver ignores it",
              {"device", device}, {"holder_pid", held->second.front().pid},
              {"holder", held->second.front().command});
    return ResetRequest::kIgnoredWhileHeld;
  }
  DeviceState& state = devices_[device];
  settleLocked(device, state);
  if (state.resetting) {
    // The device's NEURON_RESET_REQUEST_ALL stays on the pending list until its reset ends
    // (neuron_reset.c:155-173), and nr_start_ncs drops a request already there: "Pending reset
    // request ... already exists!" (:261-265). The running reset keeps its end.
    ++counts_.droppedWhilePending;
    TORUS_LOG(Info, Simulator, "reset dropped: one is pending, as the driver drops it",
              {"device", device});
    return ResetRequest::kDroppedWhilePending;
  }
  ResetBehaviour behaviour{options_.defaultDuration, false};
  const fs::path file = resetBehaviourFile(options_.treeRoot, device);
  if (std::error_code ec; fs::exists(file, ec)) {
    auto contents = readSmallFile(file, 256);
    auto parsed = contents ? parseResetBehaviour(*contents, options_.defaultDuration)
                           : Result<ResetBehaviour>(std::move(contents).error());
    if (parsed) {
      behaviour = *parsed;
    } else {
      TORUS_LOG(Warn, Simulator, "unreadable reset behaviour; the default reset runs",
                {"file", file.string()}, {"error", parsed.error().message});
    }
  }
  // nr_start_ncs, at request time: the state reads RESET (neuron_reset.c:267-269) and every
  // core's reset_req_count counts the request (:270-279; the file is
  // neuron_coreM/stats/other_info/reset_req_count, neuron_sysfs_metrics.c:133,696-706).
  state.resetting = true;
  state.outcome = behaviour.fails ? kStateInvalid : kStateReady;
  state.repairPending = awaitsRepair(repairableCounter(device));
  state.readyAt = options_.now() + behaviour.duration;
  for (const fs::path& core : coreDirs(deviceDir(device))) {
    incrementCounter(core / "stats" / "other_info" / "reset_req_count");
  }
  ++counts_.started;
  if (behaviour.fails) ++counts_.failed;
  TORUS_LOG(Info, Simulator, "reset started", {"device", device},
            {"duration_ms", static_cast<std::int64_t>(behaviour.duration.count())},
            {"ends", behaviour.fails ? "INVALID" : "READY"});
  return ResetRequest::kStarted;
}

std::string SimulatedResets::read(int device) {
  std::lock_guard lock(mutex_);
  DeviceState& state = devices_[device];
  settleLocked(device, state);
  return std::to_string(state.resetting ? kStateReset : state.settled) + "\n";
}

void SimulatedResets::settle(int device) {
  std::lock_guard lock(mutex_);
  if (const auto found = devices_.find(device); found != devices_.end()) {
    settleLocked(device, found->second);
  }
}

void SimulatedResets::writeMetric(std::string_view path, AttributeStore store,
                                  std::string_view text) {
  const auto split = splitDevicePath(path);
  if (!split) return;
  std::lock_guard lock(mutex_);
  switch (store) {
    case AttributeStore::kClearCounter:
      replaceFile(deviceDir(split->device) / split->rest, "0\n");
      return;
    case AttributeStore::kNotifyDelay: {
      // Only -1 and 0 are taken; anything else is logged and ignored (neuron_sysfs_metrics.c:
      // 458-468). The flag is the module's, not the device's (nsysfsmetric_notify, :63), so every
      // device's notify_delay shows it (:340-344).
      const std::optional<std::int64_t> delay = kernelStrtoll(text);
      if (delay != 0 && delay != -1) return;
      const std::string shown = std::to_string(*delay) + "\n";
      std::error_code ec;
      for (const fs::directory_entry& entry :
           fs::directory_iterator(deviceDir(split->device).parent_path(), ec)) {
        const fs::path file = entry.path() / "info" / "notify_delay";
        if (fs::exists(file, ec)) replaceFile(file, shown);
      }
      return;
    }
    case AttributeStore::kNone:
    case AttributeStore::kReset:
    case AttributeStore::kIgnored:
      return;
  }
}

SimulatedResets::Counts SimulatedResets::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

}  // namespace torus::simulator
