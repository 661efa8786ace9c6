// Reads every Neuron node agent's /metrics for `kubectl neuron top`, with no port of its own:
// the agents are the chart's node-agent pods (agent_pods.h), read through the API server's pod
// proxy (what works from a laptop), else straight from the pod's address — its IP, else its
// host's (inside the cluster, or where the API server refuses to proxy: it never proxies to
// loopback or link-local pod IPs).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/kube/kube_client_pool.h"
#include "kubectl-neuron/agent_pods.h"
#include "kubectl-neuron/neuron_top.h"

namespace torus::kubectl_neuron {

enum class ScrapeVia { kAuto, kProxy, kDirect };
Result<ScrapeVia> parseScrapeVia(const std::string& text);

struct ScrapeOptions {
  std::string selector = contracts::kAgentSelector;
  std::string agentNamespace = kDefaultAgentNamespace;
  ScrapeVia via = ScrapeVia::kAuto;
  std::string node;  // only the agent on this node
  // Read every agent at this host instead of its pod's address (a port-forward to one agent,
  // or a one-node cluster whose kubelet runs on loopback and so gives its pods no IP).
  std::string agentHost;
  std::chrono::milliseconds timeout{3000};
};

// The API connections for scrapes: kept alive from one refresh of the view to the next, one per
// scrape in flight.
kube::KubeClientPool scrapePool(const kube::KubeConfig& config, const ScrapeOptions& options);

// One entry per running agent pod (sorted by node); a pod whose metrics cannot be read carries
// the reason. An error only when the agent pods cannot be listed.
Result<std::vector<AgentScrape>> scrapeAgents(kube::KubeClientPool& api,
                                              const ScrapeOptions& options);

}  // namespace torus::kubectl_neuron
