// ExtenderConfig: everything neuron-scheduler-extender can be told, and the one table that
// declares it.
#pragma once

#include <string>

#include "common/base/log.h"
#include "common/base/result.h"
#include "common/config/settings.h"

namespace torus::extender {

struct ExtenderConfig {
  std::string configFile;
  std::string listen = "0.0.0.0:12345";
  std::string urlPrefix;
  std::string simulateCluster;
  std::string kubeconfig;
  std::string kubeContext;
  int assumeTtlSeconds = 300;
  bool printConfigReference = false;
  std::string tlsCertFile;
  std::string tlsKeyFile;
  std::string tlsClientCaFile;
  std::string healthListen;
  int maxBodyMiB = 16;
  int requestMemoryMiB = 256;
  std::string schedulerName = "neuron-scheduler";
  bool crossResourcePreemption = true;
  bool serveState = false;
  bool chooseInFilter = true;
  bool allocationEvents = false;
  log::Settings log;
};

void registerExtenderSettings(config::SettingTable& table, ExtenderConfig* config);

// Checks what can be checked before the cluster is reached, so a typo is reported as one, and
// puts the URL prefix in its one form ("" or "/path", no trailing slash).
Result<void> normalizeExtenderConfig(ExtenderConfig& config);

}  // namespace torus::extender
