#include "kubectl-neuron/agent_scrape.h"

#include <algorithm>
#include <cctype>
#include <future>

#include <nlohmann/json.hpp>

#include "common/base/strings.h"
#include "common/kube/kube_client.h"
#include "common/kube/object_fields.h"

namespace torus::kubectl_neuron {
namespace {

using nlohmann::json;

// Bounds the scrapes in flight, so a large cluster is read quickly without a thread per node.
constexpr std::size_t kParallelScrapes = 16;

struct AgentPod {
  std::string nameSpace;
  std::string name;
  std::string node;
  std::string ip;
  int port = 9400;
};

// The Running agents (agent_pods.h) with where to read them.
std::vector<AgentPod> agentPodsOf(const std::vector<json>& agents) {
  std::vector<AgentPod> pods;
  for (const json& pod : agents) {
    AgentPod agent{
        kube::stringAt(pod, {"metadata", "namespace"}), kube::stringAt(pod, {"metadata", "name"}),
        kube::stringAt(pod, {"spec", "nodeName"}), kube::stringAt(pod, {"status", "podIP"})};
    // A hostNetwork pod's IP is its host's; a kubelet without a usable node IP gives it none.
    if (agent.ip.empty()) agent.ip = kube::stringAt(pod, {"status", "hostIP"});
    if (agent.node.empty()) continue;
    // The port named "metrics" (the chart's), else the agent's default.
    const json& containers = kube::fieldAt(pod, {"spec", "containers"});
    for (const json& container : containers.is_array() ? containers : json::array()) {
      const json& ports = kube::fieldAt(container, {"ports"});
      for (const json& port : ports.is_array() ? ports : json::array()) {
        const json& number = kube::fieldAt(port, {"containerPort"});
        if (kube::stringAt(port, {"name"}) == "metrics" && number.is_number_integer()) {
          agent.port = number.get<int>();
        }
      }
    }
    pods.push_back(std::move(agent));
  }
  return pods;
}

Result<std::string> viaProxy(kube::KubeClientPool& api, const AgentPod& pod) {
  return api.acquire()->getText("/api/v1/namespaces/" + pod.nameSpace + "/pods/" + pod.name + ":" +
                                std::to_string(pod.port) + "/proxy/metrics");
}

Result<std::string> direct(const AgentPod& pod, const std::string& agentHost,
                           std::chrono::milliseconds timeout) {
  const std::string host = agentHost.empty() ? pod.ip : agentHost;
  if (host.empty()) {
    return makeError(ErrorCode::kUnavailable,
                     "the pod has no IP (--agent-host reads it at a given address)");
  }
  kube::KubeConfig target;
  const bool v6 = host.find(':') != std::string::npos;
  target.server = "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(pod.port);
  kube::KubeClient client(target, timeout);
  return client.getText("/metrics");
}

AgentScrape scrape(kube::KubeClientPool& api, const AgentPod& pod, const ScrapeOptions& options) {
  AgentScrape out;
  out.node = pod.node;
  Result<std::string> body = makeError(ErrorCode::kUnavailable, "not read");
  // An address given for the agents is where to read them: the proxy is not tried first.
  const ScrapeVia via = options.via == ScrapeVia::kAuto && !options.agentHost.empty()
                            ? ScrapeVia::kDirect
                            : options.via;
  if (via != ScrapeVia::kDirect) body = viaProxy(api, pod);
  if (!body && via == ScrapeVia::kAuto) {
    auto fallback = direct(pod, options.agentHost, options.timeout);
    if (fallback) {
      body = std::move(fallback);
    } else {
      body = makeError(ErrorCode::kUnavailable, "through the API server: " + body.error().message +
                                                    "; directly: " + fallback.error().message);
    }
  } else if (via == ScrapeVia::kDirect) {
    body = direct(pod, options.agentHost, options.timeout);
  }
  if (!body) {
    out.error = body.error().message;
    return out;
  }
  auto samples = metrics::parsePrometheusText(*body);
  if (!samples) {
    out.error = samples.error().message;
    return out;
  }
  out.samples = std::move(*samples);
  return out;
}

}  // namespace

Result<ScrapeVia> parseScrapeVia(const std::string& text) {
  if (text == "auto") return ScrapeVia::kAuto;
  if (text == "proxy") return ScrapeVia::kProxy;
  if (text == "direct") return ScrapeVia::kDirect;
  return makeError(ErrorCode::kInvalidArgument,
                   "--via must be auto, proxy (the API server's pod proxy) or direct (the pod's "
                   "IP), got '" +
                       text + "'");
}

kube::KubeClientPool scrapePool(const kube::KubeConfig& config, const ScrapeOptions& options) {
  return kube::KubeClientPool(config, kParallelScrapes, options.timeout);
}

Result<std::vector<AgentScrape>> scrapeAgents(kube::KubeClientPool& api,
                                              const ScrapeOptions& options) {
  auto agents =
      listAgentPods(*api.acquire(), options.agentNamespace, options.selector, options.node);
  if (!agents) return std::move(agents).error();
  const std::vector<AgentPod> pods = agentPodsOf(agents->pods);
  std::vector<AgentScrape> scrapes;
  for (std::size_t first = 0; first < pods.size(); first += kParallelScrapes) {
    std::vector<std::future<AgentScrape>> batch;
    for (std::size_t i = first; i < std::min(pods.size(), first + kParallelScrapes); ++i) {
      batch.push_back(
          std::async(std::launch::async, [&, i] { return scrape(api, pods[i], options); }));
    }
    for (auto& result : batch)
      scrapes.push_back(result.get());
  }
  std::sort(scrapes.begin(), scrapes.end(),
            [](const AgentScrape& a, const AgentScrape& b) { return a.node < b.node; });
  return scrapes;
}

}  // namespace torus::kubectl_neuron
