// The shared pod-resources client and poll loop against a real gRPC server on a unix socket:
// kubelet's rows come back as they were listed (ids and claims), and a socket that appears late
// is found by the loop without a restart.
#include "common/kubelet/pod_resources_poll.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "common/base/temp_dir.h"
#include "common/kubelet/pod_resources_client.h"
#include "podresources/v1/api.grpc.pb.h"

namespace torus::kubelet {
namespace {

using namespace std::chrono_literals;

// Lists one pod with a container holding two neuroncore ids and using one claim of two devices.
class OnePod final : public v1::PodResourcesLister::Service {
 public:
  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    auto* pod = response->add_pod_resources();
    pod->set_name("train");
    pod->set_namespace_("ml");
    auto* container = pod->add_containers();
    container->set_name("main");
    auto* devices = container->add_devices();
    devices->set_resource_name("aws.amazon.com/neuroncore");
    devices->add_device_ids("4");
    devices->add_device_ids("5");
    auto* claim = container->add_dynamic_resources();
    claim->set_claim_name("chips");
    claim->set_claim_namespace("ml");
    for (const char* name : {"neurondevice0", "neurondevice1"}) {
      auto* device = claim->add_claim_resources();
      device->set_driver_name("neuron.aws.com");
      device->set_pool_name("node-a");
      device->set_device_name(name);
    }
    return grpc::Status::OK;
  }
};

std::unique_ptr<grpc::Server> serve(OnePod& service, const std::string& socket) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + socket, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  return builder.BuildAndStart();
}

TEST(PodResourcesClient, ReturnsKubeletsRowsOfIdsAndOfClaims) {
  auto dir = TempDir::create("pod-resources");
  ASSERT_TRUE(dir.ok());
  const std::string socket = (dir->path() / "kubelet.sock").string();
  OnePod service;
  auto server = serve(service, socket);
  ASSERT_NE(server, nullptr);
  PodResourcesClient client(socket);
  auto rows = client.list(5s);
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->devices.size(), 1U);
  EXPECT_EQ(rows->devices[0].pod, "train");
  EXPECT_EQ(rows->devices[0].podNamespace, "ml");
  EXPECT_EQ(rows->devices[0].resourceName, "aws.amazon.com/neuroncore");
  EXPECT_EQ(rows->devices[0].deviceIds, (std::vector<std::string>{"4", "5"}));
  ASSERT_EQ(rows->claims.size(), 1U);
  EXPECT_EQ(rows->claims[0].claimName, "chips");
  EXPECT_EQ(rows->claims[0].container, "main");
  ASSERT_EQ(rows->claims[0].devices.size(), 2U);
  EXPECT_EQ(rows->claims[0].devices[1].device, "neurondevice1");
  EXPECT_EQ(rows->claims[0].devices[1].pool, "node-a");
  server->Shutdown();
}

TEST(PodResourcesClient, AMissingSocketIsAnErrorNamingIt) {
  auto dir = TempDir::create("pod-resources");
  ASSERT_TRUE(dir.ok());
  const std::string socket = (dir->path() / "absent.sock").string();
  PodResourcesClient client(socket);
  auto rows = client.list(200ms);
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(rows.error().message.find(socket), std::string::npos) << rows.error().message;
}

TEST(PodResourcesPoll, FindsASocketThatAppearsAfterItStarted) {
  auto dir = TempDir::create("pod-resources");
  ASSERT_TRUE(dir.ok());
  const std::string socket = (dir->path() / "kubelet.sock").string();
  std::mutex mutex;
  std::condition_variable answered;
  std::size_t claims = 0;
  int answers = 0;
  PodResourcesPoll poll({socket, 50ms, log::Component::kPlugin, "nothing is lost in this test"},
                        [&](PodResourcesRows&& rows) {
                          std::lock_guard lock(mutex);
                          claims = rows.claims.size();
                          ++answers;
                          answered.notify_all();
                          return false;
                        });
  OnePod service;
  auto server = serve(service, socket);  // kubelet starts after the agent
  ASSERT_NE(server, nullptr);
  poll.pokeNow();
  std::unique_lock lock(mutex);
  ASSERT_TRUE(answered.wait_for(lock, 10s, [&] { return answers > 0; }))
      << "the loop never read the socket that appeared";
  EXPECT_EQ(claims, 1U);
  lock.unlock();
  server->Shutdown();
}

// The device plugin serves kubelet only after this: the first answer must already be handed over
// when it returns true, and a kubelet that is not there must not hold the agent up for long.
TEST(PodResourcesPoll, TheFirstListIsHandedOverBeforeTheWaitForItReturns) {
  auto dir = TempDir::create("pod-resources");
  ASSERT_TRUE(dir.ok());
  const std::string socket = (dir->path() / "kubelet.sock").string();
  OnePod service;
  auto server = serve(service, socket);
  ASSERT_NE(server, nullptr);
  std::atomic<std::size_t> devices = 0;
  PodResourcesPoll poll({socket, 10s, log::Component::kPlugin, "nothing is lost in this test"},
                        [&](PodResourcesRows&& rows) {
                          devices = rows.devices.size();
                          return false;
                        });
  ASSERT_TRUE(poll.waitForFirstList(10s));
  EXPECT_EQ(devices.load(), 1U) << "the answer reached its owner before the wait returned";
  server->Shutdown();
}

TEST(PodResourcesPoll, AMissingKubeletEndsTheWaitForTheFirstListUnanswered) {
  auto dir = TempDir::create("pod-resources");
  ASSERT_TRUE(dir.ok());
  PodResourcesPoll poll({(dir->path() / "absent.sock").string(), 10s, log::Component::kPlugin,
                         "nothing is lost in this test"},
                        [](PodResourcesRows&&) { return false; });
  // Long enough to outlast any scheduling delay: the wait ends when the List fails, not then.
  const auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(poll.waitForFirstList(60s));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 30s)
      << "the failed List ended the wait, not the timeout";
}

}  // namespace
}  // namespace torus::kubelet
