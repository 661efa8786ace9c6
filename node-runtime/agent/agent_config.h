// AgentConfig: everything neuron-node-agent can be told, and the one table that declares it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/base/log.h"
#include "common/base/result.h"
#include "common/config/settings.h"
#include "device-plugin/plugin_manager.h"
#include "dra-driver/slice_builder.h"
#include "node-runtime/agent/rules/aws_health.h"
#include "node-runtime/health/deep_check/deep_check.h"
#include "node-runtime/node_source/node_source.h"

namespace torus::agent {

struct AgentConfig {
  std::string configFile;
  std::string metricsAddr = "0.0.0.0:9400";
  std::string adminAddr = "127.0.0.1:9401";
  node_source::NodeSourceOptions node;
  bool devicePlugin = true;
  plugin::DevicePluginOptions plugin;
  // The DRA driver neuron.aws.com instead of the device plugin (a node runs one or the other).
  bool dra = false;
  std::string draPluginsDir = "/var/lib/kubelet/plugins";
  std::string draRegistryDir = "/var/lib/kubelet/plugins_registry";
  std::string cdiRoot = "/var/run/cdi";
  bool draCoreDevices = true;
  dra::HealthTaints draHealthTaints;
  // Namespace of neuron-ultraserver-operator's NeuronUltraServer objects; "" = no reservations.
  std::string ultraServerReservations;
  std::int64_t draResyncMs = 60'000;
  std::int64_t healthIntervalMs = 500;
  // How often kubelet's pod-resources is read besides after each Allocate and each pod's end.
  std::int64_t podResourcesIntervalMs = 2000;
  std::string kernelLog;  // empty: <dev-root>/kmsg
  std::int64_t kernelErrorHoldMs = 5 * 60 * 1000;
  // A NEURON_HW_ERR line is acted on alone (a node with one tenant); false: only when the chip's
  // firmware ECC counters confirm it (health/hardware_error_proof.h).
  bool kernelLogTrustReports = false;
  // A device whose fault cleared returns only after a reset and a memory self-test
  // (agent/device_recovery.h); a failed attempt is retried after recoveryRetryMs.
  bool recoverWithSelfTest = true;
  std::int64_t recoveryRetryMs = 30'000;
  // How long a reset may take to start and finish; 0: as long as the driver may take on the
  // node's generation (reset::driverResetLimit).
  std::int64_t resetTimeoutMs = 0;
  // AWS's health conditions (aws_health.h); `awsClear` is parsed into aws.clear at start.
  AwsHealthOptions aws;
  std::string awsClear = "reboot";
  // The Kubernetes API, to read the scheduler extender's hand-off on this node's pods: a
  // kubeconfig file, else the in-cluster service account when there is one.
  std::string kubeconfig;
  std::string nodeName;
  // "namespace/name" of the DaemonSet that runs this agent: a stopping device-plugin agent taints
  // its node only while that DaemonSet will start another one there (daemonset_successor.h).
  std::string daemonSet;
  bool publishNode = true;
  // The deep health check (health/deep_check/deep_check.h): periodic when the interval is set, on
  // demand through POST /deep-check and `neuron-node-agent check`.
  std::int64_t deepCheckIntervalMs = 0;
  int deepCheckMemoryBytes = 4 << 20;
  int deepCheckHostAllReduceBytes = 4 << 20;
  std::int64_t deepCheckTimeoutMs = 10'000;
  std::string deepCheckCommand;
  std::int64_t deepCheckCommandTimeoutMs = 300'000;
  bool json = false;     // `check`: print JSON
  int debugDevice = -1;  // `debug`: only this device (-1: every device)
  log::Settings log;
  bool printConfigReference = false;
};

void registerAgentSettings(config::SettingTable& table, AgentConfig* config);
// Refuses settings that cannot work together or at all, naming the flag and the value, before
// any tree is written or device read; parses --health-condition-clear into aws.clear.
Result<void> normalizeAgentConfig(AgentConfig& config);
health::DeepCheckOptions deepCheckOptionsOf(const AgentConfig& config);

}  // namespace torus::agent
