#include "node-runtime/agent/node_agent.h"

#include <cstdlib>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/kube/event_object.h"
#include "common/kube/kube_client.h"
#include "common/kube/kube_config.h"
#include "common/metrics/event_counters.h"
#include "common/topology/instance_catalog.h"
#include "node-runtime/agent/core_tenancy.h"
#include "node-runtime/agent/daemonset_successor.h"
#include "node-runtime/agent/grant_check.h"
#include "node-runtime/agent/restarting_taint.h"
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

Result<std::unique_ptr<NodeAgent>> NodeAgent::start(const AgentConfig& config) {
  // Settings that cannot work are refused before any tree is written or device read.
  if (config.deepCheckIntervalMs != 0 && config.deepCheckIntervalMs < 1000) {
    return makeError(ErrorCode::kInvalidArgument,
                     "--deep-check-interval must be 0 (off) or at least 1s, got " +
                         std::to_string(config.deepCheckIntervalMs) + "ms");
  }
  if (config.deepCheckTimeoutMs < 100) {
    return makeError(ErrorCode::kInvalidArgument,
                     "--deep-check-timeout must be at least 100ms, got " +
                         std::to_string(config.deepCheckTimeoutMs) + "ms");
  }
  if (config.healthIntervalMs < 50) {
    return makeError(ErrorCode::kInvalidArgument, "--health-interval must be at least 50ms, got " +
                                                      std::to_string(config.healthIntervalMs) +
                                                      "ms");
  }
  if (config.dra && config.devicePlugin) {
    return makeError(ErrorCode::kInvalidArgument,
                     "--dra needs --device-plugin=false: with both, kubelet would hand the same "
                     "chips out through two paths");
  }
  if (config.podResourcesIntervalMs < 100) {
    return makeError(ErrorCode::kInvalidArgument,
                     "--pod-resources-interval must be at least 100ms, got " +
                         std::to_string(config.podResourcesIntervalMs) + "ms");
  }
  if (config.dra && config.draResyncMs < 1000) {
    return makeError(ErrorCode::kInvalidArgument, "--dra-resync must be at least 1s, got " +
                                                      std::to_string(config.draResyncMs) + "ms");
  }
  auto awsClear = parseAwsHealthClear(config.awsClear);
  if (!awsClear) return std::move(awsClear).error().withContext("--health-condition-clear");
  if (auto listen = http::parseListenAddress(config.metricsAddr); !listen) {
    return std::move(listen).error().withContext("--metrics-addr");
  }
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
  agent->followKernelLog(config);
  auto kube = kubeConfigOf(config);
  if (!kube) return std::move(kube).error();
  if (*kube && config.nodeName.empty()) {
    return makeError(
        ErrorCode::kInvalidArgument,
        "--node-name (or NODE_NAME) is needed to use the Kubernetes API for this node");
  }
  if (*kube) agent->nodeEvents_ = std::make_unique<NodeEvents>(**kube, config.nodeName);
  agent->checkGrants(config);
  if (!*kube) {
    TORUS_LOG(Info, Agent,
              "no Kubernetes API configured: ids are placed without the scheduler extender's "
              "hand-off (AWS_NEURON_IDS) and the Node object is not labelled");
  } else if (config.publishNode) {
    AwsHealthOptions aws = config.aws;
    aws.clear = *awsClear;
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

Result<void> NodeAgent::startDevicePlugin(const AgentConfig& config,
                                          const std::optional<kube::KubeConfig>& kube) {
  view_ = std::make_unique<PluginNodeView>(*monitor_, reset::ResetPolicy{});
  if (kube) {
    handoff_ = std::make_unique<PodAnnotationHandoff>(*kube, config.nodeName);
    TORUS_LOG(Info, Agent, "reading the scheduler extender's hand-off", {"server", kube->server},
              {"node", config.nodeName});
  }
  plugin::DevicePluginOptions options = config.plugin;
  options.podResourcesInterval = std::chrono::milliseconds(config.podResourcesIntervalMs);
  if (nodeEvents_) {
    options.nodeEvent = [events = nodeEvents_.get()](std::string_view reason,
                                                     std::string_view message) {
      events->warn(reason, message);
    };
  }
  plugins_ = std::make_unique<plugin::DevicePluginManager>(options, *view_, handoff_.get());
  TORUS_RETURN_IF_ERROR(plugins_->start(), "serving");
  if (handoff_) {
    podEnded_ = handoff_->onPodEnded([this] { plugins_->podEnded(); });
  }
  if (kube && config.publishNode) {
    kubeletView_ = std::make_unique<KubeletViewPublisher>(*kube, config.nodeName, *plugins_);
    if (!config.daemonSet.empty()) {
      successorClient_ = std::make_unique<kube::KubeClient>(*kube, std::chrono::seconds(3));
      daemonSet_ = config.daemonSet;
      nodeName_ = config.nodeName;
    }
  }
  return okResult();
}

void NodeAgent::drainDevicePlugin() {
  if (!kubeletView_) return;
  if (successorClient_) {
    // Unreadable: taint as always; a pod refused at admission costs less than being wrong here
    // for a whole node's workloads during a restart.
    auto expected = successorExpected(*successorClient_, daemonSet_, nodeName_);
    if (expected && !*expected) {
      TORUS_LOG(Info, Plugin,
                "no agent follows this one here (its DaemonSet is gone or no longer selects the "
                "node); leaving the node untainted",
                {"daemonset", daemonSet_}, {"node", nodeName_});
      return;
    }
    if (!expected) {
      TORUS_LOG(Warn, Plugin, "cannot tell whether another agent follows; tainting the node",
                {"daemonset", daemonSet_}, {"error", expected.error().message});
    }
  }
  if (auto tainted = kubeletView_->stopServing(); !tainted) {
    TORUS_LOG(Warn, Plugin,
              "could not taint the node before stopping; a Neuron pod bound here before the next "
              "agent registers fails admission",
              {"error", tainted.error().message});
    return;
  }
  if (!handoff_) return;
  // Pods bound here before the taint reached the schedulers (one in a binding cycle then lands up
  // to a moment later; the extender refuses binds here from the moment it sees the taint) must be
  // admitted while kubelet still counts our ids: wait until kubelet has admitted every pod of this
  // node that asks for a Neuron resource (its pod-resources lists it, or its status shows it), and
  // nothing new was bound for a second. Kubelet admits a bound pod quickly, but one at a time.
  constexpr auto kQuiet = std::chrono::seconds(1);
  constexpr auto kLongest = std::chrono::seconds(10);
  const auto started = std::chrono::steady_clock::now();
  auto lastPending = started;
  std::vector<std::string> pending;
  while (std::chrono::steady_clock::now() - started < kLongest) {
    std::set<std::string> admitted;
    for (const plugin::Holder& holder : plugins_->assignments().holders)
      admitted.insert(holder.pod);
    pending = handoff_->awaitingAdmissionExcept(admitted);
    const auto now = std::chrono::steady_clock::now();
    if (!pending.empty()) {
      lastPending = now;
      plugins_->podEnded();  // read pod-resources again now, not at the next poll
    }
    if (pending.empty() && now - lastPending >= kQuiet) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!pending.empty()) {
    TORUS_LOG(Warn, Plugin, "stopping with pods bound here that kubelet has not admitted yet",
              {"pods", static_cast<int>(pending.size())}, {"first", pending.front()});
  }
}

Result<void> NodeAgent::startDra(const AgentConfig& config,
                                 const std::optional<kube::KubeConfig>& kube) {
  if (!kube) {
    return makeError(ErrorCode::kInvalidArgument,
                     "--dra needs the Kubernetes API (in-cluster or --kubeconfig): the driver "
                     "publishes ResourceSlices and reads ResourceClaims");
  }
  view_ = std::make_unique<PluginNodeView>(*monitor_, reset::ResetPolicy{});
  dra::DraOptions options;
  options.nodeName = config.nodeName;
  options.kubelet.pluginsDir = config.draPluginsDir;
  options.kubelet.registryDir = config.draRegistryDir;
  options.cdiRoot = config.cdiRoot;
  options.coreDevices = config.draCoreDevices;
  options.taintEffect = config.draTaintEffect;
  options.resync = std::chrono::milliseconds(config.draResyncMs);
  options.ultraServerReservations = !config.ultraServerReservations.empty();
  options.reservationNamespace = config.ultraServerReservations;
  kube::KubeClient client(*kube, std::chrono::seconds(5));
  auto driver = dra::DraDriver::start(options, *kube, *view_);
  if (!driver) {
    // The pod restarts and fails the same way: the Node says why, where operators look first.
    const nlohmann::json event = kube::eventObject(
        {"Node", config.nodeName, "", config.nodeName}, "default", false, "DRADriverNotStarted",
        driver.error().message, "neuron-node-agent", config.nodeName);
    if (auto posted = client.create("/api/v1/namespaces/default/events", event); !posted) {
      TORUS_LOG(Warn, Agent, "could not post a node event", {"reason", "DRADriverNotStarted"},
                {"error", posted.error().message});
    }
    return std::move(driver).error();
  }
  dra_ = std::move(*driver);
  // A node that served the device plugin before keeps its restarting taint until someone removes
  // it; under the DRA driver kubelet needs no plugin list, so the node takes pods at once.
  if (auto removed = setRestartingTaint(client, config.nodeName, false); !removed) {
    TORUS_LOG(Warn, Agent, "could not remove the device plugin's restarting taint",
              {"error", removed.error().message});
  } else if (*removed) {
    TORUS_LOG(Info, Agent, "removed the device plugin's restarting taint: the DRA driver serves",
              {"node", config.nodeName});
  }
  claimHolders_ =
      std::make_unique<ClaimHolderPoller>(config.plugin.podResourcesSocket, config.nodeName,
                                          std::chrono::milliseconds(config.podResourcesIntervalMs));
  return okResult();
}

void NodeAgent::followKernelLog(const AgentConfig& config) {
  if (config.kernelLog == "none") return;
  const std::filesystem::path path = config.kernelLog.empty()
                                         ? prepared_.roots.kernelLog()
                                         : std::filesystem::path(config.kernelLog);
  auto watcher = health::KernelLogWatcher::start(
      path, [this](const health::KernelHardwareError& error, const std::string& line) {
        metrics::processCounters().add(
            metrics::names::kKernelErrorsTotal,
            {{"type", error.type},
             {"neuron_device_index", error.device >= 0 ? std::to_string(error.device) : ""}});
        hardwareErrors_.report(error.type, error.device);  // AWS's conditions count every line
        if (error.device < 0 || error.device >= monitor_->node().deviceCount()) {
          TORUS_LOG(Error, Health, "kernel reported a Neuron hardware error for no known device",
                    {"type", error.type}, {"line", line});
          return;
        }
        TORUS_LOG(Warn, Health, "kernel reported a Neuron hardware error", {"device", error.device},
                  {"type", error.type});
        monitor_->reportKernelError(error.device, error.type);
      });
  if (!watcher) {
    TORUS_LOG(Warn, Health, "not following the kernel log; hardware errors it reports are missed",
              {"error", watcher.error().message});
    kernelLogError_ = watcher.error().message;
    return;
  }
  kernelLog_ = std::move(*watcher);
  TORUS_LOG(Info, Health, "following the kernel log", {"path", kernelLog_->source()},
            {"hold_ms", config.kernelErrorHoldMs});
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
