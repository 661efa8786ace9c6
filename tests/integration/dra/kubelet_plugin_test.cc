// The DRA driver's kubelet side over real unix sockets, with this test as kubelet: plugin
// registration (GetInfo, NotifyRegistrationStatus), NodePrepareResources and
// NodeUnprepareResources in both API versions, the resource-health stream, hostile requests,
// and re-serving a socket that disappeared.
#include "dra-driver/kubelet/kubelet_plugin.h"

#include <chrono>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/base/temp_dir.h"
#include "dra-driver/claim_preparer.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "dra_health/v1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "tests/integration/dra/fake_node_view.h"

namespace torus::dra {
namespace {

using nlohmann::json;
namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

using FakeNode = testing::FakeNodeView;

json claimObject(const std::string& uid, const std::vector<std::string>& devices,
                 const std::string& request = "neurons") {
  json results = json::array();
  for (const std::string& device : devices) {
    results.push_back({{"request", request},
                       {"driver", "neuron.aws.com"},
                       {"pool", "node-a"},
                       {"device", device}});
  }
  return {{"metadata", {{"uid", uid}}},
          {"status", {{"allocation", {{"devices", {{"results", results}}}}}}}};
}

class KubeletPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Short paths: a unix socket path has at most 107 bytes.
    auto dir = TempDir::create("dra", "/tmp");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(*dir));
    objects_["ns/one"] = claimObject("uid-one", {"neurondevice0"});
    objects_["ns/four"] = claimObject(
        "uid-four", {"neurondevice4", "neurondevice5", "neurondevice6", "neurondevice7"});
    objects_["ns/clash"] = claimObject("uid-clash", {"neuroncore1"});
    // Allocated from a prioritized list (firstAvailable): the result names the subrequest.
    objects_["ns/listed"] =
        claimObject("uid-listed", {"neurondevice8", "neurondevice9"}, "neurons/two-chips");
    PreparerOptions options;
    options.pool = "node-a";
    options.cdiRoot = dir_->path() / "cdi";
    options.checkpointFile = dir_->path() / "checkpoint.json";
    auto preparer = ClaimPreparer::create(options, node_);
    ASSERT_TRUE(preparer.ok()) << preparer.error().message;
    preparer_ = std::move(*preparer);
    KubeletPluginOptions paths;
    paths.pluginsDir = dir_->path() / "plugins";
    paths.registryDir = dir_->path() / "plugins_registry";
    auto plugin = KubeletPlugin::start(
        paths, *preparer_,
        [this](const std::string& ns, const std::string& name) -> Result<json> {
          const auto found = objects_.find(ns + "/" + name);
          if (found == objects_.end()) return makeError(ErrorCode::kNotFound, "no such claim");
          return found->second;
        },
        node_, "node-a");
    ASSERT_TRUE(plugin.ok()) << plugin.error().message;
    plugin_ = std::move(*plugin);
  }

  std::shared_ptr<grpc::Channel> channel(const std::filesystem::path& socket) {
    return grpc::CreateChannel("unix:" + socket.string(), grpc::InsecureChannelCredentials());
  }

  template <typename Request>
  static void addClaim(Request& request, const std::string& uid, const std::string& name) {
    auto* claim = request.add_claims();
    claim->set_uid(uid);
    claim->set_namespace_("ns");
    claim->set_name(name);
  }

  std::unique_ptr<TempDir> dir_;
  FakeNode node_;
  std::map<std::string, json> objects_;
  std::unique_ptr<ClaimPreparer> preparer_;
  std::unique_ptr<KubeletPlugin> plugin_;
};

TEST_F(KubeletPluginTest, RegistrationNamesTheDriverEndpointAndServices) {
  auto registration =
      pluginregistration::Registration::NewStub(channel(plugin_->registrationSocket()));
  grpc::ClientContext context;
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(registration->GetInfo(&context, {}, &info).ok());
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), "neuron.aws.com");
  EXPECT_EQ(info.endpoint(), plugin_->draSocket().string());
  ASSERT_GE(info.supported_versions_size(), 2);
  EXPECT_EQ(info.supported_versions(0), "v1.DRAPlugin");  // newest first: kubelet picks it
  EXPECT_EQ(info.supported_versions(1), "v1beta1.DRAPlugin");

  EXPECT_FALSE(plugin_->registered());
  EXPECT_EQ(plugin_->notReadyReason(),
            "kubelet has not registered the DRA plugin " + plugin_->draSocket().string());
  grpc::ClientContext notify;
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  pluginregistration::RegistrationStatusResponse empty;
  ASSERT_TRUE(registration->NotifyRegistrationStatus(&notify, status, &empty).ok());
  EXPECT_TRUE(plugin_->registered());
  EXPECT_EQ(plugin_->notReadyReason(), "");
  // The endpoint gone: not ready until it is served again and kubelet registers it anew.
  std::filesystem::remove(plugin_->draSocket());
  EXPECT_NE(plugin_->notReadyReason(), "");
}

// Kubelet gives a container the devices whose request names include the request the container
// names, and containers name requests, never subrequests: the answer carries the bare name.
TEST_F(KubeletPluginTest, APrioritizedListResultIsAnsweredUnderItsRequestName) {
  auto v1 = drav1::DRAPlugin::NewStub(channel(plugin_->draSocket()));
  drav1::NodePrepareResourcesRequest request;
  addClaim(request, "uid-listed", "listed");
  drav1::NodePrepareResourcesResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(v1->NodePrepareResources(&context, request, &response).ok());
  const auto& listed = response.claims().at("uid-listed");
  ASSERT_EQ(listed.error(), "");
  ASSERT_EQ(listed.devices_size(), 2);
  for (const auto& device : listed.devices()) {
    ASSERT_EQ(device.request_names_size(), 1) << device.device_name();
    EXPECT_EQ(device.request_names(0), "neurons") << device.device_name();
  }
}

TEST_F(KubeletPluginTest, PrepareAndUnprepareInBothVersions) {
  auto v1 = drav1::DRAPlugin::NewStub(channel(plugin_->draSocket()));
  drav1::NodePrepareResourcesRequest request;
  addClaim(request, "uid-four", "four");
  addClaim(request, "uid-missing", "missing");
  drav1::NodePrepareResourcesResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(v1->NodePrepareResources(&context, request, &response).ok());
  const auto& four = response.claims().at("uid-four");
  EXPECT_EQ(four.error(), "");
  ASSERT_EQ(four.devices_size(), 4);
  EXPECT_EQ(four.devices(0).pool_name(), "node-a");
  EXPECT_EQ(four.devices(0).device_name(), "neurondevice4");
  EXPECT_EQ(four.devices(0).request_names(0), "neurons");
  EXPECT_EQ(four.devices(0).cdi_device_ids(0), "neuron.aws.com/device=uid-four-neurondevice4");
  // One claim's error is its own.
  EXPECT_NE(response.claims().at("uid-missing").error().find("ns/missing"), std::string::npos);

  auto beta = drav1beta1::DRAPlugin::NewStub(channel(plugin_->draSocket()));
  drav1beta1::NodePrepareResourcesRequest betaRequest;
  addClaim(betaRequest, "uid-one", "one");
  drav1beta1::NodePrepareResourcesResponse betaResponse;
  grpc::ClientContext betaContext;
  ASSERT_TRUE(beta->NodePrepareResources(&betaContext, betaRequest, &betaResponse).ok());
  EXPECT_EQ(betaResponse.claims().at("uid-one").devices(0).device_name(), "neurondevice0");

  // neuroncore1 is on chip 0, which claim "one" holds.
  drav1::NodePrepareResourcesRequest clash;
  addClaim(clash, "uid-clash", "clash");
  drav1::NodePrepareResourcesResponse clashResponse;
  grpc::ClientContext clashContext;
  ASSERT_TRUE(v1->NodePrepareResources(&clashContext, clash, &clashResponse).ok());
  EXPECT_NE(clashResponse.claims().at("uid-clash").error().find("held by prepared claim ns/one"),
            std::string::npos);

  drav1::NodeUnprepareResourcesRequest unprepare;
  addClaim(unprepare, "uid-one", "one");
  addClaim(unprepare, "uid-never", "never");
  drav1::NodeUnprepareResourcesResponse unprepared;
  grpc::ClientContext unprepareContext;
  ASSERT_TRUE(v1->NodeUnprepareResources(&unprepareContext, unprepare, &unprepared).ok());
  EXPECT_EQ(unprepared.claims().at("uid-one").error(), "");
  EXPECT_EQ(unprepared.claims().at("uid-never").error(), "");  // never prepared: nothing to do
  EXPECT_EQ(preparer_->heldCores().toRangeString(), "16-31");
}

TEST_F(KubeletPluginTest, HostileRequestsGetErrorsAndTheServerKeepsServing) {
  auto v1 = drav1::DRAPlugin::NewStub(channel(plugin_->draSocket()));
  drav1::NodePrepareResourcesRequest request;
  request.add_claims();  // no uid, namespace or name
  auto* long_name = request.add_claims();
  long_name->set_uid("uid-long");
  long_name->set_namespace_("ns");
  long_name->set_name(std::string(100000, 'x'));
  drav1::NodePrepareResourcesResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(v1->NodePrepareResources(&context, request, &response).ok());
  EXPECT_NE(response.claims().at("").error().find("needs a uid"), std::string::npos);
  EXPECT_NE(response.claims().at("uid-long").error().find("longer than Kubernetes allows"),
            std::string::npos);

  drav1::NodePrepareResourcesRequest flood;
  for (int i = 0; i < 2000; ++i)
    addClaim(flood, "uid-" + std::to_string(i), "x");
  grpc::ClientContext floodContext;
  drav1::NodePrepareResourcesResponse floodResponse;
  EXPECT_EQ(v1->NodePrepareResources(&floodContext, flood, &floodResponse).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  drav1::NodePrepareResourcesRequest fine;
  addClaim(fine, "uid-one", "one");
  grpc::ClientContext fineContext;
  drav1::NodePrepareResourcesResponse fineResponse;
  ASSERT_TRUE(v1->NodePrepareResources(&fineContext, fine, &fineResponse).ok());
  EXPECT_EQ(fineResponse.claims().at("uid-one").error(), "");
}

TEST_F(KubeletPluginTest, HealthStreamReportsEveryDeviceAndFollowsChanges) {
  auto health = v1::DRAResourceHealth::NewStub(channel(plugin_->draSocket()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto reader = health->NodeWatchResources(&context, {});
  v1::NodeWatchResourcesResponse first;
  ASSERT_TRUE(reader->Read(&first));
  EXPECT_EQ(first.devices_size(), 16 + 64);
  for (const auto& device : first.devices()) {
    EXPECT_EQ(device.device().pool_name(), "node-a");
    EXPECT_EQ(device.health(), v1::HEALTHY);
    EXPECT_GT(device.health_check_timeout_seconds(), 10);
  }
  node_.setHealth(
      3, topology::DeviceHealth::unhealthy(topology::HealthDimension::kEccUncorrected, "mem",
                                           "stats/hardware/mem_ecc_uncorrected is 1"));
  v1::NodeWatchResourcesResponse next;
  ASSERT_TRUE(reader->Read(&next));
  int unhealthy = 0;
  for (const auto& device : next.devices()) {
    if (device.health() != v1::UNHEALTHY) continue;
    ++unhealthy;
    EXPECT_NE(device.message().find("neuron3: stats/hardware/mem_ecc_uncorrected"),
              std::string::npos);
  }
  EXPECT_EQ(unhealthy, 1 + 4);  // the chip and its cores
  context.TryCancel();
}

TEST_F(KubeletPluginTest, TooManyHealthStreamsAreRefusedAndPrepareStillAnswers) {
  auto health = v1::DRAResourceHealth::NewStub(channel(plugin_->draSocket()));
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<v1::NodeWatchResourcesResponse>>> readers;
  int refused = 0;
  for (int i = 0; i < 12; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    readers.push_back(health->NodeWatchResources(contexts.back().get(), {}));
    v1::NodeWatchResourcesResponse first;
    if (!readers.back()->Read(&first)) {
      EXPECT_EQ(readers.back()->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
      ++refused;
    }
  }
  EXPECT_EQ(refused, 4);
  auto v1 = drav1::DRAPlugin::NewStub(channel(plugin_->draSocket()));
  drav1::NodePrepareResourcesRequest request;
  addClaim(request, "uid-one", "one");
  drav1::NodePrepareResourcesResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(v1->NodePrepareResources(&context, request, &response).ok());
  EXPECT_EQ(response.claims().at("uid-one").error(), "");
  for (auto& open : contexts)
    open->TryCancel();
}

TEST_F(KubeletPluginTest, ADeletedSocketIsServedAgain) {
  std::filesystem::remove(plugin_->registrationSocket());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!std::filesystem::exists(plugin_->registrationSocket()) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(std::filesystem::exists(plugin_->registrationSocket()));
  auto registration =
      pluginregistration::Registration::NewStub(channel(plugin_->registrationSocket()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  pluginregistration::PluginInfo info;
  EXPECT_TRUE(registration->GetInfo(&context, {}, &info).ok());
  EXPECT_EQ(info.name(), "neuron.aws.com");
}

}  // namespace
}  // namespace torus::dra
