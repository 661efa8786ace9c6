// The agent on an instance type its catalog does not know (a new size or generation the chart
// placed by a node label): it starts, tells kubelet the devices and cores the driver reports,
// serves an allocation, and says the type is unknown.
#include <filesystem>

#include <gtest/gtest.h>

#include "common/base/temp_dir.h"
#include "tests/integration/device_plugin/agent_binary_ready.h"
#include "tests/integration/device_plugin/device_plugin_fixture.h"
#include "tests/integration/device_plugin/fake_kubelet.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// The simulator writes a trn2.48xlarge's driver tree; the node calls itself trn3.48xlarge.
TEST(NodeAgentBinary, AdvertisesWhatTheDriverReportsOnATypeTheCatalogDoesNotKnow) {
  auto dir = TempDir::create("agent-unknown-type");
  ASSERT_TRUE(dir.ok());
  const std::string plugins = (dir->path() / "plugins").string();
  fs::create_directories(plugins);
  const std::string podResources = (dir->path() / "pod-resources.sock").string();
  FakeKubelet kubelet(plugins, podResources);
  kubelet.start();
  BackgroundProcess agent({binaryPath("neuron-node-agent"), "--simulate=trn2.48xlarge",
                           "--instance-type=trn3.48xlarge", "--device-plugin-dir=" + plugins,
                           "--metrics-addr=127.0.0.1:0", "--admin-addr=127.0.0.1:0",
                           "--pod-resources-socket=" + podResources});
  ASSERT_NO_FATAL_FAILURE(waitForTrn2AgentResources(kubelet, agent));
  EXPECT_EQ(kubelet.healthyCount(kDevices), 16);

  v1beta1::AllocateRequest request;
  for (const char* id : {"4", "5"})
    request.add_container_requests()->add_devices_ids(id);
  v1beta1::AllocateResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 5s);
  const grpc::Status status = kubelet.pluginClient(kCores)->Allocate(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message() << "\n" << agent.stderrText();
  ASSERT_EQ(response.container_responses_size(), 2);
  EXPECT_EQ(response.container_responses(0).envs().at("NEURON_RT_VISIBLE_CORES"), "4");

  const auto log = agent.waitForStderr("\"serving HTTP\"", 10s);
  ASSERT_TRUE(log.has_value()) << agent.stderrText();
  EXPECT_NE(log->find("\"discovered node\" instance_type=trn3.48xlarge devices=16 "
                      "healthy_devices=16 cores=64 lnc=2"),
            std::string::npos)
      << *log;
  EXPECT_NE(log->find("WARN discovery \"node report differs from what was expected\" "
                      "finding=\"instance type \\\"trn3.48xlarge\\\" is not in the catalog; "
                      "using what the driver reports\""),
            std::string::npos)
      << *log;
  agent.signal(SIGTERM);
  EXPECT_EQ(agent.waitExit(10s), std::optional<int>(0)) << agent.stderrText();
}

}  // namespace
}  // namespace torus::testing
