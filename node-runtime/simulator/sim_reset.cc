#include "node-runtime/simulator/sim_reset.h"

#include "common/base/file_io.h"
#include "common/base/log.h"
#include "common/base/parse.h"
#include "common/base/strings.h"
#include "node-runtime/reset/core_reset.h"

namespace torus::simulator {

namespace fs = std::filesystem;

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

SimulatedResets::SimulatedResets(SimulatedResetOptions options) : options_(std::move(options)) {}

void SimulatedResets::settle(DeviceState& state) {
  if (state.resetting && options_.now() >= state.readyAt) {
    state.resetting = false;
    state.settled = state.outcome;
  }
}

Result<void> SimulatedResets::write(int device, std::string_view text) {
  if (trim(text) != "1") {
    return makeError(ErrorCode::kInvalidArgument, "neuron" + std::to_string(device) +
                                                      "/reset: only 1 starts a reset, got " +
                                                      quoteJsonString(text));
  }
  const std::string node = (options_.devRoot / ("neuron" + std::to_string(device))).string();
  const reset::HolderScan scan = reset::findHoldersOfAny(options_.procRoot, {node});
  std::lock_guard lock(mutex_);
  if (const auto held = scan.holders.find(node); held != scan.holders.end()) {
    ++counts_.ignoredWhileHeld;
    TORUS_LOG(Info, Simulator, "reset ignored: the device is open, as the driver ignores it",
              {"device", device}, {"holder_pid", held->second.front().pid},
              {"holder", held->second.front().command});
    return okResult();
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
  DeviceState& state = devices_[device];
  state.resetting = true;
  state.outcome = behaviour.fails ? 2 : 1;
  state.readyAt = options_.now() + behaviour.duration;
  ++counts_.started;
  if (behaviour.fails) ++counts_.failed;
  TORUS_LOG(Info, Simulator, "reset started", {"device", device},
            {"duration_ms", static_cast<std::int64_t>(behaviour.duration.count())},
            {"ends", behaviour.fails ? "INVALID" : "READY"});
  return okResult();
}

std::string SimulatedResets::read(int device) {
  std::lock_guard lock(mutex_);
  DeviceState& state = devices_[device];
  settle(state);
  return std::to_string(state.resetting ? 0 : state.settled) + "\n";
}

SimulatedResets::Counts SimulatedResets::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

}  // namespace torus::simulator
