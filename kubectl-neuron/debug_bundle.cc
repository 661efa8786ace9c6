#include "kubectl-neuron/debug_bundle.h"

#include <set>

#include "common/base/stable_hash.h"
#include "common/base/tar_archive.h"
#include "common/base/utc_time.h"
#include "common/contracts/agent_debug_report.h"
#include "common/contracts/dra_names.h"
#include "common/kube/object_fields.h"
#include "kubectl-neuron/debug_summaries.h"

namespace torus::kubectl_neuron {
namespace {

namespace key = contracts::debug_report;
using nlohmann::json;

bool onDevice(const json& indices, std::optional<int> device) {
  if (!device) return true;
  for (const json& index : indices.is_array() ? indices : json::array()) {
    if (index.is_number_integer() && index.get<int>() == *device) return true;
  }
  return false;
}

// The claims and pods on the device (or on any of the node's devices), from what the agent was
// told by kubelet and DRA, and from the claims the API allocated on the node.
struct Holders {
  std::set<std::string> claims;  // namespace/name
  std::set<std::string> pods;    // namespace/name
};

Holders holdersOf(const DebugInputs& inputs) {
  Holders holders;
  if (inputs.agentReport) {
    const json& allocations = kube::fieldAt(*inputs.agentReport, {key::kAllocations});
    for (const json& holder : kube::arrayAt(allocations, {key::kHolders})) {
      if (onDevice(kube::fieldAt(holder, {key::kHeldDevices}), inputs.device))
        holders.pods.insert(kube::stringAt(holder, {key::kHolderPod}));
    }
    for (const json& claim : kube::arrayAt(allocations, {key::kClaims})) {
      if (!onDevice(kube::fieldAt(claim, {key::kHeldDevices}), inputs.device)) continue;
      holders.claims.insert(kube::stringAt(claim, {key::kClaimName}));
      for (const json& user : kube::arrayAt(claim, {key::kClaimContainers}))
        holders.pods.insert(kube::stringAt(user, {key::kClaimUserPod}));
    }
  }
  if (inputs.claims) {
    for (const json& claim : kube::arrayAt(*inputs.claims, {"items"})) {
      bool here = false;
      for (const json& result :
           kube::arrayAt(claim, {"status", "allocation", "devices", "results"})) {
        if (kube::stringAt(result, {"driver"}) != dra::kDriverName ||
            kube::stringAt(result, {"pool"}) != inputs.node) {
          continue;
        }
        const auto named = dra::parseDeviceName(kube::stringAt(result, {"device"}));
        // A core device's chip depends on the LNC; the agent's allocations cover prepared ones.
        here = here || !inputs.device ||
               (named &&
                (named->kind == dra::NamedDevice::Kind::kNode ||
                 (named->kind == dra::NamedDevice::Kind::kChip && named->index == *inputs.device)));
      }
      const std::string key = kube::stringAt(claim, {"metadata", "namespace"}) + "/" +
                              kube::stringAt(claim, {"metadata", "name"});
      if (!here && !holders.claims.contains(key)) continue;
      holders.claims.insert(key);
      for (const json& user : kube::arrayAt(claim, {"status", "reservedFor"})) {
        if (kube::stringAt(user, {"resource"}) == "pods")
          holders.pods.insert(kube::stringAt(claim, {"metadata", "namespace"}) + "/" +
                              kube::stringAt(user, {"name"}));
      }
    }
  }
  return holders;
}

std::string keyOf(const json& object) {
  return kube::stringAt(object, {"metadata", "namespace"}) + "/" +
         kube::stringAt(object, {"metadata", "name"});
}

class Writer {
 public:
  Writer(std::string directory, std::chrono::system_clock::time_point at)
      : directory_(std::move(directory)), tar_(at) {
    (void)tar_.addDirectory(directory_);
  }

  void add(const std::string& file, const std::string& what, const std::string& source,
           std::string_view content) {
    const std::string clean = redactSecrets(content);
    if (auto added = tar_.addFile(directory_ + "/" + file, clean); !added) {
      parts_.push_back({"", what, source, 0, redactSecrets(added.error().message)});
      return;
    }
    parts_.push_back({file, what, source, clean.size(), ""});
  }
  void addJson(const std::string& file, const std::string& what, const std::string& source,
               const json& value) {
    add(file, what, source, value.dump(2) + "\n");
  }
  // Why a part is missing may quote what an API server or a pod answered: it is shown on the
  // terminal and kept in the manifest, so it is scrubbed as the parts are.
  void missing(const std::string& what, const std::string& source, const std::string& why) {
    parts_.push_back({"", what, source, 0, redactSecrets(why)});
  }
  // A file of a tree (the driver's): counted in its summary part, not one part per file.
  bool addTreeFile(const std::string& file, std::string_view content) {
    return static_cast<bool>(tar_.addFile(directory_ + "/" + file, redactSecrets(content)));
  }

  std::vector<DebugPart>& parts() { return parts_; }
  std::string finish(const json& manifest) && {
    (void)tar_.addFile(directory_ + "/manifest.json", redactSecrets(manifest.dump(2)) + "\n");
    return std::move(tar_).finish();
  }

 private:
  std::string directory_;
  TarArchive tar_;
  std::vector<DebugPart> parts_;
};

void addAgentReport(Writer& out, const DebugInputs& inputs) {
  const std::string source = "neuron-node-agent debug in " + inputs.agentPod + " (pods/exec)";
  if (!inputs.agentReport) {
    out.missing("the agent's report", source, inputs.agentReport.error().message);
    return;
  }
  const json& report = *inputs.agentReport;
  json state = report;
  state.erase(key::kMetrics);
  state.erase(key::kAllocations);
  if (state.contains(key::kKernelLog) && state[key::kKernelLog].is_object())
    state[key::kKernelLog].erase(key::kKernelLogLines);
  if (const auto devices = state.find(key::kDevices);
      devices != state.end() && devices->is_array()) {
    for (json& device : *devices) {
      if (device.is_object()) device.erase(key::kDeviceDriver);  // in devices/ as files
    }
  }
  out.addJson("agent/state.json", "the agent's view: node, each device's health and causes", source,
              state);

  std::string lines;
  for (const json& line : kube::arrayAt(report, {key::kKernelLog, key::kKernelLogLines})) {
    lines += kube::stringAt(line, {key::kLineSeenAt}) +
             " device=" + kube::fieldAt(line, {key::kLineDevice}).dump() + " " +
             kube::stringAt(line, {key::kLineType}) + ": " +
             kube::stringAt(line, {key::kLineText}) + "\n";
  }
  out.add("agent/kernel-log.txt",
          "the kernel log's Neuron hardware-error lines the agent read" +
              std::string(inputs.device ? " about the device" : ""),
          source + ", from " + kube::stringAt(report, {key::kKernelLog, key::kKernelLogSource}),
          lines);
  const json& metrics = kube::fieldAt(report, {key::kMetrics});
  out.add("agent/metrics.txt", "a /metrics snapshot", source,
          metrics.is_string() ? metrics.get<std::string>() : "");
  out.addJson("agent/allocations.json", "who holds which cores and chips, as the agent knows it",
              source, kube::fieldAt(report, {key::kAllocations}));

  for (const json& device : kube::arrayAt(report, {key::kDevices})) {
    const json& index = kube::fieldAt(device, {key::kDeviceIndex});
    if (!index.is_number_integer()) continue;
    const std::string dir = "devices/neuron" + std::to_string(index.get<int>());
    const json& driver = kube::fieldAt(device, {key::kDeviceDriver});
    if (!driver.is_object()) continue;
    json notes = driver;
    notes.erase(key::kDriverFiles);
    std::size_t written = 0;
    json skipped = json::array();
    for (const auto& [name, content] : kube::fieldAt(driver, {key::kDriverFiles}).items()) {
      if (content.is_string() &&
          out.addTreeFile(dir + "/sys/" + name, content.get<std::string>())) {
        ++written;
      } else {
        skipped.push_back(name);
      }
    }
    if (!skipped.empty()) notes["notArchived"] = std::move(skipped);
    out.addJson(dir + "/driver.json",
                "the driver's files of neuron" + std::to_string(index.get<int>()) + ": " +
                    std::to_string(written) + " under " + dir +
                    "/sys; links, unreadable files, PCI function attributes, device node",
                source + ", from " + kube::stringAt(driver, {key::kDriverDirectory}), notes);
  }
}

void addCluster(Writer& out, const DebugInputs& inputs) {
  if (inputs.nodeObject) {
    out.addJson("cluster/node.json", "the Node: conditions, capacity, allocatable, taints, labels",
                "GET nodes/" + inputs.node, nodeSummary(*inputs.nodeObject));
  } else {
    out.missing("the Node", "GET nodes/" + inputs.node, inputs.nodeObject.error().message);
  }
  if (inputs.events) {
    json events = json::array();
    for (const json& event : kube::arrayAt(*inputs.events, {"items"}))
      events.push_back(eventSummary(event));
    out.addJson("cluster/events.json", "the Node's events", "GET events (involvedObject: the Node)",
                events);
  } else {
    out.missing("the Node's events", "GET events", inputs.events.error().message);
  }
  const Holders holders = holdersOf(inputs);
  const std::string scope = inputs.device ? "on the device" : "using the node's Neuron devices";
  if (inputs.pods) {
    json pods = json::array();
    for (const json& pod : kube::arrayAt(*inputs.pods, {"items"})) {
      if (holders.pods.contains(keyOf(pod))) pods.push_back(podSummary(pod));
    }
    out.addJson("cluster/pods.json", "the pods " + scope + " (status, requests, claims)",
                "GET pods (spec.nodeName)", pods);
  } else {
    out.missing("the pods " + scope, "GET pods", inputs.pods.error().message);
  }
  if (inputs.claims) {
    json claims = json::array();
    for (const json& claim : kube::arrayAt(*inputs.claims, {"items"})) {
      if (holders.claims.contains(keyOf(claim))) claims.push_back(claimSummary(claim));
    }
    out.addJson("cluster/claims.json", "the ResourceClaims " + scope + " (allocation, users)",
                "GET resourceclaims", claims);
  } else {
    out.missing("the ResourceClaims " + scope, "GET resourceclaims", inputs.claims.error().message);
  }
  if (inputs.slices) {
    json slices = json::array();
    for (const json& slice : kube::arrayAt(*inputs.slices, {"items"})) {
      if (kube::stringAt(slice, {"spec", "driver"}) != dra::kDriverName) continue;
      slices.push_back(pick(slice, {"metadata", "spec"}));
      slices.back()["metadata"] = pick(slices.back()["metadata"], {"name", "generation"});
    }
    out.addJson("cluster/slices.json",
                "the node's " + std::string(dra::kDriverName) +
                    " ResourceSlices (device attributes and taints)",
                "GET resourceslices (spec.nodeName)", slices);
  } else {
    out.missing("the node's ResourceSlices", "GET resourceslices", inputs.slices.error().message);
  }
}

}  // namespace

bool DebugBundle::complete() const {
  for (const DebugPart& part : parts) {
    if (!part.error.empty()) return false;
  }
  return true;
}

namespace {

// The archive's top directory names the node, but a node's name may be 253 characters and ustar
// holds a path's directories in 155: a long name is cut to its start and a hash of the whole, so
// that every entry fits and two long names that share a start still differ.
std::string nodeInDirectory(const std::string& node) {
  constexpr std::size_t kKept = 40;
  if (node.size() <= kKept + 17) return node;
  std::string shortened = node.substr(0, kKept);
  shortened.append(1, '-').append(hex16(fnv1a64(node)));
  return shortened;
}

}  // namespace

DebugBundle buildDebugBundle(const DebugInputs& inputs) {
  std::string stamp = utcRfc3339(inputs.collectedAt);  // 2026-12-02T08:12:03Z
  std::erase(stamp, '-');
  std::erase(stamp, ':');
  DebugBundle bundle;
  bundle.directory = "neuron-debug-" + nodeInDirectory(inputs.node) +
                     (inputs.device ? "-neuron" + std::to_string(*inputs.device) : std::string()) +
                     "-" + stamp;
  Writer out(bundle.directory, inputs.collectedAt);
  if (inputs.agentPod.empty()) {
    // No agent to ask: because listing the agents failed, or none runs on the node.
    out.missing("the agent's report", "pods/exec",
                inputs.agentReport ? "no running Torus node agent pod on " + inputs.node
                                   : inputs.agentReport.error().message);
  } else {
    addAgentReport(out, inputs);
    const std::string source = "pods/log of " + inputs.agentPod;
    if (inputs.agentLog) {
      out.add("agent/log.txt", "the agent's recent log", source, *inputs.agentLog);
    } else {
      out.missing("the agent's recent log", source, inputs.agentLog.error().message);
    }
    if (inputs.agentLogPrevious) {
      if (*inputs.agentLogPrevious) {
        out.add("agent/log-previous.txt", "the log of the agent's previous container",
                source + " (previous)", **inputs.agentLogPrevious);
      } else {
        out.missing("the log of the agent's previous container", source + " (previous)",
                    inputs.agentLogPrevious->error().message);
      }
    }
  }
  addCluster(out, inputs);

  json parts = json::array();
  for (const DebugPart& part : out.parts()) {
    json entry = {{"what", part.what}, {"source", part.source}};
    if (part.error.empty()) {
      entry["file"] = part.file;
      entry["bytes"] = part.bytes;
    } else {
      entry["error"] = part.error;
    }
    parts.push_back(std::move(entry));
  }
  bundle.manifest = {
      {"kind", "NeuronDebugBundle"},
      {"node", inputs.node},
      {"device", inputs.device ? json(*inputs.device) : json(nullptr)},
      {"collectedAt", utcRfc3339(inputs.collectedAt)},
      {"tool", "kubectl-neuron " + inputs.toolVersion},
      {"parts", std::move(parts)},
      {"excluded",
       "Secrets, service-account tokens and kubeconfig credentials; pods' env, volumes and "
       "annotations other than Torus's and Neuron's; claims' driver configuration. Bearer "
       "tokens, JWTs and private keys in any text are replaced by [redacted]."}};
  bundle.parts = std::move(out.parts());
  bundle.tar = std::move(out).finish(bundle.manifest);
  return bundle;
}

}  // namespace torus::kubectl_neuron
