#include "node-runtime/agent/kube/node_publisher.h"

#include <chrono>

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/base/utc_time.h"
#include "common/contracts/kubelet_view.h"
#include "common/kube/event_object.h"
#include "common/kube/object_fields.h"

namespace torus::agent {
namespace {

using nlohmann::json;

// The keys of `wanted` that differ from `current`, and null for keys we own that went away.
json changedKeys(const std::map<std::string, std::string>& current,
                 const std::map<std::string, std::string>& wanted) {
  json changes = json::object();
  for (const auto& [key, value] : wanted) {
    const auto it = current.find(key);
    if (it == current.end() || it->second != value) changes[key] = value;
  }
  for (const auto& [key, value] : current) {
    if (wanted.count(key) == 0) changes[key] = nullptr;
  }
  return changes;
}

}  // namespace

NodePublisher::NodePublisher(const kube::KubeConfig& config, std::string nodeName,
                             health::NodeMonitor& monitor, HardwareErrorLog* errors,
                             AwsHealthOptions aws)
    : client_(config),
      nodeName_(std::move(nodeName)),
      monitor_(monitor),
      errors_(errors),
      aws_(aws) {
  const auto markDirty = [this] {
    std::lock_guard lock(mutex_);
    dirty_ = true;
    wake_.notify_all();
  };
  subscription_ = monitor_.onChange(markDirty);
  if (errors_ != nullptr) errorSubscription_ = errors_->onChange(markDirty);
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

NodePublisher::~NodePublisher() {
  subscription_ = {};
  errorSubscription_ = {};
  thread_.request_stop();
  client_.cancel();
}

std::uint64_t NodePublisher::publishes() const {
  std::lock_guard lock(mutex_);
  return publishes_;
}

Result<void> NodePublisher::forgetStaleKeys() {
  // Keys an earlier agent set (an UltraServer label, say) that may no longer apply: start from
  // what the node carries, so the first patch also removes them.
  auto node = client_.get("/api/v1/nodes/" + nodeName_);
  if (!node) return std::move(node).error();
  const auto collect = [](const json& object, const char* field,
                          bool (*owned)(const std::string&)) {
    std::map<std::string, std::string> keys;
    const auto metadata = object.find("metadata");
    if (metadata == object.end() || !metadata->contains(field)) return keys;
    for (const auto& [key, value] : (*metadata)[field].items()) {
      if (owned(key) && value.is_string()) keys[key] = value.get<std::string>();
    }
    return keys;
  };
  labels_ = collect(*node, "labels", ownedLabel);
  // torus.dev/kubelet-unavailable is KubeletViewPublisher's: not ours to remove.
  annotations_ = collect(*node, "annotations", [](const std::string& key) {
    return ownedAnnotation(key) && key != contracts::kKubeletUnavailableAnnotation;
  });
  // The conditions we own as the node has them, so an unchanged one is not patched again.
  if (const json& conditions = kube::fieldAt(*node, {"status", "conditions"});
      conditions.is_array()) {
    for (const json& condition : conditions) {
      const std::string type = kube::stringAt(condition, {"type"});
      if (type == "NeuronHealthy" || type == "NeuronHealth" || type == "AcceleratedHardwareReady") {
        conditions_[type] = {type, kube::stringAt(condition, {"status"}),
                             kube::stringAt(condition, {"reason"}),
                             kube::stringAt(condition, {"message"})};
      }
    }
  }
  // An error condition set during this boot by an agent that restarted since stays (reboot
  // policy); one from before the boot does not.
  if (const auto boot = hostBootTime("/proc/stat")) {
    inheritedNeuronHealth_ = neuronHealthOfThisBoot(*node, *boot);
  }
  return okResult();
}

Result<void> NodePublisher::publish(
    const NodeMetadata& wanted, std::optional<std::chrono::steady_clock::time_point>& changesAt) {
  if (!stalesForgotten_) {
    if (auto read = forgetStaleKeys(); !read) return read;
    stalesForgotten_ = true;
  }
  const json labels = changedKeys(labels_, wanted.labels);
  const json annotations = changedKeys(annotations_, wanted.annotations);
  if (!labels.empty() || !annotations.empty()) {
    json patch;
    if (!labels.empty()) patch["metadata"]["labels"] = labels;
    if (!annotations.empty()) patch["metadata"]["annotations"] = annotations;
    if (auto patched = client_.mergePatch("/api/v1/nodes/" + nodeName_, patch); !patched) {
      return std::move(patched).error();
    }
    labels_ = wanted.labels;
    annotations_ = wanted.annotations;
    TORUS_LOG(Info, Agent, "node labels and annotations published", {"node", nodeName_},
              {"changed_keys", static_cast<int>(labels.size() + annotations.size())});
  }
  std::vector<NodeCondition> conditions = {
      {"NeuronHealthy", wanted.healthy ? "True" : "False", wanted.reason, wanted.message}};
  // AWS's conditions speak for the kernel log: without it followed they are not set at all,
  // rather than claim "no error".
  if (errors_ != nullptr) {
    const AwsConditions aws = awsHealthConditions(
        errors_->seen(), aws_, std::chrono::steady_clock::now(), inheritedNeuronHealth_);
    conditions.insert(conditions.end(), aws.conditions.begin(), aws.conditions.end());
    changesAt = aws.changesAt;
  }
  return publishConditions(conditions);
}

Result<void> NodePublisher::publishConditions(const std::vector<NodeCondition>& wanted) {
  const std::string now = utcNowRfc3339();
  json changed = json::array();
  for (const NodeCondition& condition : wanted) {
    const auto known = conditions_.find(condition.type);
    if (known != conditions_.end() && known->second == condition) continue;
    json entry = {{"type", condition.type},
                  {"status", condition.status},
                  {"reason", condition.reason},
                  {"message", condition.message},
                  {"lastHeartbeatTime", now}};
    // Merged by type: a field left out keeps its value, so the transition time stays put
    // while only the message changes.
    if (known == conditions_.end() || known->second.status != condition.status) {
      entry["lastTransitionTime"] = now;
    }
    changed.push_back(std::move(entry));
  }
  if (changed.empty()) return okResult();
  const json patch = {{"status", {{"conditions", changed}}}};
  if (auto patched = client_.strategicMergePatch("/api/v1/nodes/" + nodeName_ + "/status", patch);
      !patched) {
    return std::move(patched).error();
  }
  for (const NodeCondition& condition : wanted) {
    const auto known = conditions_.find(condition.type);
    if (known == conditions_.end() || !(known->second == condition)) {
      // NeuronHealth is a problem condition (True: an error); the others say True when well.
      const bool problem = (condition.type == "NeuronHealth") == (condition.status == "True");
      TORUS_LOG_AT(problem ? log::Level::kWarn : log::Level::kInfo, Agent,
                   "node condition published", {"node", nodeName_}, {"type", condition.type},
                   {"status", condition.status}, {"reason", condition.reason});
    }
    conditions_[condition.type] = condition;
  }
  return okResult();
}

void NodePublisher::postLncEvent(int lnc, std::optional<int> pendingLnc) {
  if (pendingLnc == lastPendingLnc_) return;
  const bool deferred = pendingLnc.has_value();
  const std::string reason = deferred ? "LNCChangeDeferred" : "LNCChangeApplied";
  const std::string message =
      deferred ? "logical_nc_config asks for LNC " + std::to_string(*pendingLnc) +
                     ", which renumbers every core; LNC " + std::to_string(lnc) +
                     " stays in force until no pod holds a core on this node"
               : "LNC " + std::to_string(lnc) + " is in force";
  if (!deferred && !lastPendingLnc_) return;  // nothing was pending: nothing to report
  // Node events live in "default", as kubelet's do, so `kubectl describe node` shows them.
  const json event = kube::eventObject({"Node", nodeName_, "", nodeName_}, "default", !deferred,
                                       reason, message, "neuron-node-agent", nodeName_);
  if (auto posted = client_.create("/api/v1/namespaces/default/events", event); !posted) {
    TORUS_LOG(Warn, Agent, "could not post a node event", {"reason", reason},
              {"error", posted.error().message});
  }
  lastPendingLnc_ = pendingLnc;
}

void NodePublisher::run(std::stop_token stop) {
  std::chrono::milliseconds backoff(500);
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    wake_.wait(lock, stop, [&] { return dirty_; });
    if (stop.stop_requested()) return;
    dirty_ = false;
    lock.unlock();
    const std::optional<int> pendingLnc = monitor_.pendingLnc();
    const topology::Node node = monitor_.node();
    std::optional<std::chrono::steady_clock::time_point> changesAt;
    auto published = publish(nodeMetadata(node, pendingLnc), changesAt);
    if (published) postLncEvent(node.lnc, pendingLnc);
    lock.lock();
    if (published) {
      ++publishes_;
      backoff = std::chrono::milliseconds(500);
      // A condition that clears by itself (the hold policy) is published when it does.
      if (changesAt && !dirty_) {
        if (!wake_.wait_until(lock, stop, *changesAt, [&] { return dirty_; })) dirty_ = true;
      }
      continue;
    }
    if (stop.stop_requested()) return;
    TORUS_LOG(Warn, Agent, "could not publish node metadata", {"node", nodeName_},
              {"error", published.error().message},
              {"retry_in_ms", static_cast<std::int64_t>(backoff.count())});
    dirty_ = true;
    wake_.wait_for(lock, stop, backoff, [] { return false; });
    backoff = std::min(backoff * 2, std::chrono::milliseconds(30'000));
  }
}

}  // namespace torus::agent
