// kubectl-neuron: a kubectl plugin (`kubectl neuron ...`) that shows Neuron capacity as the
// scheduler extender sees it — read from the Kubernetes API with the caller's kubeconfig — and,
// with `top`, what the node agents measure, read from their /metrics through the API server.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "common/base/file_io.h"
#include "common/base/log.h"
#include "common/base/text_table.h"
#include "common/config/command_line.h"
#include "common/config/log_settings.h"
#include "common/kube/kube_client.h"
#include "common/kube/kube_config.h"
#include "kubectl-neuron/agent_scrape.h"
#include "kubectl-neuron/debug_collect.h"
#include "kubectl-neuron/dra_claims.h"
#include "kubectl-neuron/kubectl_neuron_render.h"

namespace {

constexpr const char* kUsage =
    "kubectl neuron nodes|node NAME|pods|claims|top [NODE]|debug NODE [flags]";
constexpr const char* kDescription =
    "Neuron capacity and use on the cluster. nodes, node and pods show it as the Torus\n"
    "scheduler extender sees it: which cores and devices each pod holds (the pods'\n"
    "AWS_NEURON_IDS), what is free, and the largest shape a new pod could still get along\n"
    "NeuronLink. claims shows DRA's view; top shows what the node agents measure.\n\n"
    "  nodes        one line per Neuron node: cores used, devices free, largest free shape, "
    "health\n"
    "  node NAME    the node's NeuronLink ring or torus, each device marked with its pod\n"
    "  pods         pods that ask for Neuron resources: node, request, ids, cores\n"
    "  claims       ResourceClaims holding neuron.aws.com devices (DRA) and tainted devices\n"
    "  top [NODE]   live: each pod's cores, device memory, executions and errors, with device\n"
    "               health, ECC, deep checks and health conditions, from the node agents'\n"
    "               /metrics (refreshes every --interval; --once or --json print once)\n"
    "  debug NODE   one archive (tar) of the evidence for a failing node or --device: the\n"
    "               agent's view of each device's health, the driver's files, the kernel\n"
    "               log's hardware errors, the agent's log and metrics, the Node's conditions\n"
    "               and events, and the pods, claims and slices on it; with a manifest.\n"
    "               Needs pods/exec and pods/log on the agent's pods. No Secrets or tokens.\n"
    "               Exits 0 when every part was collected, 3 when the archive lacks some\n\n"
    "Reads the API as kubectl does: --kubeconfig, else the files of $KUBECONFIG merged, else\n"
    "~/.kube/config; --context, else the current-context. Users with a token, a client\n"
    "certificate or an exec credential plugin (aws eks get-token, gke-gcloud-auth-plugin,\n"
    "kubelogin) work; auth-provider, which kubectl dropped, does not. pods and claims show\n"
    "--namespace, else the context's namespace, else (or with --all-namespaces) all.\n\n"
    "Examples:\n"
    "  kubectl neuron nodes\n"
    "  kubectl neuron node ip-10-0-1-23.ec2.internal\n"
    "  kubectl neuron pods --namespace=ml --json\n"
    "  kubectl neuron claims\n"
    "  kubectl neuron top\n"
    "  kubectl neuron top ip-10-0-1-23.ec2.internal --once\n"
    "  kubectl neuron debug ip-10-0-1-23.ec2.internal --device=5";

struct Options {
  std::string kubeconfig;
  std::string context;
  std::string namespace_;
  bool allNamespaces = false;
  bool json = false;
  bool once = false;
  std::int64_t intervalMs = 2000;
  std::string via = "auto";
  std::string agentSelector = torus::kubectl_neuron::ScrapeOptions().selector;
  std::string agentNamespace = torus::kubectl_neuron::kDefaultAgentNamespace;
  std::string agentHost;
  int device = -1;
  std::string output;
  torus::log::Settings log;
};

int fail(const std::string& message) {
  std::fprintf(stderr, "kubectl-neuron: %s\n", message.c_str());
  return 1;
}

std::atomic<bool> stopRequested{false};

void requestStop(int) {
  stopRequested = true;
}

// `kubectl neuron top`: once, or refreshed in place until Ctrl-C.
int runTop(const torus::kube::KubeConfig& config, const Options& options, const std::string& node) {
  auto via = torus::kubectl_neuron::parseScrapeVia(options.via);
  if (!via) return fail(via.error().message);
  if (options.intervalMs < 500) return fail("--interval must be at least 500ms");
  torus::kubectl_neuron::ScrapeOptions scrapeOptions;
  scrapeOptions.selector = options.agentSelector;
  scrapeOptions.agentNamespace = options.agentNamespace;
  scrapeOptions.via = *via;
  scrapeOptions.node = node;
  scrapeOptions.agentHost = options.agentHost;
  const bool live = !options.once && !options.json;
  torus::kube::KubeClientPool api = torus::kubectl_neuron::scrapePool(config, scrapeOptions);
  std::signal(SIGINT, requestStop);
  std::signal(SIGTERM, requestStop);
  while (true) {
    auto scrapes = torus::kubectl_neuron::scrapeAgents(api, scrapeOptions);
    if (!scrapes) return fail(scrapes.error().message);
    auto nodes = api.acquire()->get("/api/v1/nodes");
    if (!nodes) return fail("listing Nodes: " + nodes.error().message);
    torus::kubectl_neuron::TopOptions topOptions;
    topOptions.node = node;
    topOptions.json = options.json;
    const std::string view = torus::kubectl_neuron::renderTop(*scrapes, *nodes, topOptions);
    if (!live) {
      std::fputs(view.c_str(), stdout);
      return 0;
    }
    const std::time_t now = std::time(nullptr);
    char clock[16];
    std::strftime(clock, sizeof clock, "%H:%M:%S", std::localtime(&now));
    // Home and clear, then the frame: the terminal shows one view, refreshed in place.
    std::printf("\x1b[H\x1b[2J%s — every %.1fs (Ctrl-C to quit)\n\n%s", clock,
                static_cast<double>(options.intervalMs) / 1000, view.c_str());
    std::fflush(stdout);
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(options.intervalMs);
    while (std::chrono::steady_clock::now() < until) {
      if (stopRequested) {
        std::printf("\n");
        return 0;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

// `kubectl neuron debug NODE`: collects, archives, and lists what the archive holds.
int runDebug(const torus::kube::KubeConfig& config, const Options& options,
             const std::string& node) {
  torus::kubectl_neuron::DebugOptions debugOptions;
  debugOptions.node = node;
  if (options.device >= 0) debugOptions.device = options.device;
  debugOptions.agentSelector = options.agentSelector;
  debugOptions.agentNamespace = options.agentNamespace;
  std::fprintf(
      stderr, "collecting from %s%s...\n", node.c_str(),
      options.device >= 0 ? (" (neuron" + std::to_string(options.device) + ")").c_str() : "");
  auto inputs = torus::kubectl_neuron::collectDebugInputs(config, debugOptions);
  if (!inputs) return fail(inputs.error().message);
  const torus::kubectl_neuron::DebugBundle bundle =
      torus::kubectl_neuron::buildDebugBundle(*inputs);
  const bool toStdout = options.output == "-";
  const std::string file = options.output.empty() ? bundle.directory + ".tar" : options.output;
  if (toStdout) {
    if (!torus::writeFully(STDOUT_FILENO, bundle.tar)) return fail("writing the archive to stdout");
  } else if (auto written = torus::writeFile(file, bundle.tar); !written) {
    return fail("writing " + file + ": " + written.error().message);
  }
  // The list goes where the archive does not.
  std::FILE* report = toStdout ? stderr : stdout;
  if (options.json) {
    std::fputs((bundle.manifest.dump(2) + "\n").c_str(), report);
  } else {
    torus::TextTable table({"PART", "FILE", "BYTES"});
    for (const torus::kubectl_neuron::DebugPart& part : bundle.parts) {
      table.addRow({part.what, part.error.empty() ? part.file : "missing: " + part.error,
                    part.error.empty() ? std::to_string(part.bytes) : "-"});
    }
    std::fputs(table.render().c_str(), report);
    std::fprintf(report, "wrote %s (%zu KiB)%s\n",
                 toStdout ? "the archive to stdout" : file.c_str(), bundle.tar.size() / 1024,
                 bundle.complete() ? "" : "; some parts are missing (see above)");
  }
  return bundle.complete() ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  options.log.level = torus::log::Level::kWarn;  // a CLI prints results, not progress
  torus::config::SettingTable table("kubectl-neuron");
  table.addString(
      "kubeconfig", "", "", "FILE",
      "kubeconfig to use (default: the files of $KUBECONFIG merged, else ~/.kube/config)",
      &options.kubeconfig);
  table.addString("context", "", "", "NAME", "kubeconfig context (default: its current-context)",
                  &options.context);
  table.addString("namespace", "", "", "NAME",
                  "pods, claims: only this namespace (default: the context's, else all)",
                  &options.namespace_);
  table.addSwitch("all-namespaces", "", "",
                  "pods, claims: every namespace, whatever the context says",
                  &options.allNamespaces);
  table.addSwitch("json", "", "", "print JSON instead of tables (top: once)", &options.json);
  table.addSwitch("once", "", "", "top: print one view and exit", &options.once);
  table.addDurationMillis("interval", "", "", "top: how often the view refreshes",
                          &options.intervalMs);
  table.addString("via", "", "", "auto|proxy|direct",
                  "top: read the agents' /metrics through the API server's pod proxy, straight "
                  "from the pods' IPs, or the proxy then the IP (auto)",
                  &options.via);
  table.addString("agent-selector", "", "", "SELECTOR",
                  "top, debug: the label selector of the node agent pods", &options.agentSelector);
  table.addString("agent-namespace", "", "", "NAME",
                  "top, debug: the namespace Torus is installed in; only pods a DaemonSet of it "
                  "runs are taken as agents",
                  &options.agentNamespace);
  table.addString("agent-host", "", "", "HOST",
                  "top: read the agents at HOST:<metrics port> instead of their pods' addresses "
                  "(a port-forward to one agent; a one-node cluster on loopback)",
                  &options.agentHost);
  table.addInt("device", "", "", "N", "debug: only this device (default: every device of the node)",
               -1, 1 << 16, &options.device);
  table.addString("output", "", "", "FILE",
                  "debug: the archive to write (default: ./neuron-debug-NODE-TIME.tar; - for "
                  "stdout)",
                  &options.output);
  torus::config::addLogSettings(table, &options.log);
  const torus::config::CommandInfo info{"kubectl-neuron", kUsage, kDescription, ""};
  std::vector<std::string> args;
  if (auto exitCode = torus::config::parseCommandLine(table, info, argc, argv, &args)) {
    return *exitCode;
  }
  torus::log::configure(options.log);
  const std::string command = args.empty() ? "" : args.front();
  const bool known =
      ((command == "nodes" || command == "pods" || command == "claims") && args.size() == 1) ||
      (command == "node" && args.size() == 2) || (command == "top" && args.size() <= 2) ||
      (command == "debug" && args.size() == 2);
  if (!known) {
    std::fprintf(
        stderr,
        "kubectl-neuron: expected one of: nodes, node NAME, pods, claims, top [NODE], debug "
        "NODE (see --help)\n");
    return 2;
  }
  auto config = torus::kube::loadKubeconfigAsKubectl(options.kubeconfig, options.context);
  if (!config) return fail(config.error().message);
  // kubectl's order: the flag, then the context's namespace. Neuron capacity is cluster-wide, so
  // where neither names one the view is every namespace rather than "default".
  if (options.allNamespaces) {
    options.namespace_.clear();
  } else if (options.namespace_.empty()) {
    options.namespace_ = config->nameSpace;
  }
  if (command == "top") return runTop(*config, options, args.size() == 2 ? args[1] : "");
  if (command == "debug") return runDebug(*config, options, args[1]);
  torus::kube::KubeClient client(*config);
  if (command == "claims") {
    auto claims = client.get("/apis/resource.k8s.io/v1/resourceclaims");
    if (!claims) return fail("listing ResourceClaims: " + claims.error().message);
    auto slices = client.get("/apis/resource.k8s.io/v1/resourceslices");
    if (!slices) return fail("listing ResourceSlices: " + slices.error().message);
    std::fputs(
        torus::kubectl_neuron::renderClaims(*claims, *slices, options.namespace_, options.json)
            .c_str(),
        stdout);
    return 0;
  }
  auto snapshot = torus::kubectl_neuron::loadClusterSnapshot(client);
  if (!snapshot) return fail(snapshot.error().message);
  std::string out;
  if (command == "nodes") {
    out = torus::kubectl_neuron::renderNodes(**snapshot, options.json);
  } else if (command == "pods") {
    out = torus::kubectl_neuron::renderPods(**snapshot, options.namespace_, options.json);
  } else {
    auto drawn = torus::kubectl_neuron::renderNode(**snapshot, args[1], options.json);
    if (!drawn) return fail(drawn.error().message);
    out = std::move(*drawn);
  }
  std::fputs(out.c_str(), stdout);
  return 0;
}
