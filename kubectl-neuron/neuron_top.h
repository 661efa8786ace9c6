// `kubectl neuron top`: what every Neuron node's agent reports on its /metrics — which pod holds
// which cores (torus_allocation_info), their device memory and executions, device health, ECC
// and deep checks — next to the health conditions on the Node objects. Pure: the scrapes and
// nodes in, a table or JSON out.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/metrics/prometheus_parse.h"

namespace torus::kubectl_neuron {

// One agent's /metrics, or why it could not be read.
struct AgentScrape {
  std::string node;
  std::string error;  // empty when `samples` were read
  std::vector<metrics::Sample> samples;
};

struct TopOptions {
  std::string node;  // one node in detail (its devices too), else every node
  bool json = false;
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
};

// `nodes`: a NodeList (conditions and HyperPod's health label per node).
std::string renderTop(const std::vector<AgentScrape>& scrapes, const nlohmann::json& nodes,
                      const TopOptions& options);

}  // namespace torus::kubectl_neuron
