// neuron-node-agent: the Torus agent on every Neuron node. Parses its settings, starts the
// agent, and stops it in order on SIGTERM/SIGINT.
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/base/log.h"
#include "common/base/shutdown_signal.h"
#include "common/base/version.h"
#include "common/config/command_line.h"
#include "node-runtime/agent/agent_config.h"
#include "node-runtime/agent/check_command.h"
#include "node-runtime/agent/debug_command.h"
#include "node-runtime/agent/kube/forget_nodes.h"
#include "node-runtime/agent/node_agent.h"

namespace {

constexpr const char* kUsage =
    "neuron-node-agent [flags]\n       neuron-node-agent check [--json] [flags]\n"
    "       neuron-node-agent forget-nodes [--kubeconfig=FILE]\n"
    "       neuron-node-agent debug [--device=N] [--admin-addr=HOST:PORT]";
constexpr const char* kDescription =
    "The Torus node agent: discovers this node's Neuron devices, cores and LNC from the driver's\n"
    "sysfs and serves /healthz. With --simulate=TYPE it first writes a simulated driver tree\n"
    "for that instance type and runs on it, exactly as on a real node.\n\n"
    "`check` runs the deep health check once (memory pattern test on each idle device,\n"
    "every NeuronLink timed, an AllReduce ring along NeuronLink) and exits 0 when it passed,\n"
    "1 when a device or link failed, 2 when the node could not be checked.\n\n"
    "`forget-nodes` removes from every Node what agents published (torus.dev/* and UltraServer\n"
    "labels, the torus.dev/topology annotation, the NeuronHealthy condition); the chart runs it\n"
    "when it is uninstalled.\n\n"
    "`debug` prints the running agent's debug report as JSON (the devices' health and driver\n"
    "files, the kernel log's hardware-error lines, allocations, metrics), asked of its admin\n"
    "address; `kubectl neuron debug NODE` runs it in the agent's pod and archives it.\n\n"
    "Examples:\n"
    "  neuron-node-agent --simulate=trn2.48xlarge --metrics-addr=127.0.0.1:9400\n"
    "  neuron-node-agent --config=/etc/torus/agent.yaml\n"
    "  neuron-node-agent check --simulate=trn2.48xlarge --simulate-fault=link-cut:3-7";

}  // namespace

int main(int argc, char** argv) {
  torus::ShutdownSignal shutdown;  // before any thread exists, so only main receives the signal
  torus::agent::AgentConfig config;
  torus::config::SettingTable table("neuron-node-agent");
  torus::agent::registerAgentSettings(table, &config);

  const torus::config::CommandInfo info{"neuron-node-agent", kUsage, kDescription, "config"};
  std::vector<std::string> command;
  if (auto exitCode = torus::config::parseCommandLine(table, info, argc, argv, &command))
    return *exitCode;
  if (config.printConfigReference) {
    std::fputs(table.markdownReference().c_str(), stdout);
    return 0;
  }
  torus::log::configure(config.log);
  if (command == std::vector<std::string>{"check"}) return torus::agent::runCheckCommand(config);
  if (command == std::vector<std::string>{"debug"}) return torus::agent::runDebugCommand(config);
  if (command == std::vector<std::string>{"forget-nodes"}) {
    return torus::agent::runForgetNodesCommand(config.kubeconfig);
  }
  if (!command.empty()) {
    std::fprintf(stderr, "neuron-node-agent: unexpected argument \"%s\" (see --help)\n",
                 command.front().c_str());
    return 2;
  }
  TORUS_LOG(Info, Agent, "starting neuron-node-agent", {"version", torus::versionString()});
  torus::config::logEffectiveSettings(table);

  auto agent = torus::agent::NodeAgent::start(config);
  if (!agent) {
    TORUS_LOG(Error, Agent, "cannot start", {"error", agent.error().message});
    return 1;
  }
  std::unique_ptr<torus::agent::NodeAgent> running = std::move(*agent);
  TORUS_LOG(Info, Agent, "ready");
  const int signal = shutdown.wait();
  TORUS_LOG(Info, Agent, "shutting down", {"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"});
  running.reset();
  TORUS_LOG(Info, Agent, "stopped");
  return 0;
}
