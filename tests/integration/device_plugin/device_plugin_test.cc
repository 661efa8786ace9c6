// The device plugin end to end over real unix sockets: the agent's pieces (NodeMonitor over a
// simulated tree, the plugin manager) against a kubelet stand-in speaking v1beta1. Over 400
// lines on purpose: the cases are the plugin's contract with kubelet, read together (the fixture
// is device_plugin_fixture.h; one tenant per core is one_tenant_test.cc).
#include <filesystem>
#include <set>
#include <thread>

#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <unistd.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "common/base/unique_fd.h"
#include "common/metrics/event_counters.h"
#include "device-plugin/plugin_manager.h"
#include "node-runtime/agent/kube/pod_handoff.h"
#include "node-runtime/agent/plugin_node_view.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/health/node_monitor.h"
#include "node-runtime/simulator/sim_tree.h"
#include "tests/integration/device_plugin/agent_binary_ready.h"
#include "tests/integration/device_plugin/device_plugin_fixture.h"
#include "tests/integration/device_plugin/fake_kubelet.h"
#include "tests/integration/device_plugin/followed_handoff.h"
#include "tests/integration/device_plugin/kubelet_bed.h"
#include "tests/integration/kube/fake_api_server.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

struct CountCase {
  std::string type;
  std::optional<int> lnc;
  int cores;
  int devices;
};

TEST_F(DevicePluginTest, RegistersBothResourcesWithTheCatalogCounts) {
  const std::vector<CountCase> cases = {{"trn2.48xlarge", 2, 64, 16},
                                        {"trn2.48xlarge", 1, 128, 16},
                                        {"trn1.32xlarge", std::nullopt, 32, 16},
                                        {"inf2.48xlarge", std::nullopt, 24, 12}};
  for (const CountCase& c : cases) {
    SCOPED_TRACE(c.type + " lnc=" + std::to_string(c.lnc.value_or(0)));
    start(c.type, c.lnc);
    ASSERT_TRUE(kubelet_->waitForRegistration(kCores, 1, 5s));
    ASSERT_TRUE(kubelet_->waitForRegistration(kDevices, 1, 5s));
    const auto request = kubelet_->lastRegistration(kCores);
    EXPECT_EQ(request.version(), "v1beta1");
    EXPECT_EQ(request.endpoint(), "torus-neuroncore.sock");
    EXPECT_TRUE(request.options().pre_start_required());
    EXPECT_TRUE(request.options().get_preferred_allocation_available());
    ASSERT_TRUE(kubelet_->waitForDevices(
        kCores, [&](const auto& d) { return static_cast<int>(d.size()) == c.cores; }, 5s));
    ASSERT_TRUE(kubelet_->waitForDevices(
        kDevices, [&](const auto& d) { return static_cast<int>(d.size()) == c.devices; }, 5s));
    EXPECT_EQ(kubelet_->healthyCount(kCores), c.cores);
    TearDown();
  }
}

TEST_F(DevicePluginTest, OnlyOurSocketsAreWrittenIntoThePluginDirectory) {
  start("inf2.xlarge");
  ASSERT_TRUE(kubelet_->waitForRegistration(kDevices, 1, 5s));
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(pluginDir_)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"kubelet.sock", "torus-neuron.sock",
                                             "torus-neuroncore.sock"}));
}

TEST_F(DevicePluginTest, PreferredAllocationFollowsTheTopology) {
  start("trn2.48xlarge");
  ASSERT_TRUE(kubelet_->waitForRegistration(kDevices, 1, 5s));
  EXPECT_EQ(preferred(kCores, 4, range(0, 64)), "0,1,2,3");
  EXPECT_EQ(preferred(kCores, 16, range(0, 64)), "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15");
  EXPECT_EQ(preferred(kDevices, 8, range(0, 16)), "0,1,2,3,4,5,6,7");
  EXPECT_EQ(preferred(kCores, 4, range(0, 64), {"9"}), "8,9,10,11");
  // kubelet lists the free ids in any order.
  EXPECT_EQ(preferred(kDevices, 4, {"15", "3", "14", "12", "2", "13"}), "12,13,14,15");
  EXPECT_EQ(preferred(kDevices, 7, range(0, 16)),
            "error: placement: instance type trn2.48xlarge does not support requests for 7 "
            "devices (allowed: 1, 4, 8, 16)");
  EXPECT_NE(preferred(kCores, 2, {"0", "banana"}).find("unknown ids \"banana\""),
            std::string::npos);
}

TEST_F(DevicePluginTest, PreferredAllocationOnAnInf2RingIsAContiguousRun) {
  start("inf2.48xlarge");
  ASSERT_TRUE(kubelet_->waitForRegistration(kDevices, 1, 5s));
  EXPECT_EQ(preferred(kDevices, 3, {"11", "0", "1", "5", "6", "7", "9"}), "5,6,7");
}

TEST_F(DevicePluginTest, AllocateGivesDeviceNodesAndEnvAndRejectsBadIds) {
  start("trn2.48xlarge");
  ASSERT_TRUE(kubelet_->waitForRegistration(kCores, 1, 5s));
  v1beta1::AllocateResponse response;
  ASSERT_TRUE(allocate(kCores, {{"4", "5", "6", "7"}, {"8", "9"}}, &response).ok());
  ASSERT_EQ(response.container_responses_size(), 2);
  const auto& first = response.container_responses(0);
  ASSERT_EQ(first.devices_size(), 1);
  EXPECT_EQ(first.devices(0).container_path(), "/dev/neuron1");
  EXPECT_EQ(first.devices(0).host_path(), (roots_.dev / "neuron1").string());
  EXPECT_EQ(first.devices(0).permissions(), "rw");
  EXPECT_EQ(first.envs().at("NEURON_RT_VISIBLE_CORES"), "4-7");
  EXPECT_EQ(first.envs().at("NEURON_LOGICAL_NC_CONFIG"), "2");
  EXPECT_EQ(response.container_responses(1).envs().at("NEURON_RT_VISIBLE_CORES"), "8-9");

  v1beta1::AllocateResponse devices;
  ASSERT_TRUE(allocate(kDevices, {{"12", "13"}}, &devices).ok());
  EXPECT_EQ(devices.container_responses(0).devices_size(), 2);
  EXPECT_EQ(devices.container_responses(0).envs().at("NEURON_RT_VISIBLE_CORES"), "48-55");

  v1beta1::AllocateResponse bad;
  grpc::Status status = allocate(kCores, {{"3", "3", "999", "x"}}, &bad);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "aws.amazon.com/neuroncore: unknown ids \"999\", \"x\" (this node has 0-63); "
            "duplicate ids 3");
  // Regression: 10,000 bad ids made a 98 KB status, more than a C-core client takes.
  std::vector<std::string> many;
  for (int i = 0; i < 10000; ++i)
    many.push_back("bad-" + std::to_string(i));
  status = allocate(kCores, {many}, &bad);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_LT(status.error_message().size(), 512U) << status.error_message();
  EXPECT_NE(status.error_message().find("and 9992 more"), std::string::npos);
  // ...and two containers of one request could be given the same core.
  status = allocate(kCores, {{"20", "21"}, {"21", "22"}}, &bad);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "aws.amazon.com/neuroncore: ids 21 asked for by two containers of one request");
  v1beta1::AllocateResponse good;
  EXPECT_TRUE(allocate(kCores, {{"60"}}, &good).ok()) << "the server keeps serving";
  v1beta1::AllocateResponse again;
  EXPECT_TRUE(allocate(kCores, {{"20", "21"}}, &again).ok())
      << "a refused request holds nothing: " << again.DebugString();
}

// kubelet's requests exactly as captured (tests/fixtures/captures): they parse as our protobuf
// messages field for field, and their ids — another plugin's "neuroncore-16" style — are refused
// by name, not misread as cores.
TEST_F(DevicePluginTest, KubeletsCapturedRequestsWithForeignIdsAreRefusedByName) {
  start("trn2.48xlarge");
  ASSERT_TRUE(kubelet_->waitForRegistration(kCores, 1, 5s));
  const auto captured = [](const std::string& name, google::protobuf::Message* message) {
    auto text = readSmallFile(
        std::string(TORUS_SOURCE_DIR) + "/tests/fixtures/captures/deviceplugin-" + name, 1 << 20);
    ASSERT_TRUE(text.ok()) << text.error().message;
    const auto parsed = google::protobuf::util::JsonStringToMessage(*text, message);
    ASSERT_TRUE(parsed.ok()) << parsed.ToString();
  };
  v1beta1::PreferredAllocationRequest preferredRequest;
  captured("GetPreferredAllocation-request.json", &preferredRequest);
  ASSERT_EQ(preferredRequest.container_requests_size(), 1);
  EXPECT_GT(preferredRequest.container_requests(0).available_deviceids_size(), 4);
  EXPECT_GT(preferredRequest.container_requests(0).allocation_size(), 0);
  v1beta1::PreferredAllocationResponse preferredResponse;
  const grpc::Status preferredStatus = send(kCores, preferredRequest, &preferredResponse);
  EXPECT_EQ(preferredStatus.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(preferredStatus.error_message().find("\"neuroncore-"), std::string::npos)
      << preferredStatus.error_message();

  v1beta1::AllocateRequest allocateRequest;
  captured("Allocate-request.json", &allocateRequest);
  ASSERT_EQ(allocateRequest.container_requests_size(), 1);
  ASSERT_EQ(allocateRequest.container_requests(0).devices_ids_size(), 2);
  v1beta1::AllocateResponse allocateResponse;
  const grpc::Status allocateStatus = send(kCores, allocateRequest, &allocateResponse);
  EXPECT_EQ(allocateStatus.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(allocateStatus.error_message().find("\"neuroncore-16\", \"neuroncore-24\""),
            std::string::npos)
      << allocateStatus.error_message();
  v1beta1::AllocateResponse good;
  EXPECT_TRUE(allocate(kCores, {{"16", "24"}}, &good).ok()) << "the server keeps serving";
}

// Regression: logical_nc_config changed from LNC 2 to 1 while a container held cores 0-3 (all
// of /dev/neuron0) silently renumbered the node, and Allocate(4-7) handed out /dev/neuron0 again.
TEST_F(DevicePluginTest, AnLncChangeWaitsUntilNoCoreIsHeld) {
  start("trn2.48xlarge");
  // The agent's wiring (node_agent.cc): the change waits while the plugin sees any holder.
  const auto anyHeld = [this] {
    for (const auto& [kind, ids] : manager_->assignments().held) {
      if (!ids.empty()) return true;
    }
    return false;
  };
  monitor_->setLncChangeGuard(anyHeld);
  kubelet_->setAssignments({{kCores, {"0", "1", "2", "3"}}});
  v1beta1::AllocateResponse held;
  ASSERT_TRUE(allocate(kCores, {{"0", "1", "2", "3"}}, &held).ok());
  ASSERT_EQ(held.container_responses(0).devices(0).container_path(), "/dev/neuron0");

  ASSERT_TRUE(writeFile(roots_.lncConfigFile(), "NEURON_LOGICAL_NC_CONFIG=1\n").ok());
  monitor_->refresh();
  EXPECT_EQ(monitor_->node().lnc, 2) << "the ids a running pod holds must keep their meaning";
  EXPECT_EQ(monitor_->pendingLnc(), std::optional<int>(1));
  EXPECT_TRUE(kubelet_->waitForDevices(
      kCores, [](const auto& devices) { return devices.size() == 64; }, 5s));
  v1beta1::AllocateResponse next;
  ASSERT_TRUE(allocate(kCores, {{"4", "5", "6", "7"}}, &next).ok());
  EXPECT_EQ(next.container_responses(0).devices(0).container_path(), "/dev/neuron1");
  EXPECT_EQ(next.container_responses(0).envs().at("NEURON_LOGICAL_NC_CONFIG"), "2");

  // The node drains (kubelet lists nothing, our own grants age out): the change applies.
  kubelet_->setAssignments({});
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (anyHeld() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(50ms);
  ASSERT_FALSE(anyHeld());
  monitor_->refresh();
  EXPECT_EQ(monitor_->node().lnc, 1);
  EXPECT_EQ(monitor_->pendingLnc(), std::nullopt);
  EXPECT_TRUE(kubelet_->waitForDevices(
      kCores, [](const auto& devices) { return devices.size() == 128; }, 5s));
  v1beta1::AllocateResponse after;
  ASSERT_TRUE(allocate(kCores, {{"4", "5", "6", "7"}}, &after).ok());
  EXPECT_EQ(after.container_responses(0).devices(0).container_path(), "/dev/neuron0");
  EXPECT_EQ(after.container_responses(0).envs().at("NEURON_LOGICAL_NC_CONFIG"), "1");
}

TEST_F(DevicePluginTest, InfTypesGetNoLncVariable) {
  start("inf2.48xlarge");
  ASSERT_TRUE(kubelet_->waitForRegistration(kDevices, 1, 5s));
  v1beta1::AllocateResponse response;
  ASSERT_TRUE(allocate(kDevices, {{"2", "3"}}, &response).ok());
  EXPECT_EQ(response.container_responses(0).envs().count("NEURON_LOGICAL_NC_CONFIG"), 0U);
  EXPECT_EQ(response.container_responses(0).envs().at("NEURON_RT_VISIBLE_CORES"), "4-7");
}

TEST_F(DevicePluginTest, AWholeDeviceBlocksItsCoresUntilThePodIsGone) {
  start("trn2.48xlarge");
  ASSERT_TRUE(kubelet_->waitForRegistration(kDevices, 1, 5s));
  // kubelet records the assignment as it admits the pod, so pod-resources lists it from then on.
  kubelet_->setAssignments({{kDevices, {"0"}}});
  v1beta1::AllocateResponse response;
  ASSERT_TRUE(allocate(kDevices, {{"0"}}, &response).ok());
  const auto coresZeroToThreeUnhealthy = [](const std::map<std::string, SeenDevice>& d) {
    return d.size() == 64 && d.at("0").health == "Unhealthy" && d.at("3").health == "Unhealthy" &&
           d.at("4").health == "Healthy";
  };
  ASSERT_TRUE(kubelet_->waitForDevices(kCores, coresZeroToThreeUnhealthy, 2s));
  EXPECT_NE(preferred(kCores, 4, range(0, 64)), "0,1,2,3");
  v1beta1::AllocateResponse refused;
  EXPECT_EQ(allocate(kCores, {{"1"}}, &refused).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  kubelet_->setAssignments({});  // the pod is gone
  ASSERT_TRUE(kubelet_->waitForDevices(
      kCores, [](const auto& d) { return d.size() == 64 && d.at("0").health == "Healthy"; }, 2s));
}

TEST_F(DevicePluginTest, DevicesAreResetWhenTheirLastCoresAreReleased) {
  start("trn2.48xlarge");
  if (!driverServesResets()) GTEST_SKIP() << "no simulated driver to take the resets";
  ASSERT_TRUE(kubelet_->waitForRegistration(kCores, 1, 5s));
  // Two pods share device 1 (cores 4-7); a third holds device 2 (cores 8-11) alone.
  kubelet_->setAssignments({{kCores, {"4", "5", "8", "9", "10", "11"}}});
  std::this_thread::sleep_for(300ms);  // a List or two: the agent now knows what is held
  const std::uint64_t before1 = resetsOf(1);
  const std::uint64_t before2 = resetsOf(2);
  kubelet_->setAssignments({{kCores, {"4", "5"}}});  // the device-2 pod ended
  EXPECT_TRUE(eventually([&] { return resetsOf(2) > before2; }, 3s)) << "released device reset";
  EXPECT_EQ(resetsOf(1), before1) << "device 1 still has cores 4-5 in use";
  kubelet_->setAssignments({});
  EXPECT_TRUE(eventually([&] { return resetsOf(1) > before1; }, 3s));
}

TEST_F(DevicePluginTest, AnAgentRestartRecoversOwnershipAndResetsNothingInUse) {
  start("trn2.48xlarge");
  ASSERT_TRUE(kubelet_->waitForRegistration(kDevices, 1, 5s));
  kubelet_->setAssignments({{kDevices, {"3"}}, {kCores, {"0", "1"}}});
  ASSERT_TRUE(kubelet_->waitForDevices(
      kCores, [](const auto& d) { return d.size() == 64 && d.at("12").health == "Unhealthy"; },
      2s));
  const std::uint64_t before3 = resetsOf(3);
  const std::uint64_t before0 = resetsOf(0);
  // The agent goes away and comes back (kubelet and its pods stay): its first view of who holds
  // what comes from pod-resources, and nothing held is reset.
  ASSERT_NO_FATAL_FAILURE(restartAgent());
  ASSERT_TRUE(kubelet_->waitForRegistration(kCores, 2, 5s));
  ASSERT_TRUE(kubelet_->waitForDevices(
      kCores,
      [](const auto& d) {
        return d.size() == 64 && d.at("12").health == "Unhealthy" &&
               d.at("15").health == "Unhealthy" && d.at("4").health == "Healthy";
      },
      2s));
  ASSERT_TRUE(kubelet_->waitForDevices(
      kDevices, [](const auto& d) { return d.at("0").health == "Unhealthy"; }, 2s))
      << "device 0 has cores 0-1 in use";
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(resetsOf(3), before3);
  EXPECT_EQ(resetsOf(0), before0);
}

// A restarted agent must not tell kubelet anything before it knows who holds what: kubelet
// would give out a device whose cores a pod holds, and the Node's report would leave out ids
// kubelet still counts (the extender would offer them, kubelet refuse the pod for good).
TEST_F(DevicePluginTest, AfterARestartKubeletsFirstListsAlreadyCountWhatPodsHold) {
  start("trn2.48xlarge");
  kubelet_->setAssignments({{kDevices, {"3"}}, {kCores, {"0", "1"}}});
  ASSERT_TRUE(kubelet_->waitForDevices(
      kCores, [](const auto& d) { return d.size() == 64 && d.at("12").health == "Unhealthy"; },
      2s));
  manager_.reset();
  kubelet_->setListDelay(500ms);  // kubelet is busy: its first answer comes late
  ASSERT_NO_FATAL_FAILURE(restartAgent());
  const auto cores = kubelet_->firstListOfStream(kCores, 2, 5s);
  ASSERT_TRUE(cores.has_value());
  ASSERT_EQ(cores->size(), 64U);
  EXPECT_EQ(cores->at("12").health, "Unhealthy") << "device 3 is held whole";
  EXPECT_EQ(cores->at("15").health, "Unhealthy");
  EXPECT_EQ(cores->at("4").health, "Healthy");
  const auto devices = kubelet_->firstListOfStream(kDevices, 2, 5s);
  ASSERT_TRUE(devices.has_value());
  EXPECT_EQ(devices->at("0").health, "Unhealthy") << "cores 0-1 of device 0 are held";
  EXPECT_EQ(devices->at("1").health, "Healthy");
  // The report follows each list once its write returned, a moment after kubelet has it.
  ASSERT_TRUE(eventually([&] { return manager_->kubeletUnavailable().has_value(); }, 2s));
  const auto told = manager_->kubeletUnavailable();
  EXPECT_EQ(told->at(kDevices).toRangeString(), "0,3") << "device 0 blocked, device 3 held";
}

TEST_F(DevicePluginTest, AnyCoreInUseBlocksItsDevice) {
  start("trn1.32xlarge");
  ASSERT_TRUE(kubelet_->waitForRegistration(kDevices, 1, 5s));
  kubelet_->setAssignments({{kCores, {"5"}}});
  ASSERT_TRUE(kubelet_->waitForDevices(
      kDevices, [](const auto& d) { return d.size() == 16 && d.at("2").health == "Unhealthy"; },
      2s));
  EXPECT_EQ(kubelet_->healthyCount(kDevices), 15);
  EXPECT_EQ(preferred(kDevices, 4, range(0, 16)), "4,5,6,7");
  kubelet_->setAssignments({});
  // pod-resources is read again once the preferred allocation, which no Allocate followed, is
  // given up for (1 s; common/kubelet/allocation_window.h).
  ASSERT_TRUE(kubelet_->waitForDevices(
      kDevices, [](const auto& d) { return d.size() == 16 && d.at("2").health == "Healthy"; }, 4s));
}

TEST_F(DevicePluginTest, ReRegistersWithinTwoSecondsAfterKubeletRestarts) {
  start("inf2.24xlarge");
  ASSERT_TRUE(kubelet_->waitForRegistration(kCores, 1, 5s));
  ASSERT_TRUE(kubelet_->waitForRegistration(kDevices, 1, 5s));
  kubelet_->stopAndWipe();  // deletes our sockets too, as kubelet's CleanupPluginDirectory does
  const auto restarted = std::chrono::steady_clock::now();
  kubelet_->start();
  ASSERT_TRUE(kubelet_->waitForRegistration(kCores, 2, 2s));
  ASSERT_TRUE(kubelet_->waitForRegistration(kDevices, 2, 2s));
  EXPECT_LT(std::chrono::steady_clock::now() - restarted, 2s);
  ASSERT_TRUE(kubelet_->waitForDevices(
      kCores, [](const auto& d) { return d.size() == 12; }, 2s));
}

TEST_F(DevicePluginTest, ReRegistersWhenTheWholeDirectoryIsRecreated) {
  start("inf2.xlarge");
  kubelet_->stopAndWipe();
  // The agent puts back a socket it sees removed, so it may create one in the directory while
  // remove_all empties it ("Directory not empty"): removing a directory someone writes into takes
  // as many tries as that race does. Once the directory itself is gone, the agent can write none.
  std::error_code removing;
  fs::remove_all(pluginDir_, removing);
  for (int tries = 1; removing && tries < 50; ++tries) {
    std::this_thread::sleep_for(10ms);
    fs::remove_all(pluginDir_, removing);
  }
  ASSERT_FALSE(fs::exists(pluginDir_)) << removing.message();
  std::this_thread::sleep_for(200ms);  // the agent notices the directory is gone
  fs::create_directories(pluginDir_);
  kubelet_->start();
  ASSERT_TRUE(kubelet_->waitForRegistration(kCores, 2, 5s));
  ASSERT_TRUE(kubelet_->waitForRegistration(kDevices, 2, 5s));
  EXPECT_TRUE(fs::exists(pluginDir_ + "/torus-neuroncore.sock"));
}

// A kubelet restart between the agent serving and its watch existing deletes our sockets where no
// watch sees it; moving a socket away is the same unseen removal (the watch follows deletions and
// kubelet.sock's creation, not moves away). The agent serves again and kubelet hears of it.
TEST_F(DevicePluginTest, ASocketRemovedWhereTheWatchCannotSeeItIsServedAgain) {
  start("inf2.xlarge");
  const std::string socket = pluginDir_ + "/torus-neuroncore.sock";
  fs::rename(socket, dir_->path() / "moved.sock");
  ASSERT_TRUE(kubelet_->waitForRegistration(kCores, 2, 5s)) << "never served again";
  EXPECT_TRUE(fs::exists(socket));
  EXPECT_TRUE(kubelet_->waitForDevices(
      kCores, [](const auto& devices) { return !devices.empty(); }, 5s));
}

TEST_F(DevicePluginTest, HealthFollowsTheSimulatorFaultsAndRecovers) {
  start("trn2.48xlarge");
  ASSERT_TRUE(kubelet_->waitForRegistration(kDevices, 1, 5s));
  ASSERT_TRUE(kubelet_->waitForDevices(
      kDevices, [](const auto& d) { return d.size() == 16; }, 2s));
  // Device node removed: Unhealthy within a second, back when it returns.
  const fs::path node = roots_.deviceNode(5);
  fs::rename(node, node.string() + ".away");
  ASSERT_TRUE(kubelet_->waitForDevices(
      kDevices, [](const auto& d) { return d.at("5").health == "Unhealthy"; }, 1s));
  ASSERT_TRUE(kubelet_->waitForDevices(
      kCores, [](const auto& d) { return d.at("20").health == "Unhealthy"; }, 1s));
  fs::rename(node.string() + ".away", node);
  ASSERT_TRUE(kubelet_->waitForDevices(
      kDevices, [](const auto& d) { return d.at("5").health == "Healthy"; }, 1s));
  // Uncorrected ECC raised, then cleared (the counters are write-to-clear).
  const fs::path ecc = deviceDir(9) / "stats" / "hardware" / "mem_ecc_uncorrected";
  ASSERT_TRUE(writeFile(ecc, "2\n").ok());
  ASSERT_TRUE(kubelet_->waitForDevices(
      kDevices, [](const auto& d) { return d.at("9").health == "Unhealthy"; }, 1s));
  ASSERT_TRUE(writeFile(ecc, "0\n").ok());
  ASSERT_TRUE(kubelet_->waitForDevices(
      kDevices, [](const auto& d) { return d.at("9").health == "Healthy"; }, 1s));
}

TEST_F(DevicePluginTest, PreStartResetsAndRefusesWhileTheDeviceIsOpen) {
  start("trn2.48xlarge");
  ASSERT_TRUE(kubelet_->waitForRegistration(kCores, 1, 5s));
  auto client = kubelet_->pluginClient(kCores);
  const auto preStart = [&](std::vector<std::string> ids) {
    v1beta1::PreStartContainerRequest request;
    for (const auto& id : ids)
      request.add_devices_ids(id);
    v1beta1::PreStartContainerResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 30s);
    return client->PreStartContainer(&context, request, &response);
  };
  if (!driverServesResets()) GTEST_SKIP() << "no simulated driver to take the resets";
  const std::uint64_t before = resetsOf(1);
  EXPECT_TRUE(preStart({"4", "5", "6", "7"}).ok());
  EXPECT_GT(resetsOf(1), before);
  {
    // O_PATH: the simulated node has no driver to open; the /proc link is what the scan sees.
    UniqueFd holder(::open(roots_.deviceNode(2).c_str(), O_PATH | O_CLOEXEC));
    ASSERT_TRUE(holder.valid());
    const grpc::Status refused = preStart({"8"});
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(refused.error_message().find("is still open by pid " + std::to_string(::getpid())),
              std::string::npos)
        << refused.error_message();
  }
  EXPECT_TRUE(preStart({"8"}).ok()) << "released: the reset goes through";
}

}  // namespace
}  // namespace torus::testing

namespace torus::testing {
namespace {

// The binary as an operator runs it: one flag pointing at kubelet's directory is all it takes.
TEST(NodeAgentBinary, ServesAKubeletWhoseSocketIsInTheGivenDirectory) {
  auto dir = TempDir::create("agent-dp");
  ASSERT_TRUE(dir.ok());
  const std::string plugins = (dir->path() / "plugins").string();
  fs::create_directories(plugins);
  FakeKubelet kubelet(plugins, (dir->path() / "pod-resources.sock").string());
  kubelet.start();
  BackgroundProcess agent(
      {binaryPath("neuron-node-agent"), "--simulate=trn2.48xlarge",
       "--device-plugin-dir=" + plugins, "--metrics-addr=127.0.0.1:0", "--admin-addr=127.0.0.1:0",
       "--pod-resources-socket=" + (dir->path() / "pod-resources.sock").string()});
  ASSERT_NO_FATAL_FAILURE(waitForTrn2AgentResources(kubelet, agent));
  // Who holds what, as kubelet's pod-resources lists it, with the cores and devices behind it.
  kubelet.setAssignments({{kDevices, {"2"}}});
  // Registration comes before the agent serves HTTP: wait for the line that names the port.
  const auto serving = agent.waitForStderr("\"serving HTTP\"", 10s);
  ASSERT_TRUE(serving.has_value()) << agent.stderrText();
  const int port = loggedPort(*serving, "\"serving HTTP\"");
  std::optional<nlohmann::json> holders;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (const auto reply = httpGet(port, "/allocations"); reply && reply->substr(0, 3) == "200") {
      holders = nlohmann::json::parse(reply->substr(4))["holders"];
      if (!holders->empty()) break;
    }
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(holders && holders->size() == 1) << agent.stderrText();
  EXPECT_EQ((*holders)[0]["pod"], "default/pod-1");
  EXPECT_EQ((*holders)[0]["container"], "main");
  EXPECT_EQ((*holders)[0]["resource"], kDevices);
  EXPECT_EQ((*holders)[0]["cores"], nlohmann::json({8, 9, 10, 11}));
  EXPECT_EQ((*holders)[0]["devices"], nlohmann::json({2}));
  // /metrics names the holder on its device's and cores' series, and lists its cores.
  const auto metrics = [&] {
    const auto reply = httpGet(port, "/metrics");
    return reply && reply->substr(0, 3) == "200" ? reply->substr(4) : std::string();
  };
  const std::string text = metrics();
  EXPECT_NE(text.find("torus_device_healthy{instance_type=\"trn2.48xlarge\",neuron_device_index="
                      "\"2\",pod=\"pod-1\",namespace=\"default\",container=\"main\","
                      "dra_claim_name=\"\",dra_claim_namespace=\"\",dra_device_name=\"\",dra_pool_"
                      "name=\"\",dra_driver_name=\"\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("neuroncore_memory_usage_tensors{instance_type=\"trn2.48xlarge\","
                      "neuron_device_index=\"2\",neuroncore=\"9\",pod=\"pod-1\","
                      "namespace=\"default\",container=\"main\",dra_claim_name=\"\","
                      "dra_claim_namespace=\"\",dra_device_name=\"\",dra_pool_name=\"\","
                      "dra_driver_name=\"\",memory_location=\"device\"}"),
            std::string::npos);
  EXPECT_NE(text.find("torus_allocation_info{instance_type=\"trn2.48xlarge\",pod=\"pod-1\","
                      "namespace=\"default\",container=\"main\",resource=\"aws.amazon.com/"
                      "neuron\",neuroncore=\"11\",neuron_device_index=\"2\",dra_claim_name=\"\","
                      "dra_claim_namespace=\"\",dra_device_name=\"\",dra_pool_name=\"\","
                      "dra_driver_name=\"\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("neuron_device_index=\"3\",pod=\"\",namespace=\"\",container=\"\","
                      "dra_claim_name=\"\",dra_claim_namespace=\"\",dra_device_name=\"\",dra_pool_"
                      "name=\"\",dra_driver_name=\"\"}"),
            std::string::npos)
      << "a free device carries the labels, empty";
  // The pod is gone: its name leaves every series once kubelet stops listing it.
  kubelet.setAssignments({});
  EXPECT_TRUE(eventually([&] { return metrics().find("pod-1") == std::string::npos; }, 5s));
  agent.signal(SIGTERM);
  EXPECT_EQ(agent.waitExit(10s), std::optional<int>(0)) << agent.stderrText();
  EXPECT_FALSE(fs::exists(plugins + "/torus-neuroncore.sock")) << "sockets are removed on exit";
}

// A pod bound to `node` carrying the scheduler extender's hand-off.
nlohmann::json promisedPod(const std::string& name, const std::string& node, const std::string& ids,
                           const std::string& type, const std::string& time) {
  nlohmann::json pod = makePod("ml", name, type.empty() ? kDevices : type, 4);
  pod["spec"]["nodeName"] = node;
  auto& annotations = pod["metadata"]["annotations"];
  annotations["AWS_NEURON_IDS"] = ids;
  annotations["NEURON_ALLOC_TIME"] = time;
  annotations["NEURON_ALLOCATED"] = "false";
  if (!type.empty()) annotations["NEURON_RESOURCE_TYPE"] = type;
  return pod;
}

TEST_F(DevicePluginTest, FollowsTheSchedulerExtendersHandOffAndMarksItAllocated) {
  FakeApiServer api;
  api.put("pods", promisedPod("cores", "node-a", "8,9,10,11", kCores, "1700000000000000002"));
  api.put("pods", promisedPod("devices", "node-a", "4,5,6,7", "", "1700000000000000001"));
  api.put("pods", promisedPod("elsewhere", "node-b", "0,1,2,3", kCores, "1600000000000000000"));
  ASSERT_NO_FATAL_FAILURE(followHandoff(api, "node-a"));
  start("trn2.48xlarge");

  // Our own placement would pick 0-3; the extender's choice wins (node-b's pod is not ours).
  EXPECT_EQ(preferred(kCores, 4, range(0, 64)), "8,9,10,11");
  EXPECT_EQ(preferred(kDevices, 4, range(0, 16)), "4,5,6,7");
  // A promise that does not fit what kubelet offers is not forced on it.
  std::vector<std::string> withoutFive = range(0, 16);
  withoutFive.erase(withoutFive.begin() + 5);
  EXPECT_EQ(preferred(kDevices, 4, withoutFive), "0,1,2,3");
  EXPECT_EQ(preferred(kCores, 2, range(0, 64)), "0,1") << "no promise of that size";

  v1beta1::AllocateResponse response;
  ASSERT_TRUE(allocate(kCores, {{"8", "9", "10", "11"}}, &response).ok());
  std::optional<nlohmann::json> pod;
  const auto patched = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < patched) {
    pod = api.get("pods", "ml/cores");
    if (pod && pod->at("metadata").at("annotations").at("NEURON_ALLOCATED") == "true") break;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(pod);
  EXPECT_EQ(pod->at("metadata").at("annotations").at("NEURON_ALLOCATED"), "true");
  const auto writes = api.writes();
  ASSERT_EQ(writes.size(), 1U);
  EXPECT_EQ(writes[0].contentType, "application/merge-patch+json");
  EXPECT_EQ(writes[0].body, (nlohmann::json{{"metadata",
                                             {{"uid", pod->at("metadata").at("uid")},
                                              {"annotations", {{"NEURON_ALLOCATED", "true"}}}}}}));
  // The promise is used up: the next 4-core container gets our own placement.
  std::vector<std::string> rest = range(0, 8);
  for (const std::string& id : range(12, 52))
    rest.push_back(id);
  EXPECT_EQ(preferred(kCores, 4, rest), "0,1,2,3");
}

// A gang holding the four nodes of an UltraServer whole: the extender's hand-off says so, and the
// container learns its place in the job (what AWS's UltraServer operator sets for its workloads).
TEST_F(DevicePluginTest, AnUltraServerJobsPodIsToldItsPlaceInTheJob) {
  FakeApiServer api;
  nlohmann::json job = promisedPod("rank-0", "node-a", "0-15", "", "1700000000000000001");
  job["metadata"]["annotations"]["torus.dev/ultraserver-nodes"] = "4";
  api.put("pods", job);
  ASSERT_NO_FATAL_FAILURE(followHandoff(api, "node-a"));
  start("trn2u.48xlarge");

  v1beta1::AllocateResponse response;
  ASSERT_TRUE(allocate(kDevices, {range(0, 16)}, &response).ok());
  const auto& env = response.container_responses(0).envs();
  ASSERT_EQ(env.count("NEURON_RT_ULTRASERVER_MODE"), 1U);
  EXPECT_EQ(env.at("NEURON_RT_ULTRASERVER_MODE"), "1") << "X4";
  EXPECT_EQ(env.at("NEURON_RT_ULTRASERVER_NODE_ID"), "0");
  EXPECT_EQ(env.at("NEURON_RT_ULTRASERVER_SERVER_ID").size(), 16U);
  // The promise is used up: the same ids for a pod without one come without the job's variables.
  v1beta1::AllocateResponse plain;
  ASSERT_TRUE(allocate(kDevices, {range(0, 16)}, &plain).ok());
  EXPECT_EQ(plain.container_responses(0).envs().count("NEURON_RT_ULTRASERVER_MODE"), 0U);
}

// The extender placed on its view of the node; a NeuronLink cut since (or one its view lacks) must
// not reach a container: the plugin checks every promise against the node as discovered, refuses
// one that needs the cut link (log, counter, an Event on the pod) and places the pod itself.
TEST_F(DevicePluginTest, APromiseAcrossACutNeuronLinkIsRefusedAndPlacedHere) {
  FakeApiServer api;
  api.put("pods", promisedPod("across", "node-a", "4,5", "", "1700000000000000001"));
  api.put("pods", promisedPod("cores", "node-a", "8,9,10,11", kCores, "1700000000000000002"));
  ASSERT_NO_FATAL_FAILURE(followHandoff(api, "node-a"));
  faults_ = {"link-cut:4-5"};
  start("inf2.48xlarge");  // 12 devices in a row, 2 cores each
  const std::string devices = preferred(kDevices, 2, range(0, 12));
  EXPECT_NE(devices, "4,5");
  EXPECT_FALSE(devices.starts_with("error")) << devices;
  const std::string cores = preferred(kCores, 4, range(0, 24));  // 8-11: devices 4 and 5
  EXPECT_NE(cores, "8,9,10,11");
  EXPECT_FALSE(cores.starts_with("error")) << cores;
  const auto refused = [](const char* resource) {
    return metrics::processCounters().value(metrics::names::kPromisesRefusedTotal,
                                            {{"resource", resource}});
  };
  EXPECT_EQ(refused("aws.amazon.com/neuron"), 1);
  EXPECT_EQ(refused("aws.amazon.com/neuroncore"), 1);
  EXPECT_TRUE(eventually([&] { return api.events().size() >= 2; }, 5s));
  std::set<std::string> about;
  for (const nlohmann::json& event : api.events()) {
    EXPECT_EQ(event["reason"], "PromiseRefused");
    EXPECT_EQ(event["type"], "Warning");
    EXPECT_NE(event["message"].get<std::string>().find("not NeuronLink-connected"),
              std::string::npos)
        << event.dump();
    about.insert(event["involvedObject"]["name"].get<std::string>());
  }
  EXPECT_EQ(about, (std::set<std::string>{"across", "cores"}));
}

// kubelet asks for a pod's ids as soon as the pod is bound, which can be before our watch shows
// the pod; the extender annotated it before binding it, so the API already has the promise.
TEST_F(DevicePluginTest, AHandOffTheWatchHasNotShownYetIsStillHonoured) {
  FakeApiServer api;
  ASSERT_NO_FATAL_FAILURE(followHandoff(api, "node-a"));
  start("trn2.48xlarge");
  api.putSilently("pods", promisedPod("early", "node-a", "20,21,22,23", kCores, "1700000000"));
  EXPECT_EQ(preferred(kCores, 4, range(0, 64)), "20,21,22,23");
}

// GetPreferredAllocation names no pod, so kubelet can give pod A the ids promised to pod B (same
// size) and B those of A. What pods really hold (pod-resources) is written back on each pod, so
// the extender, which accounts from AWS_NEURON_IDS, never believes a held core is free.
TEST_F(DevicePluginTest, APodHoldingAnotherPodsPromiseGetsItsHandOffCorrected) {
  FakeApiServer api;
  api.put("pods", promisedPod("a", "node-a", "8,9,10,11", kCores, "1700000000000000001"));
  api.put("pods", promisedPod("b", "node-a", "12,13,14,15", kCores, "1700000000000000002"));
  api.put("pods", promisedPod("c", "node-a", "16,17,18,19", kCores, "1700000000000000003"));
  ASSERT_NO_FATAL_FAILURE(followHandoff(api, "node-a"));
  start("trn2.48xlarge");
  kubelet_->setPodAssignments({{"ml", "a", kCores, {"12", "13", "14", "15"}},
                               {"ml", "b", kCores, {"8", "9", "10", "11"}},
                               {"ml", "c", kCores, {"16", "17", "18", "19"}}});
  const auto annotations = [&](const std::string& pod) {
    return api.get("pods", "ml/" + pod)->at("metadata").at("annotations");
  };
  const auto settled = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < settled &&
         !(annotations("a")["AWS_NEURON_IDS"] == "12,13,14,15" &&
           annotations("b")["AWS_NEURON_IDS"] == "8,9,10,11" &&
           annotations("c")["NEURON_ALLOCATED"] == "true")) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(annotations("a")["AWS_NEURON_IDS"], "12,13,14,15");
  EXPECT_EQ(annotations("a")["NEURON_ALLOCATED"], "true");
  EXPECT_EQ(annotations("b")["AWS_NEURON_IDS"], "8,9,10,11");
  EXPECT_EQ(annotations("b")["NEURON_ALLOCATED"], "true");
  // c got what it was promised: only marked allocated.
  EXPECT_EQ(annotations("c")["AWS_NEURON_IDS"], "16,17,18,19");
  EXPECT_EQ(annotations("c")["NEURON_ALLOCATED"], "true");
  // Each pod is written once, however many times kubelet is asked again (every 100 ms here).
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(api.writes().size(), 3U);
}

// Kubelet refuses a pod for good when the plugin's last list has too few Healthy ids, so
// the agent publishes that list on its Node for the extender; the ids a pod held through the other
// resource come back the moment the API shows the pod ended (the poll here is a minute); and a
// stopping agent taints its Node, which the next agent clears once kubelet has its lists.
TEST(NodeAgentBinary, PublishesWhatKubeletWasToldAndTaintsItsNodeWhileStopping) {
  KubeletBed bed("agent-view");
  FakeKubelet& kubelet = *bed.kubelet;
  const std::string& plugins = bed.plugins;
  const std::string& podResources = bed.podResources;
  FakeApiServer api;
  api.put("nodes", makeNode("node-a", "trn2.48xlarge"));
  nlohmann::json pod = makePod("ml", "whole", kDevices, 1);
  pod["spec"]["nodeName"] = "node-a";
  pod["status"]["phase"] = "Running";
  api.put("pods", pod);
  const std::string kubeconfig = (bed.path() / "kubeconfig").string();
  api.writeKubeconfig(kubeconfig);
  kubelet.setPodAssignments({{"ml", "whole", kDevices, {"2"}}});
  const std::vector<std::string> command = {binaryPath("neuron-node-agent"),
                                            "--simulate=trn2.48xlarge",
                                            "--metrics-addr=127.0.0.1:0",
                                            "--device-plugin-dir=" + plugins,
                                            "--pod-resources-socket=" + podResources,
                                            "--pod-resources-interval=60s",
                                            "--kubeconfig=" + kubeconfig,
                                            "--node-name=node-a",
                                            "--kernel-log=none"};
  const auto annotation = [&] {
    nlohmann::json node = api.get("nodes", "node-a").value();
    const nlohmann::json& value = node["metadata"]["annotations"]["torus.dev/kubelet-unavailable"];
    return value.is_string() ? value.get<std::string>() : std::string();
  };
  const auto tainted = [&] {
    nlohmann::json node = api.get("nodes", "node-a").value();
    const nlohmann::json& taints = node["spec"]["taints"];
    return taints.is_array() && taints.size() == 1 &&
           taints[0]["key"] == "torus.dev/device-plugin-restarting" &&
           taints[0]["effect"] == "NoSchedule";
  };
  std::optional<BackgroundProcess> next;
  {
    BackgroundProcess agent(command);
    const std::string held = R"({"aws.amazon.com/neuron":"2","aws.amazon.com/neuroncore":"8-11"})";
    ASSERT_TRUE(eventually([&] { return annotation() == held; }, 10s)) << annotation() << "\n"
                                                                       << agent.stderrText();
    EXPECT_EQ(kubelet.devices(kCores).at("8").health, "Unhealthy");
    // The pod ends: kubelet lists it no more, then the API shows it Succeeded.
    kubelet.setPodAssignments({});
    pod = api.get("pods", "ml/whole").value();  // the same object, UID and all
    pod["status"]["phase"] = "Succeeded";
    api.put("pods", pod);
    const std::string free = R"({"aws.amazon.com/neuron":"","aws.amazon.com/neuroncore":""})";
    EXPECT_TRUE(eventually([&] { return annotation() == free; }, 3s)) << annotation() << "\n"
                                                                      << agent.stderrText();
    EXPECT_EQ(kubelet.devices(kCores).at("8").health, "Healthy") << "kubelet was told first";
    EXPECT_FALSE(tainted());
    // The other order, as under load: the API shows the pod ended while kubelet, still tearing
    // it down, lists it for seconds more. Its ids come back as soon as kubelet lets them go, not
    // at the next poll (60 s here).
    nlohmann::json slow = makePod("ml", "slow", kDevices, 1);
    slow["spec"]["nodeName"] = "node-a";
    slow["status"]["phase"] = "Running";
    api.put("pods", slow);
    kubelet.setPodAssignments({{"ml", "slow", kDevices, {"5"}}});
    {
      v1beta1::AllocateRequest request;
      request.add_container_requests()->add_devices_ids("5");
      v1beta1::AllocateResponse response;
      grpc::ClientContext context;
      ASSERT_TRUE(kubelet.pluginClient(kDevices)->Allocate(&context, request, &response).ok());
    }
    ASSERT_TRUE(eventually([&] { return annotation() != free; }, 10s)) << agent.stderrText();
    slow = api.get("pods", "ml/slow").value();
    slow["status"]["phase"] = "Succeeded";
    api.put("pods", slow);
    std::this_thread::sleep_for(3s);  // kubelet's teardown, longer than the agent's fast reads
    kubelet.setPodAssignments({});
    EXPECT_TRUE(eventually([&] { return annotation() == free; }, 2s)) << annotation() << "\n"
                                                                      << agent.stderrText();
    // A pod bound here that kubelet has not admitted yet: the agent stops only once it has been
    // (pod-resources lists it), so kubelet still counts the ids it asks for.
    nlohmann::json late = makePod("ml", "late", kCores, 4);
    late["spec"]["nodeName"] = "node-a";
    late["status"]["phase"] = "Pending";
    api.put("pods", late);
    agent.signal(SIGTERM);
    // Its replacement starts meanwhile, as a DaemonSet's does, and waits for it to go: two agents
    // on one kubelet would leave it counting neither's ids once the first one's streams end.
    next.emplace(command);
    EXPECT_EQ(agent.waitExit(4s), std::nullopt) << "stopped before the bound pod was admitted";
    EXPECT_TRUE(tainted()) << agent.stderrText();
    EXPECT_FALSE(kubelet.waitForRegistration(kCores, 2, 0ms)) << next->stderrText();
    kubelet.setPodAssignments({{"ml", "late", kCores, {"0", "1", "2", "3"}}});
    EXPECT_EQ(agent.waitExit(20s), std::optional<int>(0)) << agent.stderrText();
    EXPECT_EQ(agent.stderrText().find("not admitted yet"), std::string::npos) << agent.stderrText();
  }
  EXPECT_TRUE(kubelet.waitForRegistration(kCores, 2, 10s)) << next->stderrText();
  EXPECT_TRUE(eventually([&] { return !tainted(); }, 10s)) << next->stderrText();
  EXPECT_TRUE(kubelet.waitForDevices(
      kDevices, [](const auto& d) { return d.size() == 16; }, 5s));
  next->signal(SIGTERM);
  EXPECT_EQ(next->waitExit(20s), std::optional<int>(0)) << next->stderrText();
}

TEST(NodeAgentBinary, AnUnusableKubeconfigOrNoNodeNameIsAClearError) {
  auto dir = TempDir::create("agent-kube");
  ASSERT_TRUE(dir.ok());
  const std::string plugins = (dir->path() / "plugins").string();
  fs::create_directories(plugins);
  const ProcessResult missing =
      runProcess({binaryPath("neuron-node-agent"), "--simulate=inf2.xlarge",
                  "--metrics-addr=127.0.0.1:0", "--admin-addr=127.0.0.1:0",
                  "--device-plugin-dir=" + plugins, "--kubeconfig=/nonexistent/kubeconfig"});
  EXPECT_NE(missing.exitCode, 0);
  EXPECT_NE(missing.err.find("--kubeconfig"), std::string::npos) << missing.err;
  FakeApiServer api;
  const std::string kubeconfig = (dir->path() / "kubeconfig").string();
  api.writeKubeconfig(kubeconfig);
  const ProcessResult nameless =
      runProcess({binaryPath("neuron-node-agent"), "--simulate=inf2.xlarge",
                  "--metrics-addr=127.0.0.1:0", "--admin-addr=127.0.0.1:0",
                  "--device-plugin-dir=" + plugins, "--kubeconfig=" + kubeconfig, "--node-name="});
  EXPECT_NE(nameless.exitCode, 0);
  EXPECT_NE(nameless.err.find("NODE_NAME"), std::string::npos) << nameless.err;
}

}  // namespace
}  // namespace torus::testing
