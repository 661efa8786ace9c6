// neuron-ultraserver-operator: reserves whole UltraServers for NeuronUltraServerWorkloads before
// any of their pods is scheduled (AWS's API, neuron.aws.com/v1beta1), on Trn2 UltraServers as on
// Trn3. Parses its settings, starts the controller (app/ultraserver_operator.h), and stops in
// order on SIGTERM/SIGINT, or exits 1 when it loses the lease.
#include <csignal>
#include <cstdio>

#include "common/base/log.h"
#include "common/base/shutdown_signal.h"
#include "common/base/version.h"
#include "common/config/command_line.h"
#include "ultraserver-operator/app/operator_config.h"
#include "ultraserver-operator/app/ultraserver_operator.h"

namespace {

constexpr const char* kUsage = "neuron-ultraserver-operator [flags]";
constexpr const char* kDescription =
    "Places multi-node Neuron jobs whole: for each NeuronUltraServerWorkload (instanceType,\n"
    "topologySize 1|2|4 nodes, serverCount UltraServers, failureStrategy NoOp|RestartAll|\n"
    "MigrateAffected) it reserves whole UltraServers before any pod is scheduled, records them\n"
    "in the NeuronUltraServer objects (one per UltraServer, built from the node agents' labels),\n"
    "and writes the ResourceClaimTemplate the workload's pods name. The DRA driver tags the\n"
    "reserved nodes' devices with the workload (attribute workloadId) and refuses them at\n"
    "prepare to claims of anyone else. See docs/ultraserver.md.\n\n"
    "GET /healthz, /readyz (caches synced) on --health-probe-bind-address; GET /metrics on\n"
    "--metrics-bind-address. With --leader-elect (default) only the holder of the lease\n"
    "neuron-ultraserver-operator in --namespace acts.\n\n"
    "Examples:\n"
    "  neuron-ultraserver-operator --namespace=kube-system\n"
    "  neuron-ultraserver-operator --kubeconfig=$HOME/.kube/config --namespace=kube-system \\\n"
    "      --leader-elect=false --health-probe-bind-address=127.0.0.1:0";

}  // namespace

int main(int argc, char** argv) {
  torus::ShutdownSignal shutdown;  // before any thread exists, so only main receives the signal
  torus::ultraserver::OperatorConfig config;
  torus::config::SettingTable table("neuron-ultraserver-operator");
  torus::ultraserver::registerOperatorSettings(table, &config);
  const torus::config::CommandInfo info{"neuron-ultraserver-operator", kUsage, kDescription,
                                        "config"};
  if (auto exitCode = torus::config::parseCommandLine(table, info, argc, argv)) return *exitCode;
  if (config.printConfigReference) {
    std::fputs(table.markdownReference().c_str(), stdout);
    return 0;
  }

  torus::log::configure(config.log);
  TORUS_LOG(Info, UltraServer, "starting neuron-ultraserver-operator",
            {"version", torus::versionString()});
  torus::config::logEffectiveSettings(table);
  if (auto valid = torus::ultraserver::normalizeOperatorConfig(config); !valid) {
    TORUS_LOG(Error, UltraServer, "bad settings", {"error", valid.error().message});
    return 2;
  }
  auto controller = torus::ultraserver::UltraServerOperator::start(config);
  if (!controller) {
    TORUS_LOG(Error, UltraServer, "cannot start", {"error", controller.error().message});
    return controller.error().code == torus::ErrorCode::kInvalidArgument ? 2 : 1;
  }
  // Wake now and then to notice a lost lease: a replica that lost it must not act on.
  for (;;) {
    if (auto signal = shutdown.waitFor(std::chrono::milliseconds(500))) {
      TORUS_LOG(Info, UltraServer, "shutting down",
                {"signal", *signal == SIGTERM ? "SIGTERM" : "SIGINT"});
      break;
    }
    if ((*controller)->lostLease()) {
      TORUS_LOG(Error, UltraServer, "lost the lease; exiting so a fresh candidate starts");
      (*controller)->stop();
      return 1;
    }
  }
  (*controller)->stop();
  TORUS_LOG(Info, UltraServer, "stopped");
  return 0;
}
