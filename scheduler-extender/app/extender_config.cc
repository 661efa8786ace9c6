#include "scheduler-extender/app/extender_config.h"

#include "common/config/log_settings.h"
#include "common/http/http_server.h"

namespace torus::extender {

void registerExtenderSettings(config::SettingTable& table, ExtenderConfig* config) {
  table.addString("config", "TORUS_CONFIG", "", "FILE", "YAML settings file (version: v1)",
                  &config->configFile);
  table.addString("listen", "TORUS_LISTEN", "listen", "HOST:PORT", "address to serve on",
                  &config->listen);
  table.addString("url-prefix", "TORUS_URL_PREFIX", "urlPrefix", "PATH",
                  "path prefix of the verbs (the path part of the extender config's urlPrefix)",
                  &config->urlPrefix);
  table.addString("simulate-cluster", "TORUS_SIMULATE_CLUSTER", "simulateCluster", "TYPE:N,...",
                  "serve an in-memory cluster of catalog nodes named sim-<type>-<index>",
                  &config->simulateCluster);
  table.addString("kubeconfig", "KUBECONFIG", "kubeconfig", "FILE",
                  "reach the API with this kubeconfig (default: in-cluster service account)",
                  &config->kubeconfig);
  table.addString("kube-context", "TORUS_KUBE_CONTEXT", "kubeContext", "NAME",
                  "kubeconfig context to use (default: its current-context)", &config->kubeContext);
  table.addInt("assume-ttl", "TORUS_ASSUME_TTL", "assumeTtlSeconds", "SECONDS",
               "how long a bind may go unseen on its pod before its cores are given back", 5, 86400,
               &config->assumeTtlSeconds);
  table.addString("tls-cert-file", "TORUS_TLS_CERT_FILE", "tlsCertFile", "FILE",
                  "serve HTTPS with this certificate (with --tls-key-file)", &config->tlsCertFile);
  table.addString("tls-key-file", "TORUS_TLS_KEY_FILE", "tlsKeyFile", "FILE",
                  "private key for --tls-cert-file", &config->tlsKeyFile);
  table.addString(
      "tls-client-ca-file", "TORUS_TLS_CLIENT_CA_FILE", "tlsClientCaFile", "FILE",
      "mutual TLS: accept only clients whose certificate this CA bundle signed "
      "(kube-scheduler's extenders[].tlsConfig certFile/keyFile); needs --tls-cert-file",
      &config->tlsClientCaFile);
  table.addString("health-listen", "TORUS_HEALTH_LISTEN", "healthListen", "HOST:PORT",
                  "serve /healthz, /readyz and /metrics on this address too, in plain HTTP: for "
                  "probes and Prometheus, which present no client certificate to --listen",
                  &config->healthListen);
  table.addInt("max-body-mib", "TORUS_MAX_BODY_MIB", "maxBodyMiB", "MIB",
               "largest request body accepted; larger ones get 413", 1, 1024, &config->maxBodyMiB);
  table.addInt("request-memory-mib", "TORUS_REQUEST_MEMORY_MIB", "requestMemoryMiB", "MIB",
               "memory that requests being parsed may hold at once (a body peaks at about 24x its "
               "size); beyond it requests wait up to 5 s, then get 503",
               16, 65536, &config->requestMemoryMiB);
  table.addString("scheduler-name", "TORUS_SCHEDULER_NAME", "schedulerName", "NAME",
                  "the scheduler (spec.schedulerName) that calls this extender; cross-resource "
                  "preemption acts only for its pods",
                  &config->schedulerName);
  table.addSwitch("cross-resource-preemption", "TORUS_CROSS_RESOURCE_PREEMPTION",
                  "crossResourcePreemption",
                  "evict lower-priority pods of one Neuron resource for a pod of the other, which "
                  "kube-scheduler's preemption cannot see (uses pods/eviction)",
                  &config->crossResourcePreemption);
  table.addSwitch("choose-in-filter", "TORUS_CHOOSE_IN_FILTER", "chooseInFilter",
                  "answer filter for a Neuron pod that states no scoring preference with the one "
                  "node this extender chooses, so kube-scheduler skips scoring and prioritize; "
                  "false: every node that fits passes and kube-scheduler's score plugins weigh in",
                  &config->chooseInFilter);
  table.addSwitch("allocation-events", "TORUS_ALLOCATION_EVENTS", "allocationEvents",
                  "post a NeuronAllocated Event on every pod bound, naming its ids (one more API "
                  "write per pod; the ids are on the pod's annotations either way)",
                  &config->allocationEvents);
  table.addSwitch("serve-state", "TORUS_SERVE_STATE", "serveState",
                  "serve GET /state: every node's free ids and every Neuron pod's allocation, to "
                  "whoever reaches the port",
                  &config->serveState);
  config::addLogSettings(table, &config->log);
  table.addSwitch("print-config-reference", "", "",
                  "print the settings reference as Markdown (docs/config.md) and exit",
                  &config->printConfigReference);
}

Result<void> normalizeExtenderConfig(ExtenderConfig& config) {
  std::string& prefix = config.urlPrefix;
  if (!prefix.empty() && prefix.front() != '/') prefix.insert(prefix.begin(), '/');
  while (!prefix.empty() && prefix.back() == '/')
    prefix.pop_back();
  if (auto address = http::parseListenAddress(config.listen); !address) {
    std::string message = "--listen: ";  // appended piecewise: GCC 12's -Wrestrict misfires
    message += address.error().message;
    return makeError(ErrorCode::kInvalidArgument, message);
  }
  if (config.tlsCertFile.empty() != config.tlsKeyFile.empty()) {
    return makeError(ErrorCode::kInvalidArgument,
                     "TLS needs both a certificate file and a key file (--tls-cert-file, "
                     "--tls-key-file)");
  }
  if (!config.tlsClientCaFile.empty() && config.tlsCertFile.empty()) {
    return makeError(ErrorCode::kInvalidArgument,
                     "--tls-client-ca-file (mutual TLS) needs --tls-cert-file and --tls-key-file");
  }
  if (!config.healthListen.empty()) {
    if (auto address = http::parseListenAddress(config.healthListen); !address) {
      std::string message = "--health-listen: ";
      message += address.error().message;
      return makeError(ErrorCode::kInvalidArgument, message);
    }
  }
  return {};
}

}  // namespace torus::extender
