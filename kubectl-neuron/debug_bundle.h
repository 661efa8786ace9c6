// `kubectl neuron debug NODE [--device N]`: one archive with the evidence for a failing device.
// The caller collects (debug_collect.h); this file decides what goes in and how it is laid out,
// and keeps credentials out: objects are reduced to the fields that describe Neuron use (no pod
// env, volumes, or annotations but Torus's and Neuron's; no claim config), and every text part
// is scrubbed of bearer tokens, JWTs and private keys.
//
// Layout, under neuron-debug-NODE[-neuronN]-TIMESTAMP/:
//   manifest.json                    every part: file, what, source, bytes, or why it is missing
//   agent/state.json                 the agent's view: version, node, devices' health, stalls
//   agent/kernel-log.txt             the hardware-error lines the agent read
//   agent/metrics.txt                a /metrics snapshot
//   agent/allocations.json           who holds what, as kubelet and DRA told the agent
//   agent/log.txt                    the agent's recent log (and log-previous.txt after restarts)
//   devices/neuronN/sys/...          the driver's files, as a tree; links.txt, pci.json, dev.json
//   cluster/node.json, events.json   the Node's conditions, capacity, taints; its events
//   cluster/pods.json, claims.json   the pods and ResourceClaims on the device (or node)
//   cluster/slices.json              this node's neuron.aws.com ResourceSlices (device taints)
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/redact_secrets.h"  // every text part passes through redactSecrets
#include "common/base/result.h"

namespace torus::kubectl_neuron {

// What was collected; each item is the object/text or why it could not be had.
struct DebugInputs {
  std::string node;
  std::optional<int> device;
  std::chrono::system_clock::time_point collectedAt;
  std::string toolVersion;
  std::string agentPod;  // namespace/name; "" when none runs on the node
  Result<nlohmann::json> agentReport = nlohmann::json(nullptr);  // neuron-node-agent debug
  Result<std::string> agentLog = std::string();
  std::optional<Result<std::string>> agentLogPrevious;  // only after the container restarted
  Result<nlohmann::json> nodeObject = nlohmann::json(nullptr);
  Result<nlohmann::json> events = nlohmann::json(nullptr);  // list
  Result<nlohmann::json> pods = nlohmann::json(nullptr);    // list: the pods on the node
  Result<nlohmann::json> claims = nlohmann::json(nullptr);  // list: every ResourceClaim
  Result<nlohmann::json> slices = nlohmann::json(nullptr);  // list: the node's slices
};

struct DebugPart {
  std::string file;  // path in the archive, under the bundle's directory; "" when missing
  std::string what;
  std::string source;
  std::size_t bytes = 0;
  std::string error;  // why it is missing
};

struct DebugBundle {
  std::string directory;  // the archive's top directory
  std::vector<DebugPart> parts;
  nlohmann::json manifest;
  std::string tar;
  bool complete() const;
};

DebugBundle buildDebugBundle(const DebugInputs& inputs);

}  // namespace torus::kubectl_neuron
