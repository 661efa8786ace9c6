// NodeAgent: the long-running process on every Neuron node. Today it discovers the node (real or
// simulated), reports what it found, and serves /healthz; the device plugin, runtime, health
// and monitor attach here as they land. main.cc only parses config and waits for a signal.
#pragma once

#include <memory>

#include "common/base/result.h"
#include "common/http/http_server.h"
#include "node-runtime/agent/agent_config.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/node_source/node_source.h"

namespace torus::agent {

class NodeAgent {
 public:
  static Result<std::unique_ptr<NodeAgent>> start(const AgentConfig& config);

  NodeAgent(node_source::PreparedNode prepared, discovery::Discovery discovery);
  ~NodeAgent();
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  int httpPort() const { return http_ ? http_->port() : 0; }
  const discovery::Discovery& discovery() const { return discovery_; }
  void stop();

 private:
  Result<void> serveHttp(const std::string& address);

  node_source::PreparedNode prepared_;
  discovery::Discovery discovery_;
  std::unique_ptr<http::HttpServer> http_;
};

}  // namespace torus::agent
