// OperatorConfig: everything neuron-ultraserver-operator can be told, and the one table that
// declares it (flag, environment variable, YAML key; the flag names are those of AWS's operator
// where it has one, so its Deployment's arguments carry over).
#pragma once

#include <string>

#include "common/base/log.h"
#include "common/base/result.h"
#include "common/config/settings.h"

namespace torus::ultraserver {

struct OperatorConfig {
  std::string configFile;
  std::string kubeconfig;
  std::string kubeContext;
  std::string nameSpace;  // where the NeuronUltraServer objects and the lease live
  bool leaderElect = true;
  std::string healthProbeBindAddress = ":8081";
  std::string metricsBindAddress = ":8080";
  int resyncSeconds = 30;
  // How long a node of a running workload may be not Ready before its failure strategy acts:
  // longer than a kubelet restart, so a restart or a short partition moves nothing.
  int failureGraceSeconds = 120;
  bool printConfigReference = false;
  log::Settings log;
};

void registerOperatorSettings(config::SettingTable& table, OperatorConfig* config);

// Checks what can be checked before the API is reached.
Result<void> normalizeOperatorConfig(OperatorConfig& config);

}  // namespace torus::ultraserver
