// DRA driver benchmark: NodePrepareResources + NodeUnprepareResources of 4-chip claims over the
// driver's real unix socket, as kubelet calls them, next to a plain gRPC unary call to a server
// of the same kind measured in the same run. The claim read is answered from memory, so the
// figure is the driver's own cost: resolving the allocation, the conflict check, writing the CDI
// spec and the (fsynced) checkpoint, and on unprepare removing the spec, recording the release
// and queueing the chips' reset, which runs in the background in the simulated driver tree (a
// chip still waiting for it when it is prepared again is reset inline, inside the figure).
//
//   build/tests/dra_prepare_bench [--calls=N]
//
// Target: prepare + unprepare p99 <= 2 ms beyond the claim read, reported
// with its ratio to the echo p99.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "common/base/file_io.h"
#include "common/base/log.h"
#include "common/base/temp_dir.h"
#include "dra-driver/claim_preparer.h"
#include "dra-driver/kubelet/kubelet_plugin.h"
#include "dra/v1/api.grpc.pb.h"
#include "node-runtime/agent/plugin_node_view.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/health/node_monitor.h"
#include "node-runtime/reset/core_reset.h"
#include "node-runtime/simulator/sim_tree.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "tests/bench/bench_stats.h"

namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using torus::bench::LatencySummary;
namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;

class EchoInfo final : public pluginregistration::Registration::Service {
  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo*) override {
    return grpc::Status::OK;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int calls = torus::bench::intFlag(argc, argv, "calls", 2000);
  torus::log::configure({torus::log::Level::kError, 0, torus::log::Format::kText});
  auto dir = torus::TempDir::create("dra-bench");
  if (!dir) return 1;

  torus::simulator::SimulationSpec spec;
  spec.instanceType = "trn2.48xlarge";
  auto tree = torus::simulator::writeSimulatedTree(spec, dir->path() / "node");
  if (!tree) return 1;
  auto found = torus::discovery::discoverNode(tree->roots(), {});
  if (!found) return 1;
  torus::health::NodeMonitor monitor(tree->roots(), {}, *found, 500ms);
  torus::agent::PluginNodeView view(monitor, {});

  // Four claims of one row each (4 chips): the benchmark cycles through them, as a node cycles
  // pods over its chips, so each row's reset runs in the background while the other three are
  // prepared and unprepared. A row still pending when it comes round again is reset inline by
  // prepare, and that time is counted.
  constexpr int kClaims = 4;
  std::map<std::string, json> claims;
  for (int row = 0; row < kClaims; ++row) {
    json results = json::array();
    for (int chip = row * 4; chip < row * 4 + 4; ++chip) {
      results.push_back({{"request", "r"},
                         {"driver", "neuron.aws.com"},
                         {"pool", "node-a"},
                         {"device", "neurondevice" + std::to_string(chip)}});
    }
    claims["row" + std::to_string(row)] = {
        {"metadata", {{"uid", "uid-row" + std::to_string(row)}}},
        {"status", {{"allocation", {{"devices", {{"results", results}}}}}}}};
  }
  torus::dra::PreparerOptions options;
  options.pool = "node-a";
  options.cdiRoot = dir->path() / "cdi";
  options.checkpointFile = dir->path() / "checkpoint.json";
  auto preparer = torus::dra::ClaimPreparer::create(options, view);
  if (!preparer) return 1;
  torus::dra::KubeletPluginOptions paths;
  paths.pluginsDir = dir->path() / "plugins";
  paths.registryDir = dir->path() / "registry";
  auto plugin = torus::dra::KubeletPlugin::start(
      paths, **preparer,
      [&](const std::string&, const std::string& name) -> torus::Result<json> {
        return claims.at(name);
      },
      view, "node-a");
  if (!plugin) {
    std::fprintf(stderr, "%s\n", plugin.error().message.c_str());
    return 1;
  }
  auto driver = drav1::DRAPlugin::NewStub(grpc::CreateChannel(
      "unix:" + (*plugin)->draSocket().string(), grpc::InsecureChannelCredentials()));

  EchoInfo echo;
  grpc::ServerBuilder builder;
  const std::string echoSocket = (dir->path() / "echo.sock").string();
  builder.AddListeningPort("unix:" + echoSocket, grpc::InsecureServerCredentials());
  builder.RegisterService(&echo);
  auto echoServer = builder.BuildAndStart();
  auto echoClient = pluginregistration::Registration::NewStub(
      grpc::CreateChannel("unix:" + echoSocket, grpc::InsecureChannelCredentials()));

  std::vector<drav1::NodePrepareResourcesRequest> prepare(kClaims);
  std::vector<drav1::NodeUnprepareResourcesRequest> unprepare(kClaims);
  for (int row = 0; row < kClaims; ++row) {
    auto* ref = prepare[static_cast<std::size_t>(row)].add_claims();
    ref->set_uid("uid-row" + std::to_string(row));
    ref->set_namespace_("ns");
    ref->set_name("row" + std::to_string(row));
    *unprepare[static_cast<std::size_t>(row)].add_claims() = *ref;
  }
  const auto callEcho = [&] {
    grpc::ClientContext context;
    pluginregistration::PluginInfo info;
    echoClient->GetInfo(&context, {}, &info);
  };
  const auto callPrepare = [&](int row) {
    grpc::ClientContext context;
    drav1::NodePrepareResourcesResponse response;
    const auto& request = prepare[static_cast<std::size_t>(row)];
    if (!driver->NodePrepareResources(&context, request, &response).ok() ||
        !response.claims().at(request.claims(0).uid()).error().empty()) {
      std::abort();
    }
  };
  const auto callUnprepare = [&](int row) {
    grpc::ClientContext context;
    drav1::NodeUnprepareResourcesResponse response;
    const auto& request = unprepare[static_cast<std::size_t>(row)];
    if (!driver->NodeUnprepareResources(&context, request, &response).ok() ||
        !response.claims().at(request.claims(0).uid()).error().empty()) {
      std::abort();
    }
  };
  for (int i = 0; i < 100; ++i) {  // warm up connections and caches
    callEcho();
    callPrepare(i % kClaims);
    callUnprepare(i % kClaims);
  }
  std::vector<double> prepareUs;
  std::vector<double> unprepareUs;
  std::vector<double> bothUs;
  for (int i = 0; i < calls; ++i) {
    const auto start = std::chrono::steady_clock::now();
    callPrepare(i % kClaims);
    const auto middle = std::chrono::steady_clock::now();
    callUnprepare(i % kClaims);
    const auto end = std::chrono::steady_clock::now();
    prepareUs.push_back(std::chrono::duration<double, std::micro>(middle - start).count());
    unprepareUs.push_back(std::chrono::duration<double, std::micro>(end - middle).count());
    bothUs.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  const LatencySummary echoStats =
      torus::bench::summarize(torus::bench::timeCalls(calls, callEcho));
  if (!(*preparer)->waitForResets(10s)) {
    std::fprintf(stderr, "background resets did not finish\n");
    return 1;
  }

  std::printf(
      "# DRA driver over a unix socket, trn2.48xlarge, 4-chip claims cycling over the 4 "
      "rows, %d calls each\n",
      calls);
  torus::bench::printHeader("echo_p99_us");
  torus::bench::printRow("echo (baseline)", echoStats, echoStats);
  torus::bench::printRow("NodePrepareResources", torus::bench::summarize(prepareUs), echoStats);
  torus::bench::printRow("NodeUnprepareResources", torus::bench::summarize(unprepareUs), echoStats);
  const LatencySummary both = torus::bench::summarize(bothUs);
  torus::bench::printRow("prepare + unprepare", both, echoStats);
  // Where unprepare's time goes: the look for holders in /proc before a reset, and the reset.
  std::vector<std::string> nodes;
  for (int device = 4; device < 8; ++device)
    nodes.push_back(tree->roots().deviceNode(device).string());
  torus::bench::printRow("  /proc holder scan",
                         torus::bench::summarize(torus::bench::timeCalls(
                             calls, [&] { (void)torus::reset::findHoldersOfAny("/proc", nodes); })),
                         echoStats);
  // The floor the checkpoint sets on this disk: one small file replaced with fsync, as prepare
  // and unprepare each do once.
  const std::filesystem::path probe = dir->path() / "fsync-probe.json";
  const std::string probeText(2048, 'x');
  torus::bench::printRow(
      "  synced 2 KiB file write",
      torus::bench::summarize(torus::bench::timeCalls(
          calls / 4, [&] { (void)torus::writeFileAtomically(probe, probeText); })),
      echoStats);
  std::printf("\nprepare + unprepare p99 %.2f ms (target <= 2 ms): %s\n", both.p99Us / 1000.0,
              both.p99Us <= 2000.0 ? "met" : "NOT met");
  return 0;
}
