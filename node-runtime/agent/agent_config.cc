#include "node-runtime/agent/agent_config.h"

#include "common/base/strings.h"
#include "common/config/log_settings.h"
#include "common/contracts/dra_names.h"
#include "common/http/http_server.h"

namespace torus::agent {

void registerAgentSettings(config::SettingTable& table, AgentConfig* config) {
  table.addString("config", "TORUS_CONFIG", "", "FILE",
                  "YAML settings file (version: v1; keys as listed here)", &config->configFile);
  table.addString("metrics-addr", "TORUS_METRICS_ADDR", "metricsAddr", "HOST:PORT",
                  "where to serve /healthz (and /metrics); port 0 picks a free port",
                  &config->metricsAddr);
  table.addString("admin-addr", "TORUS_ADMIN_ADDR", "adminAddr", "HOST:PORT",
                  "where to serve actions that change the node (POST /deep-check) and the "
                  "node's evidence (GET /debug, for `kubectl neuron debug`); loopback by "
                  "default, so only what runs in the agent's network namespace can ask (kubectl "
                  "port-forward or exec, which Kubernetes authorizes); empty: not served",
                  &config->adminAddr);
  node_source::addNodeSourceSettings(table, &config->node);
  table.addSwitch("device-plugin", "TORUS_DEVICE_PLUGIN", "devicePlugin",
                  "serve kubelet's device plugin API for the resources below",
                  &config->devicePlugin);
  table.addSwitch("dra", "TORUS_DRA", "dra",
                  "serve the DRA driver neuron.aws.com (ResourceSlices, kubelet's DRA API, CDI) "
                  "instead of the device plugin; needs --device-plugin=false and Kubernetes >= "
                  "1.34",
                  &config->dra);
  table.addString("dra-plugins-dir", "TORUS_DRA_PLUGINS_DIR", "draPluginsDir", "DIR",
                  "kubelet's plugins directory; the driver serves <DIR>/neuron.aws.com/dra.sock "
                  "and keeps its checkpoint there",
                  &config->draPluginsDir);
  table.addString("dra-registry-dir", "TORUS_DRA_REGISTRY_DIR", "draRegistryDir", "DIR",
                  "kubelet's plugin-registration directory (plugins_registry)",
                  &config->draRegistryDir);
  table.addString("cdi-root", "TORUS_CDI_ROOT", "cdiRoot", "DIR",
                  "where the DRA driver writes CDI specs for the container runtime",
                  &config->cdiRoot);
  table.addSwitch("dra-core-devices", "TORUS_DRA_CORE_DEVICES", "draCoreDevices",
                  "publish single NeuronCores as partitions of their chip (needs the "
                  "DRAPartitionableDevices feature; switched off on its own when the API drops "
                  "it); the Node's label torus.dev/dra-core-devices=true|false overrides it there "
                  "(read at each resync)",
                  &config->draCoreDevices);
  table.add({"dra-taint-effect", "TORUS_DRA_TAINT_EFFECT", "draTaintEffect", "EFFECT", "NoSchedule",
             "effect of the health taints on a faulty device: NoSchedule (new claims stay off "
             "it), NoExecute (its pods are evicted too) or None (only reported; Kubernetes >= "
             "1.35)",
             [config](std::string_view value) -> Result<void> {
               if (!dra::isTaintEffect(value)) {
                 return makeError(
                     ErrorCode::kInvalidArgument,
                     "expected NoSchedule, NoExecute or None, got " + quoteJsonString(value));
               }
               config->draHealthTaints.effect = std::string(value);
               return okResult();
             }});
  table.add({"dra-unmonitored-taint-effect", "TORUS_DRA_UNMONITORED_TAINT_EFFECT",
             "draUnmonitoredTaintEffect", "EFFECT", "None",
             "effect of the taint on a device whose health the agent cannot watch (the kernel log "
             "or its counters unreadable): None (only reported; left out where the API refuses "
             "it, before 1.35), NoSchedule, NoExecute, or off",
             [config](std::string_view value) -> Result<void> {
               if (value != "off" && !dra::isTaintEffect(value)) {
                 return makeError(
                     ErrorCode::kInvalidArgument,
                     "expected None, NoSchedule, NoExecute or off, got " + quoteJsonString(value));
               }
               config->draHealthTaints.unmonitoredEffect =
                   value == "off" ? std::string() : std::string(value);
               return okResult();
             }});
  table.add({"dra-health-taint-keys", "TORUS_DRA_HEALTH_TAINT_KEYS", "draHealthTaintKeys",
             "DIMENSION=KEY,...", "",
             "taint keys other than neuron.aws.com/<dimension> for the health dimensions "
             "hardware-error, ecc-uncorrected, device-lost, recovery, deep-check and unmonitored "
             "(to adopt another scheme's keys)",
             [config](std::string_view value) -> Result<void> {
               auto keys = dra::parseHealthTaintKeys(value);
               if (!keys) return std::move(keys).error();
               config->draHealthTaints.keys = std::move(*keys);
               return okResult();
             }});
  table.addSwitch("dra-legacy-health-taint", "TORUS_DRA_LEGACY_HEALTH_TAINT",
                  "draLegacyHealthTaint",
                  "publish the single taint neuron.aws.com/unhealthy=<kind> of earlier releases "
                  "instead of one per health dimension (for one release, while tolerations are "
                  "migrated; docs/dra.md)",
                  &config->draHealthTaints.legacy);
  table.addString("ultraserver-reservations", "TORUS_ULTRASERVER_RESERVATIONS",
                  "ultraserverReservations", "NAMESPACE",
                  "honour neuron-ultraserver-operator's reservations (its NeuronUltraServer "
                  "objects in NAMESPACE): tag a reserved node's devices with the workload "
                  "(attribute workloadId) and refuse them at prepare to other claims (with --dra)",
                  &config->ultraServerReservations);
  table.addDurationMillis("dra-resync", "TORUS_DRA_RESYNC", "draResync",
                          "how often ResourceSlices are checked against the API when nothing "
                          "changed",
                          &config->draResyncMs);
  table.addString("device-plugin-dir", "TORUS_DEVICE_PLUGIN_DIR", "devicePluginDir", "DIR",
                  "kubelet's device-plugin directory (holds kubelet.sock and our sockets)",
                  &config->plugin.pluginDir);
  table.add({"resources", "TORUS_RESOURCES", "resources", "LIST", "neuroncore,neuron",
             "resources to advertise: neuroncore, neuron, neurondevice (legacy alias of neuron)",
             [config](std::string_view value) -> Result<void> {
               auto kinds = plugin::parseResourceList(value);
               if (!kinds) return std::move(kinds).error();
               config->plugin.resources = std::move(*kinds);
               return okResult();
             }});
  table.addString(
      "pod-resources-socket", "TORUS_POD_RESOURCES_SOCKET", "podResourcesSocket", "PATH",
      "kubelet's pod-resources socket, read to learn which container holds which ids or "
      "claims (cross-resource accounting, the metrics' pod labels)",
      &config->plugin.podResourcesSocket);
  table.addDurationMillis("pod-resources-interval", "TORUS_POD_RESOURCES_INTERVAL",
                          "podResourcesInterval",
                          "how often pod-resources is read besides right after each Allocate and "
                          "each end of a pod the API shows",
                          &config->podResourcesIntervalMs);
  table.addDurationMillis("health-interval", "TORUS_HEALTH_INTERVAL", "healthInterval",
                          "how often device health is re-read from sysfs",
                          &config->healthIntervalMs);
  table.addString("kernel-log", "TORUS_KERNEL_LOG", "kernelLog", "PATH",
                  "kernel log to follow for the driver's NEURON_HW_ERR lines (default: "
                  "<dev-root>/kmsg, or the kernel's log through syslog(2) when opening it is "
                  "refused; \"none\" turns it off)",
                  &config->kernelLog);
  table.addDurationMillis("kernel-error-hold", "TORUS_KERNEL_ERROR_HOLD", "kernelErrorHold",
                          "how long a device stays out of service after its last kernel-reported "
                          "hardware error",
                          &config->kernelErrorHoldMs);
  table.addSwitch("kernel-log-trust-reports", "TORUS_KERNEL_LOG_TRUST_REPORTS",
                  "kernelLogTrustReports",
                  "act on a NEURON_HW_ERR line alone (out of service, taints with an effect, "
                  "NeuronHealth): only where the node has one tenant, since any process holding "
                  "a Neuron device can write such a line; off: a line is a claim (counted, "
                  "logged, posted as an Event) and acted on only when the chip's firmware ECC "
                  "counters rise within --kernel-error-hold of it",
                  &config->kernelLogTrustReports);
  table.addSwitch("recover-with-self-test", "TORUS_RECOVER_WITH_SELF_TEST", "recoverWithSelfTest",
                  "a device whose fault cleared returns to service only after a reset and a "
                  "passing memory self-test (--deep-check-memory-bytes of its memory, where the "
                  "agent may write the BAR; with a read-only /sys the reset alone, counted as "
                  "reset_only), done once nothing uses it; off: as soon as the fault clears",
                  &config->recoverWithSelfTest);
  table.addDurationMillis("recovery-retry", "TORUS_RECOVERY_RETRY", "recoveryRetry",
                          "after a failed reset or self-test, try that device again this much "
                          "later",
                          &config->recoveryRetryMs);
  table.addDurationMillis("reset-timeout", "TORUS_RESET_TIMEOUT", "resetTimeout",
                          "how long a device reset may take before it counts as failed (0: as "
                          "long as the driver may take to start one, 120s on inf1, trn1 and "
                          "inf2, 480s on trn2); a container start waits at most 25s of it, "
                          "under kubelet's deadline, and kubelet retries the start while the "
                          "reset goes on",
                          &config->resetTimeoutMs);
  table.addSwitch("neuron-health-condition", "TORUS_NEURON_HEALTH_CONDITION",
                  "neuronHealthCondition",
                  "set AWS's NeuronHealth node condition (NeuronHasError_<TYPE>) from the kernel "
                  "log, which neuron-node-recovery acts on",
                  &config->aws.neuronHealth);
  table.addSwitch("accelerated-hardware-condition", "TORUS_ACCELERATED_HARDWARE_CONDITION",
                  "acceleratedHardwareCondition",
                  "set the EKS node monitoring agent's AcceleratedHardwareReady condition "
                  "(node auto repair acts on it); off where that agent runs",
                  &config->aws.acceleratedHardwareReady);
  table.addString("health-condition-clear", "TORUS_HEALTH_CONDITION_CLEAR", "healthConditionClear",
                  "reboot|hold",
                  "when those conditions clear: reboot (the error stands until the node reboots, "
                  "as AWS's rules) or hold (after --kernel-error-hold without another error)",
                  &config->awsClear);
  table.addString("kubeconfig", "KUBECONFIG", "kubeconfig", "FILE",
                  "reach the Kubernetes API with this kubeconfig (default: the in-cluster service "
                  "account when running in a pod; without either, the scheduler extender's "
                  "choices are not read)",
                  &config->kubeconfig);
  table.addString("node-name", "NODE_NAME", "nodeName", "NAME",
                  "this node's Kubernetes name, to watch the pods bound to it", &config->nodeName);
  table.addString("daemonset", "TORUS_DAEMONSET", "daemonSet", "NAMESPACE/NAME",
                  "the DaemonSet that runs this agent: on stopping, the device plugin taints the "
                  "node for the next agent only while that DaemonSet exists and still selects "
                  "the node (default: always taint)",
                  &config->daemonSet);
  table.addSwitch("publish-node", "TORUS_PUBLISH_NODE", "publishNode",
                  "with API access, keep this node's torus.dev/ labels, topology annotation and "
                  "NeuronHealthy condition current",
                  &config->publishNode);
  table.addDurationMillis("deep-check-interval", "TORUS_DEEP_CHECK_INTERVAL", "deepCheckInterval",
                          "run the deep health check on idle devices this often (0: only on "
                          "demand, POST /deep-check or `neuron-node-agent check`)",
                          &config->deepCheckIntervalMs);
  table.addInt("deep-check-memory-bytes", "TORUS_DEEP_CHECK_MEMORY_BYTES", "deepCheckMemoryBytes",
               "BYTES",
               "deep check: window of each idle device's memory to pattern-test, at the top of "
               "its memory BAR",
               4096, 1 << 30, &config->deepCheckMemoryBytes);
  table.addInt("deep-check-host-allreduce-bytes", "TORUS_DEEP_CHECK_HOST_ALLREDUCE_BYTES",
               "deepCheckHostAllReduceBytes", "BYTES",
               "deep check: per-device size of the AllReduce ring run on this host's CPU (the "
               "collectives path; its traffic does not cross NeuronLinks)",
               4096, 1 << 30, &config->deepCheckHostAllReduceBytes);
  table.addDurationMillis("deep-check-timeout", "TORUS_DEEP_CHECK_TIMEOUT", "deepCheckTimeout",
                          "deep check: longest wait for any one step of the host AllReduce",
                          &config->deepCheckTimeoutMs);
  table.addString("deep-check-command", "TORUS_DEEP_CHECK_COMMAND", "deepCheckCommand", "COMMAND",
                  "deep check: an external check that drives the NeuronLinks (e.g. the Neuron "
                  "runtime's nccom-test), run by /bin/sh with TORUS_DEEP_CHECK_DEVICES, "
                  "TORUS_DEEP_CHECK_RING and NEURON_RT_VISIBLE_CORES naming the idle devices; exit "
                  "0 passes. Not run, and reported not checked, when this process may not open "
                  "the devices (a container the runtime did not give them to). Unset: NeuronLink "
                  "traffic is reported as not checked",
                  &config->deepCheckCommand);
  table.addDurationMillis("deep-check-command-timeout", "TORUS_DEEP_CHECK_COMMAND_TIMEOUT",
                          "deepCheckCommandTimeout",
                          "deep check: the external check is killed (and fails) after this long",
                          &config->deepCheckCommandTimeoutMs);
  table.addSwitch("json", "", "", "`check`: print the result as JSON instead of tables",
                  &config->json);
  table.addInt("device", "", "", "N",
               "`debug`: report only this device (default -1: every device of the node)", -1,
               1 << 16, &config->debugDevice);
  config::addLogSettings(table, &config->log);
  table.addSwitch("print-config-reference", "", "",
                  "print the settings reference as Markdown (docs/config.md) and exit",
                  &config->printConfigReference);
}

}  // namespace torus::agent

namespace torus::agent {

health::DeepCheckOptions deepCheckOptionsOf(const AgentConfig& config) {
  health::DeepCheckOptions options;
  options.memoryBytes = static_cast<std::uint64_t>(config.deepCheckMemoryBytes);
  options.hostAllReduce.bytes = static_cast<std::size_t>(config.deepCheckHostAllReduceBytes);
  options.hostAllReduce.timeout = std::chrono::milliseconds(config.deepCheckTimeoutMs);
  options.command = config.deepCheckCommand;
  options.commandTimeout = std::chrono::milliseconds(config.deepCheckCommandTimeoutMs);
  return options;
}

Result<void> normalizeAgentConfig(AgentConfig& config) {
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
  config.aws.clear = *awsClear;
  if (auto listen = http::parseListenAddress(config.metricsAddr); !listen) {
    return std::move(listen).error().withContext("--metrics-addr");
  }
  return {};
}

}  // namespace torus::agent
