#include "node-runtime/agent/debug_command.h"

#include <cstdio>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "common/http/http_server.h"

namespace torus::agent {
namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "neuron-node-agent debug: %s\n", message.c_str());
  return 2;
}

}  // namespace

int runDebugCommand(const AgentConfig& config) {
  if (config.adminAddr.empty()) {
    return fail("the agent serves no admin address (--admin-addr is empty), so it has no report");
  }
  auto listen = http::parseListenAddress(config.adminAddr);
  if (!listen) return fail("--admin-addr=" + config.adminAddr + ": " + listen.error().message);
  // A wildcard listener is reached on loopback, like any other.
  std::string host = listen->host;
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  httplib::Client client(host, listen->port);
  client.set_connection_timeout(std::chrono::seconds(5));
  client.set_read_timeout(std::chrono::seconds(60));
  const std::string path =
      config.debugDevice >= 0 ? "/debug?device=" + std::to_string(config.debugDevice) : "/debug";
  const httplib::Result reply = client.Get(path);
  const std::string where = "the agent at " + config.adminAddr;
  if (!reply) return fail("cannot ask " + where + ": " + httplib::to_string(reply.error()));
  if (reply->status != 200) {
    const nlohmann::json body = nlohmann::json::parse(reply->body, nullptr, false);
    const std::string why = body.is_object() && body.contains("error") && body["error"].is_string()
                                ? body["error"].get<std::string>()
                                : reply->body;
    return fail(where + " answered HTTP " + std::to_string(reply->status) + ": " + why);
  }
  std::fwrite(reply->body.data(), 1, reply->body.size(), stdout);
  return 0;
}

}  // namespace torus::agent
