// neuron-scheduler-extender: kube-scheduler's HTTP extender for Neuron resources. Parses its
// settings, builds the cluster state, serves the verbs, and stops in order on SIGTERM/SIGINT.
#include <csignal>
#include <cstdio>
#include <string>

#include "common/base/log.h"
#include "common/base/shutdown_signal.h"
#include "common/base/version.h"
#include "common/config/command_line.h"
#include "common/config/log_settings.h"
#include "common/http/http_server.h"
#include "scheduler-extender/server/http_routes.h"
#include "scheduler-extender/state/simulated_cluster.h"

namespace {

constexpr const char* kUsage = "neuron-scheduler-extender [flags]";
constexpr const char* kDescription =
    "kube-scheduler extender for aws.amazon.com/neuron and aws.amazon.com/neuroncore: filter,\n"
    "prioritize, bind and preempt along the NeuronLink topology (POST <prefix>/filter, ...,\n"
    "GET /healthz, /metrics).\n\n"
    "Nodes come from --simulate-cluster, or from the NodeLists kube-scheduler sends when the\n"
    "extender is configured with nodeCacheCapable: false. Reading nodes and pods from the\n"
    "Kubernetes API is not built yet; until it is, bind records allocations in memory only.\n\n"
    "Examples:\n"
    "  neuron-scheduler-extender --simulate-cluster=trn2.48xlarge:256,inf2.48xlarge:64\n"
    "  neuron-scheduler-extender --listen=127.0.0.1:12345 --url-prefix=/neuron";

struct ExtenderConfig {
  std::string configFile;
  std::string listen = "0.0.0.0:12345";
  std::string urlPrefix;
  std::string simulateCluster;
  std::string tlsCertFile;
  std::string tlsKeyFile;
  int maxBodyMiB = 16;
  torus::log::Settings log;
};

}  // namespace

int main(int argc, char** argv) {
  torus::ShutdownSignal shutdown;  // before any thread exists, so only main receives the signal
  ExtenderConfig config;
  torus::config::SettingTable table("neuron-scheduler-extender");
  table.addString("config", "TORUS_CONFIG", "", "FILE", "YAML settings file (version: v1)",
                  &config.configFile);
  table.addString("listen", "TORUS_LISTEN", "listen", "HOST:PORT", "address to serve on",
                  &config.listen);
  table.addString("url-prefix", "TORUS_URL_PREFIX", "urlPrefix", "PATH",
                  "path prefix of the verbs (the path part of the extender config's urlPrefix)",
                  &config.urlPrefix);
  table.addString("simulate-cluster", "TORUS_SIMULATE_CLUSTER", "simulateCluster", "TYPE:N,...",
                  "serve an in-memory cluster of catalog nodes named sim-<type>-<index>",
                  &config.simulateCluster);
  table.addString("tls-cert-file", "TORUS_TLS_CERT_FILE", "tlsCertFile", "FILE",
                  "serve HTTPS with this certificate (with --tls-key-file)", &config.tlsCertFile);
  table.addString("tls-key-file", "TORUS_TLS_KEY_FILE", "tlsKeyFile", "FILE",
                  "private key for --tls-cert-file", &config.tlsKeyFile);
  table.addInt("max-body-mib", "TORUS_MAX_BODY_MIB", "maxBodyMiB", "MIB",
               "largest request body accepted; larger ones get 413", 1, 1024, &config.maxBodyMiB);
  torus::config::addLogSettings(table, &config.log);
  const torus::config::CommandInfo info{"neuron-scheduler-extender", kUsage, kDescription,
                                        "config"};
  if (auto exitCode = torus::config::parseCommandLine(table, info, argc, argv)) return *exitCode;

  torus::log::configure(config.log);
  TORUS_LOG(Info, Extender, "starting neuron-scheduler-extender",
            {"version", torus::versionString()});
  for (const auto& setting : table.effective()) {
    TORUS_LOG(Info, Config, "setting", {"name", setting.flag}, {"value", setting.value},
              {"source", torus::config::sourceName(setting.source)});
  }
  if (!config.urlPrefix.empty() && config.urlPrefix.front() != '/') config.urlPrefix.insert(0, "/");
  while (!config.urlPrefix.empty() && config.urlPrefix.back() == '/')
    config.urlPrefix.pop_back();

  torus::extender::ClusterState state;
  if (!config.simulateCluster.empty()) {
    auto spec = torus::extender::parseSimulatedCluster(config.simulateCluster);
    auto added =
        spec ? torus::extender::addSimulatedNodes(state, *spec) : torus::Result<int>(spec.error());
    if (!added) {
      TORUS_LOG(Error, Extender, "cannot build the simulated cluster",
                {"error", added.error().message});
      return 2;
    }
    TORUS_LOG(Info, Extender, "simulated cluster ready", {"nodes", *added});
  }
  torus::extender::PodCache pods;
  torus::extender::VerbMetrics metrics;
  auto address = torus::http::parseListenAddress(config.listen);
  if (!address) {
    TORUS_LOG(Error, Extender, "bad --listen", {"error", address.error().message});
    return 2;
  }
  torus::http::ServerOptions options;
  options.address = *address;
  options.maxBodyBytes = static_cast<std::size_t>(config.maxBodyMiB) * 1024 * 1024;
  options.tlsCertFile = config.tlsCertFile;
  options.tlsKeyFile = config.tlsKeyFile;
  auto server = torus::http::HttpServer::start(
      options, torus::extender::extenderRoutes(config.urlPrefix, {state, pods, metrics, true}));
  if (!server) {
    TORUS_LOG(Error, Extender, "cannot serve", {"error", server.error().message});
    return 1;
  }
  TORUS_LOG(Info, Extender, "serving", {"address", address->host}, {"port", (*server)->port()},
            {"prefix", config.urlPrefix.empty() ? "/" : config.urlPrefix},
            {"tls", !config.tlsCertFile.empty()});
  const int signal = shutdown.wait();
  TORUS_LOG(Info, Extender, "shutting down", {"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"});
  (*server)->stop();
  TORUS_LOG(Info, Extender, "stopped");
  return 0;
}
