#include "node-runtime/agent/rules/aws_health.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/base/utc_time.h"
#include "common/kube/object_fields.h"

namespace torus::agent {
namespace {

// AWS's four rules: the kernel's type, NPD's reason suffix, the monitoring agent's reason and
// message.
struct AwsErrorType {
  const char* type;
  const char* monitoringAgentReason;
  const char* monitoringAgentMessage;
};
constexpr AwsErrorType kAwsErrorTypes[] = {
    {"SRAM_UNCORRECTABLE_ERROR", "NeuronSRAMUncorrectableError",
     "Discovered SRAM Uncorrectable Error"},
    {"NC_UNCORRECTABLE_ERROR", "NeuronNCUncorrectableError", "Discovered NC Uncorrectable Error"},
    {"HBM_UNCORRECTABLE_ERROR", "NeuronHBMUncorrectableError",
     "Discovered HBM Uncorrectable Error"},
    {"DMA_ERROR", "NeuronDMAError", "Discovered DMA Error"},
};

const AwsErrorType* awsTypeOf(const std::string& type) {
  for (const AwsErrorType& known : kAwsErrorTypes) {
    if (type == known.type) return &known;
  }
  return nullptr;
}

std::string describe(const std::vector<const HardwareErrorSeen*>& errors) {
  std::string text;
  for (const HardwareErrorSeen* error : errors) {
    if (!text.empty()) text += "; ";
    text += "NEURON_HW_ERR=" + error->type + " on " +
            (error->device >= 0 ? "neuron" + std::to_string(error->device) : "no named device") +
            " (" + std::to_string(error->count) + (error->count == 1 ? " time" : " times") +
            ", last " + utcRfc3339(error->lastWall) + ")";
  }
  return text;
}

}  // namespace

Result<AwsHealthClear> parseAwsHealthClear(const std::string& text) {
  if (text == "reboot") return AwsHealthClear::kReboot;
  if (text == "hold") return AwsHealthClear::kHold;
  return makeError(ErrorCode::kInvalidArgument,
                   "must be reboot (cleared when the node reboots) or hold (cleared once "
                   "--kernel-error-hold passes without another error), got '" +
                       text + "'");
}

void HardwareErrorLog::report(const std::string& type, int device) {
  {
    std::lock_guard lock(mutex_);
    const auto key = std::make_pair(type, device);
    auto it = seen_.find(key);
    if (it == seen_.end() && seen_.size() >= kMaxEntries) {
      it = std::min_element(seen_.begin(), seen_.end(), [](const auto& a, const auto& b) {
        return a.second.last < b.second.last;
      });
    } else if (it == seen_.end()) {
      HardwareErrorSeen fresh;
      fresh.type = type;
      fresh.device = device;
      it = seen_.emplace(key, std::move(fresh)).first;
    }
    ++it->second.count;
    it->second.last = std::chrono::steady_clock::now();
    it->second.lastWall = std::chrono::system_clock::now();
  }
  notifier_.notify();
}

std::vector<HardwareErrorSeen> HardwareErrorLog::seen() const {
  std::lock_guard lock(mutex_);
  std::vector<HardwareErrorSeen> out;
  for (const auto& [key, error] : seen_)
    out.push_back(error);
  return out;
}

AwsConditions awsHealthConditions(const std::vector<HardwareErrorSeen>& seen,
                                  const AwsHealthOptions& options,
                                  std::chrono::steady_clock::time_point now,
                                  const std::optional<NodeCondition>& inheritedNeuronHealth) {
  AwsConditions out;
  std::vector<const HardwareErrorSeen*> standing;
  for (const HardwareErrorSeen& error : seen) {
    if (awsTypeOf(error.type) == nullptr) continue;
    if (options.clear == AwsHealthClear::kHold) {
      const auto clearsAt = error.last + options.hold;
      if (clearsAt <= now) continue;
      if (!out.changesAt || clearsAt < *out.changesAt) out.changesAt = clearsAt;
    }
    standing.push_back(&error);
  }
  const HardwareErrorSeen* latest = nullptr;
  for (const HardwareErrorSeen* error : standing) {
    if (latest == nullptr || error->last > latest->last) latest = error;
  }
  if (options.neuronHealth) {
    if (latest != nullptr) {
      out.conditions.push_back(
          {"NeuronHealth", "True", "NeuronHasError_" + latest->type, describe(standing)});
    } else if (inheritedNeuronHealth && options.clear == AwsHealthClear::kReboot) {
      out.conditions.push_back(*inheritedNeuronHealth);
    } else {
      out.conditions.push_back(
          {"NeuronHealth", "False", "NeuronHasNoError", "Neuron has no error"});
    }
  }
  if (options.acceleratedHardwareReady) {
    if (latest != nullptr) {
      const AwsErrorType* type = awsTypeOf(latest->type);
      out.conditions.push_back(
          {"AcceleratedHardwareReady", "False", type->monitoringAgentReason,
           std::string(type->monitoringAgentMessage) + ": " + describe(standing)});
    } else {
      out.conditions.push_back({"AcceleratedHardwareReady", "True",
                                "NeuronAcceleratedHardwareIsReady",
                                "Monitoring for the Neuron AcceleratedHardware system is active"});
    }
  }
  return out;
}

std::optional<NodeCondition> neuronHealthOfThisBoot(
    const nlohmann::json& node, std::chrono::system_clock::time_point bootTime) {
  const nlohmann::json& conditions = kube::fieldAt(node, {"status", "conditions"});
  if (!conditions.is_array()) return std::nullopt;
  for (const nlohmann::json& condition : conditions) {
    if (kube::stringAt(condition, {"type"}) != "NeuronHealth" ||
        kube::stringAt(condition, {"status"}) != "True") {
      continue;
    }
    const auto at = parseUtcRfc3339(kube::stringAt(condition, {"lastTransitionTime"}));
    if (!at || *at < bootTime) return std::nullopt;
    return NodeCondition{"NeuronHealth", "True", kube::stringAt(condition, {"reason"}),
                         kube::stringAt(condition, {"message"})};
  }
  return std::nullopt;
}

std::optional<std::chrono::system_clock::time_point> hostBootTime(const std::string& procStat) {
  std::ifstream in(procStat);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("btime ", 0) != 0) continue;
    long long seconds = 0;
    std::istringstream value(line.substr(6));
    if (!(value >> seconds) || seconds <= 0) return std::nullopt;
    return std::chrono::system_clock::time_point(std::chrono::seconds(seconds));
  }
  return std::nullopt;
}

}  // namespace torus::agent
