#include "kubectl-neuron/debug_collect.h"

#include <nlohmann/json.hpp>

#include "common/base/json_nesting.h"
#include "common/base/strings.h"
#include "common/base/version.h"
#include "common/kube/kube_client.h"
#include "common/kube/object_fields.h"
#include "common/kube/pod_exec.h"
#include "kubectl-neuron/agent_pods.h"

namespace torus::kubectl_neuron {
namespace {

using nlohmann::json;

struct AgentContainer {
  std::string nameSpace;
  std::string pod;
  std::string container;
  std::string binary = "neuron-node-agent";
  std::string adminAddr;  // as the pod's spec sets it; "" for the agent's default
  int restarts = 0;
};

// The value of --NAME=VALUE or --NAME VALUE in `args`; "" when absent.
std::string flagValue(const json& args, const std::string& name) {
  const std::string flag = "--" + name;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!args[i].is_string()) continue;
    const std::string arg = args[i].get<std::string>();
    if (arg.starts_with(flag + "=")) return arg.substr(flag.size() + 1);
    if (arg == flag && i + 1 < args.size() && args[i + 1].is_string())
      return args[i + 1].get<std::string>();
  }
  return "";
}

std::optional<AgentContainer> agentOf(const std::vector<json>& agents) {
  for (const json& pod : agents) {
    const json& containers = kube::arrayAt(pod, {"spec", "containers"});
    if (containers.empty()) continue;
    // The chart's container is named after its component; else the pod's first.
    const json* chosen = &containers.front();
    for (const json& container : containers) {
      if (kube::stringAt(container, {"name"}) == contracts::kAgentComponent) chosen = &container;
    }
    AgentContainer agent;
    agent.nameSpace = kube::stringAt(pod, {"metadata", "namespace"});
    agent.pod = kube::stringAt(pod, {"metadata", "name"});
    agent.container = kube::stringAt(*chosen, {"name"});
    const json& command = kube::arrayAt(*chosen, {"command"});
    if (!command.empty() && command.front().is_string())
      agent.binary = command.front().get<std::string>();
    agent.adminAddr = flagValue(kube::arrayAt(*chosen, {"args"}), "admin-addr");
    for (const json& status : kube::arrayAt(pod, {"status", "containerStatuses"})) {
      const json& restarts = kube::fieldAt(status, {"restartCount"});
      if (kube::stringAt(status, {"name"}) == agent.container && restarts.is_number_integer())
        agent.restarts = restarts.get<int>();
    }
    return agent;
  }
  return std::nullopt;
}

Result<json> agentReport(const kube::KubeConfig& config, const AgentContainer& agent,
                         const DebugOptions& options) {
  kube::ExecRequest request;
  request.nameSpace = agent.nameSpace;
  request.pod = agent.pod;
  request.container = agent.container;
  request.command = {agent.binary, "debug"};
  if (!agent.adminAddr.empty()) request.command.push_back("--admin-addr=" + agent.adminAddr);
  if (options.device) request.command.push_back("--device=" + std::to_string(*options.device));
  request.timeout = options.timeout;
  auto ran = kube::execInPod(config, request);
  if (!ran) return std::move(ran).error();
  if (ran->exitCode != 0) {
    const std::string why = escapeUnprintable(clipForMessage(trim(ran->err), 2048));
    return makeError(ErrorCode::kUnavailable, "neuron-node-agent debug exited " +
                                                  std::to_string(ran->exitCode) +
                                                  (why.empty() ? std::string() : ": " + why));
  }
  // What the pod printed is the agent's only if the pod is (agent_pods.h); still, it is read as
  // untrusted bytes: bounded nesting before the parse, and nothing of it reaches a terminal raw.
  if (auto nesting = checkJsonNesting(ran->out); !nesting) {
    return std::move(nesting).error().withContext("neuron-node-agent debug's report");
  }
  json report = json::parse(ran->out, nullptr, false);
  if (!report.is_object()) {
    return makeError(ErrorCode::kInternal, "neuron-node-agent debug printed no JSON report");
  }
  return report;
}

}  // namespace

Result<DebugInputs> collectDebugInputs(const kube::KubeConfig& config,
                                       const DebugOptions& options) {
  kube::KubeClient api(config, options.timeout);
  DebugInputs inputs;
  inputs.node = options.node;
  inputs.device = options.device;
  inputs.collectedAt = std::chrono::system_clock::now();
  inputs.toolVersion = std::string(versionString());
  inputs.nodeObject = api.get("/api/v1/nodes/" + percentEncoded(options.node));
  if (!inputs.nodeObject && inputs.nodeObject.error().code == ErrorCode::kNotFound) {
    return makeError(ErrorCode::kNotFound, "node " + options.node + " not found");
  }
  const std::string onNode = "fieldSelector=" + percentEncoded("spec.nodeName=" + options.node);
  auto agents = listAgentPods(api, options.agentNamespace, options.agentSelector, options.node);
  std::optional<AgentContainer> agent;
  if (!agents) {
    inputs.agentReport = std::move(agents).error();
  } else if (agent = agentOf(agents->pods); !agent) {
    std::string why = "no running node agent pod on " + options.node + " in namespace " +
                      options.agentNamespace + " (--agent-namespace names where Torus runs)";
    if (!agents->refused.empty()) {
      why += "; not taken as the agent: " + joinFirst(agents->refused, "; ", 3);
    }
    inputs.agentReport = makeError(ErrorCode::kNotFound, escapeUnprintable(why));
  }
  if (agent) {
    inputs.agentPod = agent->nameSpace + "/" + agent->pod;
    inputs.agentReport = agentReport(config, *agent, options);
    const std::string log = "/api/v1/namespaces/" + agent->nameSpace + "/pods/" + agent->pod +
                            "/log?container=" + percentEncoded(agent->container) +
                            "&tailLines=" + std::to_string(options.logLines);
    inputs.agentLog = api.getText(log);
    if (agent->restarts > 0) inputs.agentLogPrevious = api.getText(log + "&previous=true");
  }
  inputs.events =
      api.get("/api/v1/events?fieldSelector=" +
              percentEncoded("involvedObject.kind=Node,involvedObject.name=" + options.node));
  inputs.pods = api.get("/api/v1/pods?" + onNode);
  inputs.claims = api.get("/apis/resource.k8s.io/v1/resourceclaims");
  inputs.slices = api.get("/apis/resource.k8s.io/v1/resourceslices?" + onNode);
  return inputs;
}

}  // namespace torus::kubectl_neuron
