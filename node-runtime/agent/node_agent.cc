#include "node-runtime/agent/node_agent.h"

#include <cstdlib>

#include "common/base/log.h"
#include "common/kube/kube_config.h"
#include "common/metrics/event_counters.h"
#include "common/topology/instance_catalog.h"
#include "node-runtime/agent/core_tenancy.h"
#include "node-runtime/agent/grant_check.h"
#include "node-runtime/discovery/pci_functions.h"
#include "node-runtime/health/kernel_log.h"
#include "node-runtime/metrics/agent_metrics.h"
#include "node-runtime/reset/core_reset.h"

namespace torus::agent {
namespace {

std::string joinInts(const std::vector<int>& values) {
  std::string text;
  for (const int value : values) {
    if (!text.empty()) text += ',';
    text += std::to_string(value);
  }
  return text;
}

void logDiscovery(const discovery::Discovery& found) {
  const topology::Node& node = found.node;
  const int healthy = node.healthyDevices().size();
  TORUS_LOG(Info, Discovery, "discovered node", {"instance_type", node.instanceType},
            {"devices", node.deviceCount()}, {"healthy_devices", healthy},
            {"cores", node.logicalCoreCount()}, {"lnc", node.lnc}, {"lnc_source", found.lncSource},
            {"pci_source", found.pciSource.empty() ? "unknown" : found.pciSource},
            {"interconnect", topology::interconnectName(node.interconnect)},
            {"memory_gib", static_cast<double>(node.memoryBytes()) / (1024.0 * 1024 * 1024)},
            {"ultraserver_node", node.ultraServer ? node.ultraServer->nodeId4 : -1},
            {"instance_type_source", found.instanceTypeSource});
  for (const topology::Device& device : node.devices) {
    if (!device.health.healthy) {
      TORUS_LOG(Warn, Discovery, "device unhealthy; it will not be offered to workloads",
                {"device", device.index}, {"reason", device.health.reason});
    }
    TORUS_LOG(Debug, Discovery, "device", {"device", device.index},
              {"cores", node.coresOfDevice(device.index).toRangeString()},
              {"connected", joinInts(device.connected)}, {"numa", device.numaNode.value_or(-1)},
              {"serial", device.serialNumber});
  }
  for (const std::string& finding : found.findings) {
    TORUS_LOG(Warn, Discovery, "node report differs from what was expected", {"finding", finding});
  }
}

}  // namespace

namespace {

// The API is optional for the agent: without it the plugin places ids itself. Asked for
// explicitly (--kubeconfig) it must work; found implicitly (in a pod) it is used when it can be.
Result<std::optional<kube::KubeConfig>> kubeConfigOf(const AgentConfig& config) {
  if (!config.kubeconfig.empty()) {
    auto loaded = kube::loadKubeconfig(config.kubeconfig);
    if (!loaded) return std::move(loaded).error().withContext("--kubeconfig");
    return std::optional<kube::KubeConfig>(std::move(*loaded));
  }
  if (std::getenv("KUBERNETES_SERVICE_HOST") == nullptr) return std::optional<kube::KubeConfig>();
  auto inCluster = kube::inClusterConfig();
  if (!inCluster) {
    TORUS_LOG(Warn, Agent,
              "in a pod without API access; the scheduler extender's choices are not read",
              {"error", inCluster.error().message});
    return std::optional<kube::KubeConfig>();
  }
  return std::optional<kube::KubeConfig>(std::move(*inCluster));
}

}  // namespace

NodeAgent::NodeAgent(node_source::PreparedNode prepared, discovery::Discovery discovery)
    : prepared_(std::move(prepared)), discovery_(std::move(discovery)) {}

NodeAgent::~NodeAgent() {
  stop();
}

Result<std::unique_ptr<NodeAgent>> NodeAgent::start(const AgentConfig& given) {
  // Settings that cannot work are refused before any tree is written or device read.
  AgentConfig config = given;
  if (auto valid = normalizeAgentConfig(config); !valid) return std::move(valid).error();
  auto prepared = node_source::prepareNode(config.node);
  if (!prepared) return std::move(prepared).error().withContext("preparing the node");
  auto found =
      discovery::discoverNode(prepared->roots, node_source::discoveryOptionsOf(config.node));
  if (!found) return std::move(found).error();
  logDiscovery(*found);
  auto agent = std::make_unique<NodeAgent>(std::move(*prepared), std::move(*found));
  agent->monitor_ = std::make_unique<health::NodeMonitor>(
      agent->prepared_.roots, node_source::discoveryOptionsOf(config.node), agent->discovery_,
      std::chrono::milliseconds(config.healthIntervalMs),
      std::chrono::milliseconds(config.kernelErrorHoldMs));
  auto kube = kubeConfigOf(config);
  if (!kube) return std::move(kube).error();
  if (*kube && config.nodeName.empty()) {
    return makeError(
        ErrorCode::kInvalidArgument,
        "--node-name (or NODE_NAME) is needed to use the Kubernetes API for this node");
  }
  if (*kube) agent->nodeEvents_ = std::make_unique<NodeEvents>(**kube, config.nodeName);
  // After nodeEvents_: a claim in the kernel log is posted as an Event.
  agent->followKernelLog(config);
  agent->checkGrants(config);
  if (!*kube) {
    TORUS_LOG(Info, Agent,
              "no Kubernetes API configured: ids are placed without the scheduler extender's "
              "hand-off (AWS_NEURON_IDS) and the Node object is not labelled");
  } else if (config.publishNode) {
    AwsHealthOptions aws = config.aws;
    aws.hold = std::chrono::milliseconds(config.kernelErrorHoldMs);
    if (!agent->kernelLog_ && (aws.neuronHealth || aws.acceleratedHardwareReady)) {
      TORUS_LOG(Warn, Health,
                "AWS's NeuronHealth and AcceleratedHardwareReady conditions are not set: the "
                "kernel log is not followed");
    }
    agent->publisher_ =
        std::make_unique<NodePublisher>(**kube, config.nodeName, *agent->monitor_,
                                        agent->kernelLog_ ? &agent->hardwareErrors_ : nullptr, aws);
    TORUS_LOG(Info, Agent, "publishing node labels, topology annotation and condition",
              {"node", config.nodeName}, {"server", (*kube)->server});
  }
  if (config.devicePlugin) {
    TORUS_RETURN_IF_ERROR(agent->startDevicePlugin(config, *kube), "starting the device plugin");
  } else if (config.dra) {
    TORUS_RETURN_IF_ERROR(agent->startDra(config, *kube), "starting the DRA driver");
  } else {
    TORUS_LOG(Warn, Plugin,
              "device plugin disabled (--device-plugin=false); kubelet will not see "
              "Neuron resources from this agent");
  }
  // An LNC change renumbers every core: it waits until nothing holds one.
  agent->monitor_->setLncChangeGuard([raw = agent.get()] { return raw->anyCoreHeld(); });
  agent->deepCheck_ =
      std::make_unique<DeepCheckRunner>(*agent->monitor_, deepCheckOptionsOf(config),
                                        std::chrono::milliseconds(config.deepCheckIntervalMs),
                                        [raw = agent.get()] { return raw->devicesInUse(); });
  if (config.deepCheckIntervalMs > 0) {
    TORUS_LOG(Info, Health, "deep check runs periodically on idle devices",
              {"interval_ms", config.deepCheckIntervalMs});
  }
  if (config.recoverWithSelfTest) {
    RecoveryOptions recovery;
    recovery.selfTestBytes = static_cast<std::uint64_t>(config.deepCheckMemoryBytes);
    recovery.retryAfter = std::chrono::milliseconds(config.recoveryRetryMs);
    recovery.reset.readyTimeout = agent->resetLimit(config);
    agent->recovery_ = std::make_unique<DeviceRecovery>(
        *agent->monitor_, recovery, [raw = agent.get()] { return raw->devicesInUse(); });
  } else {
    TORUS_LOG(Info, Health,
              "--recover-with-self-test=false: a device returns to service as soon as its fault "
              "clears, without a reset and a self-test");
  }
  TORUS_RETURN_IF_ERROR(agent->serveHttp(config.metricsAddr), "serving --metrics-addr");
  if (!config.adminAddr.empty()) {
    TORUS_RETURN_IF_ERROR(agent->serveAdmin(config.adminAddr), "serving --admin-addr");
  }
  return agent;
}

void NodeAgent::checkGrants(const AgentConfig& config) {
  const GrantSyscalls calls = systemGrantSyscalls();
  constexpr const char* kModules =
      "on AppArmor nodes nodeAgent.appArmorProfile Unconfined or the shipped torus-node-agent "
      "profile, on SELinux nodes nodeAgent.seLinuxOptions (Bottlerocket: super_t)";
  const topology::Node& node = monitor_->node();
  if (!node.devices.empty()) {
    const std::filesystem::path reset = prepared_.roots.resetFile(node.devices.front().index);
    grants_.push_back({"reset",
                       std::string("the chart's writable mount of "
                                   "/sys/devices/virtual/neuron_device; ") +
                           kModules,
                       [reset, calls] { return probeWriteOpen(reset, calls); }});
  }
  grants_.push_back({"process scan",
                     std::string("nodeAgent.hostPID=true and the capabilities SYS_PTRACE and "
                                 "DAC_READ_SEARCH (nodeAgent.securityContext); ") +
                         kModules,
                     [calls] { return probeProcessScan("/proc", calls); }});
  if (config.kernelLog != "none") {
    grants_.push_back(
        {"kernel log",
         "the capability SYSLOG (nodeAgent.securityContext) for syslog(2), or --kernel-log "
         "naming a log the agent may read",
         [error = kernelLogError_]() -> Result<void> {
           if (error.empty()) return okResult();
           return makeError(ErrorCode::kPermissionDenied, error);
         }});
  }
  std::vector<std::filesystem::path> kubeletDirs;
  if (config.devicePlugin) kubeletDirs.push_back(config.plugin.pluginDir);
  if (config.dra) kubeletDirs.push_back(config.draRegistryDir);
  for (const std::filesystem::path& dir : kubeletDirs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) continue;  // kubelet creates it; waited for
    grants_.push_back(
        {"kubelet directory",
         std::string("the chart's hostPath mounts of kubelet's directories; ") + kModules,
         [dir, calls] { return probeCreateIn(dir, calls); }});
  }
  deniedGrants_ = agent::checkGrants(grants_);
  for (const DeniedGrant& denied : deniedGrants_) {
    TORUS_LOG(Error, Agent, "a grant the agent needs is denied", {"grant", denied.name},
              {"error", denied.error}, {"fix", denied.fix});
  }
  if (!deniedGrants_.empty() && nodeEvents_) {
    nodeEvents_->warn("NeuronAgentGrantDenied", "the Neuron node agent is denied what it needs: " +
                                                    describeDenied(deniedGrants_));
  }
}

metrics::CoreTenants NodeAgent::coreTenants(const topology::Node& node) const {
  return metrics::CoreTenants(
      node,
      tenanciesOf(node, plugins_ ? plugins_->assignments() : plugin::Assignments{},
                  dra_ ? dra_->claims().prepared() : dra::PreparedClaims{},
                  claimHolders_ ? claimHolders_->holders() : std::vector<dra::ClaimHolder>{}));
}

bool NodeAgent::anyCoreHeld() const {
  if (plugins_) {
    // Kubelet's view and our own Allocates it may not list yet.
    for (const auto& [kind, ids] : plugins_->assignments().held) {
      if (!ids.empty()) return true;
    }
  }
  return !devicesInUse().empty();
}

std::chrono::milliseconds NodeAgent::resetLimit(const AgentConfig& config) const {
  if (config.resetTimeoutMs > 0) return std::chrono::milliseconds(config.resetTimeoutMs);
  return reset::driverResetLimit(monitor_->node().catalog);
}

topology::DeviceSet NodeAgent::devicesInUse() const {
  const topology::Node node = monitor_->node();
  topology::DeviceSet busy;
  if (plugins_) {
    for (const plugin::Holder& holder : plugins_->assignments().holders) {
      const topology::CoreSet cores = plugin::coresOfIds(holder.kind, node, holder.ids);
      for (const int device : node.devicesOfCores(cores).ids())
        busy.insert(device);
    }
  }
  if (dra_) {
    for (const auto& [uid, claim] : dra_->claims().prepared())
      busy |= claim.chips;
  }
  // Also what a process outside kubelet's view has open (a runtime started by hand).
  return busy | reset::openDevices(prepared_.roots, node);
}

void NodeAgent::stop() {
  // No request may reach the runner while it goes away.
  if (admin_) admin_->stop();
  if (http_) http_->stop();
  deepCheck_.reset();
  recovery_.reset();
  kernelLog_.reset();
  hardwareErrorProof_.reset();
  drainDevicePlugin();
  podEnded_ = {};
  plugins_.reset();
  kubeletView_.reset();
  claimHolders_.reset();
  dra_.reset();
  handoff_.reset();
  publisher_.reset();
  view_.reset();
  monitor_.reset();
  if (http_) {
    http_->stop();
    http_.reset();
  }
  admin_.reset();
}

}  // namespace torus::agent
