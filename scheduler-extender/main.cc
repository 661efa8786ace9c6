// neuron-scheduler-extender: kube-scheduler's HTTP extender for Neuron resources. Parses its
// settings, builds the cluster state, serves the verbs, and stops in order on SIGTERM/SIGINT.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include "common/base/log.h"
#include "common/base/memory_budget.h"
#include "common/base/shutdown_signal.h"
#include "common/base/version.h"
#include "common/config/command_line.h"
#include "common/config/log_settings.h"
#include "common/http/http_server.h"
#include "common/kube/kube_config.h"
#include "scheduler-extender/kube/api_binder.h"
#include "scheduler-extender/kube/cluster_sync.h"
#include "scheduler-extender/server/http_routes.h"
#include "scheduler-extender/state/simulated_cluster.h"

namespace {

constexpr const char* kUsage = "neuron-scheduler-extender [flags]";
constexpr const char* kDescription =
    "kube-scheduler extender for aws.amazon.com/neuron and aws.amazon.com/neuroncore: filter,\n"
    "prioritize, bind and preempt along the NeuronLink topology (POST <prefix>/filter, ...,\n"
    "GET /healthz, /metrics).\n\n"
    "In a cluster, nodes and pods are listed and watched through the Kubernetes API (in-cluster\n"
    "service account, or --kubeconfig): which pod holds which cores is read from the pods'\n"
    "AWS_NEURON_IDS annotations, and bind writes those annotations and then the Binding.\n"
    "With --simulate-cluster the same API is served over an in-memory cluster instead.\n"
    "GET /readyz answers 200 once nodes and pods have been listed.\n\n"
    "Examples:\n"
    "  neuron-scheduler-extender --simulate-cluster=trn2.48xlarge:256,inf2.48xlarge:64\n"
    "  neuron-scheduler-extender --kubeconfig=$HOME/.kube/config --listen=127.0.0.1:12345";

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
  int maxBodyMiB = 16;
  int requestMemoryMiB = 256;
  std::string schedulerName = "neuron-scheduler";
  bool crossResourcePreemption = true;
  bool serveState = false;
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
  table.addString("kubeconfig", "KUBECONFIG", "kubeconfig", "FILE",
                  "reach the API with this kubeconfig (default: in-cluster service account)",
                  &config.kubeconfig);
  table.addString("kube-context", "TORUS_KUBE_CONTEXT", "kubeContext", "NAME",
                  "kubeconfig context to use (default: its current-context)", &config.kubeContext);
  table.addInt("assume-ttl", "TORUS_ASSUME_TTL", "assumeTtlSeconds", "SECONDS",
               "how long a bind may go unseen on its pod before its cores are given back", 5, 86400,
               &config.assumeTtlSeconds);
  table.addString("tls-cert-file", "TORUS_TLS_CERT_FILE", "tlsCertFile", "FILE",
                  "serve HTTPS with this certificate (with --tls-key-file)", &config.tlsCertFile);
  table.addString("tls-key-file", "TORUS_TLS_KEY_FILE", "tlsKeyFile", "FILE",
                  "private key for --tls-cert-file", &config.tlsKeyFile);
  table.addInt("max-body-mib", "TORUS_MAX_BODY_MIB", "maxBodyMiB", "MIB",
               "largest request body accepted; larger ones get 413", 1, 1024, &config.maxBodyMiB);
  table.addInt("request-memory-mib", "TORUS_REQUEST_MEMORY_MIB", "requestMemoryMiB", "MIB",
               "memory that requests being parsed may hold at once (a body peaks at about 24x its "
               "size); beyond it requests wait up to 5 s, then get 503",
               16, 65536, &config.requestMemoryMiB);
  table.addString("scheduler-name", "TORUS_SCHEDULER_NAME", "schedulerName", "NAME",
                  "the scheduler (spec.schedulerName) that calls this extender; cross-resource "
                  "preemption acts only for its pods",
                  &config.schedulerName);
  table.addSwitch("cross-resource-preemption", "TORUS_CROSS_RESOURCE_PREEMPTION",
                  "crossResourcePreemption",
                  "evict lower-priority pods of one Neuron resource for a pod of the other, which "
                  "kube-scheduler's preemption cannot see (uses pods/eviction)",
                  &config.crossResourcePreemption);
  table.addSwitch("serve-state", "TORUS_SERVE_STATE", "serveState",
                  "serve GET /state: every node's free ids and every Neuron pod's allocation, to "
                  "whoever reaches the port",
                  &config.serveState);
  torus::config::addLogSettings(table, &config.log);
  table.addSwitch("print-config-reference", "", "",
                  "print the settings reference as Markdown (docs/config.md) and exit",
                  &config.printConfigReference);
  const torus::config::CommandInfo info{"neuron-scheduler-extender", kUsage, kDescription,
                                        "config"};
  if (auto exitCode = torus::config::parseCommandLine(table, info, argc, argv)) return *exitCode;
  if (config.printConfigReference) {
    std::fputs(table.markdownReference().c_str(), stdout);
    return 0;
  }

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

  // Flags are checked before the cluster is reached, so a typo is reported as one.
  auto address = torus::http::parseListenAddress(config.listen);
  if (!address) {
    TORUS_LOG(Error, Extender, "bad --listen", {"error", address.error().message});
    return 2;
  }
  if (config.tlsCertFile.empty() != config.tlsKeyFile.empty()) {
    TORUS_LOG(Error, Extender,
              "TLS needs both a certificate file and a key file (--tls-cert-file, --tls-key-file)");
    return 2;
  }

  torus::extender::ClusterState state;
  torus::extender::PodCache podsFromApi;
  std::unique_ptr<torus::extender::ClusterSync> sync;
  std::unique_ptr<torus::extender::ApiBinder> binder;
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
  } else {
    auto kube = config.kubeconfig.empty()
                    ? torus::kube::inClusterConfig()
                    : torus::kube::loadKubeconfig(config.kubeconfig, config.kubeContext);
    if (!kube) {
      TORUS_LOG(Error, Extender,
                "no cluster to serve: pass --kubeconfig, run in a pod, or use --simulate-cluster",
                {"error", kube.error().message});
      return 2;
    }
    TORUS_LOG(Info, Extender, "using the Kubernetes API", {"server", kube->server});
    torus::extender::SyncOptions syncOptions;
    syncOptions.assumeTtl = std::chrono::seconds(config.assumeTtlSeconds);
    syncOptions.podsFromApi = &podsFromApi;
    if (config.crossResourcePreemption) {
      syncOptions.crossResourcePreemption =
          torus::extender::CrossResourcePreemptionOptions{.schedulerName = config.schedulerName};
    }
    sync = std::make_unique<torus::extender::ClusterSync>(*kube, state, syncOptions);
    binder = std::make_unique<torus::extender::ApiBinder>(*kube);
  }
  torus::extender::PodCache pods;
  torus::extender::VerbMetrics metrics;
  torus::http::ServerOptions options;
  options.address = *address;
  options.maxBodyBytes = static_cast<std::size_t>(config.maxBodyMiB) * 1024 * 1024;
  options.tlsCertFile = config.tlsCertFile;
  options.tlsKeyFile = config.tlsKeyFile;
  torus::MemoryBudget requestMemory(static_cast<std::size_t>(config.requestMemoryMiB) * 1024 * 1024,
                                    torus::extender::kTrimAfterBytes);
  torus::extender::ExtenderContext context{state, pods, metrics};
  context.requestMemory = &requestMemory;
  context.learnNodesFromRequests = sync == nullptr;
  context.binder = binder.get();
  context.serveState = config.serveState;
  if (sync) context.podsFromApi = &podsFromApi;
  if (sync) {
    context.ready = [&sync] { return sync->hasSynced(); };
    context.moreMetrics = [&sync] { return sync->metricsText(); };
  }
  auto server = torus::http::HttpServer::start(
      options, torus::extender::extenderRoutes(config.urlPrefix, context));
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
  sync.reset();
  TORUS_LOG(Info, Extender, "stopped");
  return 0;
}
