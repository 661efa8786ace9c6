#include "node-runtime/agent/agent_config.h"

#include "common/config/log_settings.h"

namespace torus::agent {

void registerAgentSettings(config::SettingTable& table, AgentConfig* config) {
  table.addString("config", "TORUS_CONFIG", "", "FILE",
                  "YAML settings file (version: v1; keys as listed here)", &config->configFile);
  table.addString("metrics-addr", "TORUS_METRICS_ADDR", "metricsAddr", "HOST:PORT",
                  "where to serve /healthz (and /metrics); port 0 picks a free port",
                  &config->metricsAddr);
  node_source::addNodeSourceSettings(table, &config->node);
  config::addLogSettings(table, &config->log);
  table.addSwitch("print-config-reference", "", "",
                  "print the settings reference as Markdown (docs/config.md) and exit",
                  &config->printConfigReference);
  table.addSwitch("version", "", "", "print the version and exit", &config->version);
}

}  // namespace torus::agent
