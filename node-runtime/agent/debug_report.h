// What the agent hands `kubectl neuron debug` (GET /debug on its loopback admin address, printed
// by `neuron-node-agent debug`): the evidence an operator would otherwise collect by hand on the
// node, as one JSON document. For each device (or the one asked for): its health with every
// cause, the driver's files under its sysfs directory, its PCI function's link and AER counters,
// its device node; the hardware-error lines of the kernel log the agent read; reads that hang;
// what kubelet and DRA say each pod holds; and a /metrics snapshot.
//
// Everything here is read from the driver or the agent's own state: nothing from the pods, no
// environment, no credentials.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/topology/node.h"
#include "node-runtime/discovery/discovery_roots.h"

namespace torus::agent {

// The hardware-error lines the kernel-log watcher handed on, the newest kMaxLines (thread-safe).
class RecentKernelLines {
 public:
  static constexpr std::size_t kMaxLines = 512;
  struct Line {
    std::chrono::system_clock::time_point seenAt;
    int device = -1;  // -1: the line names none of this node's devices
    std::string type;
    std::string text;
  };
  void add(int device, std::string type, std::string text);
  std::vector<Line> lines() const;

 private:
  mutable std::mutex mutex_;
  std::deque<Line> lines_;
};

// The driver's files of one device: its class directory read whole (regular files, bounded in
// number and size; links as their targets) and the named attributes of its PCI function.
struct DriverFileLimits {
  std::size_t maxFiles = 2000;
  std::size_t maxFileBytes = 16 * 1024;
  std::size_t maxTotalBytes = 4 * 1024 * 1024;
  int maxDepth = 4;
};
nlohmann::json driverFilesOf(const discovery::DiscoveryRoots& roots, const topology::Device& device,
                             const DriverFileLimits& limits = {});

// What the agent knows of who holds what (its /allocations, and the report's "allocations"): the
// device plugin's holders as kubelet's pod-resources lists them, and the DRA driver's prepared
// claims with the containers pod-resources lists as using each.
struct PluginHolder {
  std::string pod;  // namespace/name
  std::string container;
  std::string resource;
  topology::CoreSet ids;  // in the resource's ids
  topology::CoreSet cores;
  topology::DeviceSet devices;
};
struct ClaimUser {
  std::string pod;  // namespace/name
  std::string container;
};
struct PreparedClaimView {
  std::string claim;  // namespace/name
  std::string uid;
  std::string driver;
  std::vector<std::string> deviceNames;
  topology::CoreSet cores;
  topology::DeviceSet devices;
  int lnc = 0;
  std::vector<ClaimUser> containers;
};
nlohmann::json allocationsDocument(const std::vector<PluginHolder>& holders,
                                   const std::vector<PreparedClaimView>& claims);

struct DebugReportInput {
  std::string agentVersion;
  std::string nodeName;
  topology::Node node;
  std::optional<int> device;  // only this device; nullopt: all of them
  // Per device index, the driver's files (driverFilesOf), or an error object when reading them
  // did not finish in time.
  std::vector<nlohmann::json> driverFiles;
  std::string kernelLogSource;  // the path, "syslog(2)", or "" when not followed
  std::string kernelLogLost;    // why it is not read now; "" when it is
  std::vector<RecentKernelLines::Line> kernelLines;
  std::vector<std::string> stalledReads;
  topology::DeviceSet awaitingRecovery;
  std::optional<int> pendingLnc;
  nlohmann::json allocations;  // the agent's /allocations (allocationsDocument)
  std::string metrics;         // the agent's /metrics
};

// The report; an error when `device` is not one of the node's.
Result<nlohmann::json> debugReport(const DebugReportInput& input);

}  // namespace torus::agent
