// The node conditions AWS's recovery tooling acts on, from the kernel log's NEURON_HW_ERR lines:
//
//   NeuronHealth (AWS's Neuron node-problem-detector rules; neuron-node-recovery replaces the
//   instance on its NeuronHasError_* reasons): False "NeuronHasNoError", or True
//   "NeuronHasError_<TYPE>" for SRAM_/NC_/HBM_UNCORRECTABLE_ERROR and DMA_ERROR.
//   AcceleratedHardwareReady (the EKS node monitoring agent; node auto repair replaces on these
//   Fatal reasons): True "NeuronAcceleratedHardwareIsReady", or False
//   "Neuron{SRAM,NC,HBM}UncorrectableError" / "NeuronDMAError".
//
// Only those four error types count, as in AWS's rules; the reason names the most recent one and
// the message lists every device and count. When a condition clears is a policy: `reboot` (as
// AWS's permanent rule: the error stands until the node reboots; an agent restart on the same
// boot keeps a condition set during it) or `hold` (clear once the kernel error hold passes with
// no new error, as Torus's own device health does). Pure, except for the thread-safe log.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/base/change_notifier.h"
#include "common/base/result.h"

namespace torus::agent {

enum class AwsHealthClear { kReboot, kHold };
Result<AwsHealthClear> parseAwsHealthClear(const std::string& text);

struct AwsHealthOptions {
  bool neuronHealth = true;
  bool acceleratedHardwareReady = false;
  AwsHealthClear clear = AwsHealthClear::kReboot;
  std::chrono::milliseconds hold{std::chrono::minutes(5)};
};

struct NodeCondition {
  std::string type;
  std::string status;  // "True" / "False"
  std::string reason;
  std::string message;
  bool operator==(const NodeCondition&) const = default;
};

// One error type on one device (-1: the line named none), since the agent started.
struct HardwareErrorSeen {
  std::string type;
  int device = -1;
  int count = 0;
  std::chrono::steady_clock::time_point last;
  std::chrono::system_clock::time_point lastWall;
};

// Thread-safe: what the kernel log reported, for the publisher. Bounded: at most kMaxEntries
// (type, device) pairs; further new pairs only raise the count of the oldest.
class HardwareErrorLog {
 public:
  static constexpr std::size_t kMaxEntries = 256;
  void report(const std::string& type, int device);
  std::vector<HardwareErrorSeen> seen() const;
  ChangeNotifier::Subscription onChange(std::function<void()> notify) {
    return notifier_.subscribe(std::move(notify));
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, HardwareErrorSeen> seen_;
  ChangeNotifier notifier_;
};

struct AwsConditions {
  std::vector<NodeCondition> conditions;
  // When they would change with no new error (the hold policy's expiry), if ever.
  std::optional<std::chrono::steady_clock::time_point> changesAt;
};

// `inheritedNeuronHealth`: a True NeuronHealth the node already carried from this boot when the
// agent started (reboot policy), kept until the node reboots.
AwsConditions awsHealthConditions(const std::vector<HardwareErrorSeen>& seen,
                                  const AwsHealthOptions& options,
                                  std::chrono::steady_clock::time_point now,
                                  const std::optional<NodeCondition>& inheritedNeuronHealth = {});

// The node's NeuronHealth condition when it is an error set during the current boot (its
// lastTransitionTime is after `bootTime`); what an agent restart must not clear.
std::optional<NodeCondition> neuronHealthOfThisBoot(const nlohmann::json& node,
                                                    std::chrono::system_clock::time_point bootTime);
// The host's boot time from /proc/stat's btime; nullopt when unreadable.
std::optional<std::chrono::system_clock::time_point> hostBootTime(const std::string& procStat);

}  // namespace torus::agent
