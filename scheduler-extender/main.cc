// neuron-scheduler-extender: kube-scheduler's HTTP extender for Neuron resources. Parses its
// settings, starts the extender (app/scheduler_extender.h), and stops in order on SIGTERM/SIGINT.
#include <csignal>
#include <cstdio>

#include "common/base/log.h"
#include "common/base/shutdown_signal.h"
#include "common/base/version.h"
#include "common/config/command_line.h"
#include "scheduler-extender/app/extender_config.h"
#include "scheduler-extender/app/scheduler_extender.h"

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

}  // namespace

int main(int argc, char** argv) {
  torus::ShutdownSignal shutdown;  // before any thread exists, so only main receives the signal
  torus::extender::ExtenderConfig config;
  torus::config::SettingTable table("neuron-scheduler-extender");
  torus::extender::registerExtenderSettings(table, &config);
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
  torus::config::logEffectiveSettings(table);
  if (auto valid = torus::extender::normalizeExtenderConfig(config); !valid) {
    TORUS_LOG(Error, Extender, "bad settings", {"error", valid.error().message});
    return 2;
  }
  auto extender = torus::extender::SchedulerExtender::start(config);
  if (!extender) {
    TORUS_LOG(Error, Extender, "cannot start", {"error", extender.error().message});
    return extender.error().code == torus::ErrorCode::kInvalidArgument ? 2 : 1;
  }
  const int signal = shutdown.wait();
  TORUS_LOG(Info, Extender, "shutting down", {"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"});
  (*extender)->stop();
  TORUS_LOG(Info, Extender, "stopped");
  return 0;
}
