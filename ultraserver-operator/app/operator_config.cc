#include "ultraserver-operator/app/operator_config.h"

#include "common/config/log_settings.h"
#include "common/http/http_server.h"

namespace torus::ultraserver {

void registerOperatorSettings(config::SettingTable& table, OperatorConfig* config) {
  table.addString("config", "TORUS_CONFIG", "", "FILE", "YAML settings file (version: v1)",
                  &config->configFile);
  table.addString("kubeconfig", "KUBECONFIG", "kubeconfig", "FILE",
                  "reach the API with this kubeconfig (default: in-cluster service account)",
                  &config->kubeconfig);
  table.addString("kube-context", "TORUS_KUBE_CONTEXT", "kubeContext", "NAME",
                  "kubeconfig context to use (default: its current-context)", &config->kubeContext);
  table.addString("namespace", "POD_NAMESPACE", "namespace", "NAME",
                  "namespace of the NeuronUltraServer objects and of the leader lease (the "
                  "chart's release namespace)",
                  &config->nameSpace);
  table.addSwitch("leader-elect", "TORUS_LEADER_ELECT", "leaderElect",
                  "act only while holding the lease neuron-ultraserver-operator, so that several "
                  "replicas never allocate at once",
                  &config->leaderElect);
  table.addString("health-probe-bind-address", "TORUS_HEALTH_PROBE_BIND_ADDRESS",
                  "healthProbeBindAddress", "HOST:PORT", "serve GET /healthz and /readyz here",
                  &config->healthProbeBindAddress);
  table.addString("metrics-bind-address", "TORUS_METRICS_BIND_ADDRESS", "metricsBindAddress",
                  "HOST:PORT", "serve GET /metrics here (Prometheus text)",
                  &config->metricsBindAddress);
  table.addInt("resync", "TORUS_RESYNC", "resyncSeconds", "SECONDS",
               "reconcile at least this often, even when no object changed", 1, 3600,
               &config->resyncSeconds);
  table.addInt("failure-grace-period", "TORUS_FAILURE_GRACE_PERIOD", "failureGracePeriodSeconds",
               "SECONDS",
               "act on a workload's failureStrategy only once a node it holds has not been Ready "
               "this long (a kubelet restart or a short partition moves nothing); 0 acts at once",
               0, 86400, &config->failureGraceSeconds);
  config::addLogSettings(table, &config->log);
  table.addSwitch("print-config-reference", "", "",
                  "print the settings reference as Markdown (docs/config.md) and exit",
                  &config->printConfigReference);
}

Result<void> normalizeOperatorConfig(OperatorConfig& config) {
  if (config.nameSpace.empty()) {
    return makeError(ErrorCode::kInvalidArgument,
                     "--namespace (or POD_NAMESPACE) is needed: the NeuronUltraServer objects "
                     "live there");
  }
  for (const auto& [flag, address] :
       {std::pair{"--health-probe-bind-address", &config.healthProbeBindAddress},
        std::pair{"--metrics-bind-address", &config.metricsBindAddress}}) {
    if (auto parsed = http::parseListenAddress(*address); !parsed) {
      std::string message = flag;
      message += ": ";
      message += parsed.error().message;
      return makeError(ErrorCode::kInvalidArgument, message);
    }
  }
  return {};
}

}  // namespace torus::ultraserver
