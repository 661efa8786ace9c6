// The extender's Events and a gang's nominations leave from a thread of their own: posting never
// blocks a bind or a filter, an API server that is away costs queued writes (the oldest dropped
// and counted), never memory without bound, and stopping does not wait on it for long.
#include "scheduler-extender/kube/courtesy_writer.h"

#include <chrono>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/base/unique_fd.h"
#include "tests/integration/kube/fake_api_server.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::extender {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

json podEvent(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"generateName", name + "."}, {"namespace", "ml"}}},
          {"involvedObject", {{"kind", "Pod"}, {"name", name}, {"namespace", "ml"}}},
          {"reason", "NeuronAllocated"},
          {"message", "test"},
          {"type", "Normal"}};
}

TEST(CourtesyWriter, PostsInTheBackground) {
  testing::FakeApiServer api;
  kube::KubeConfig config;
  config.server = api.url();
  CourtesyWriter poster(config);
  for (int i = 0; i < 3; ++i)
    poster.post("ml", podEvent("p" + std::to_string(i)), "ml/p", "NeuronAllocated");
  EXPECT_TRUE(testing::eventually([&] { return api.events().size() == 3; }));
  EXPECT_EQ(poster.dropped(), 0U);
}

// A gang's plan nominates each member's node through pods/status, in the background.
TEST(CourtesyWriter, NominatesAPodsNodeThroughItsStatus) {
  testing::FakeApiServer api;
  api.put("pods", {{"metadata", {{"name", "w1"}, {"namespace", "ml"}}},
                   {"spec", {{"schedulerName", "neuron-scheduler"}}},
                   {"status", {{"phase", "Pending"}}}});
  kube::KubeConfig config;
  config.server = api.url();
  CourtesyWriter writer(config);
  writer.nominate("ml", "w1", "trn-a");
  EXPECT_TRUE(testing::eventually([&] {
    const auto pod = api.get("pods", "ml/w1");
    return pod && pod->value("status", json::object()).value("nominatedNodeName", "") == "trn-a";
  }));
  const auto pod = api.get("pods", "ml/w1");
  ASSERT_TRUE(pod);
  EXPECT_EQ((*pod)["status"]["phase"], "Pending") << "the rest of the status stays";
  EXPECT_EQ((*pod)["spec"]["schedulerName"], "neuron-scheduler");
  EXPECT_EQ(writer.dropped(), 0U);
}

TEST(CourtesyWriter, AServerThatNeverAnswersDropsTheOldestAndStopsSoon) {
  // A listening socket nobody accepts on: connecting works, no reply ever comes.
  UniqueFd silent(::socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_TRUE(silent);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(silent.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(silent.get(), 64), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::getsockname(silent.get(), reinterpret_cast<sockaddr*>(&address), &length), 0);
  kube::KubeConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  const auto started = std::chrono::steady_clock::now();
  {
    CourtesyWriter poster(config, 4);
    for (int i = 0; i < 20; ++i)
      poster.post("ml", podEvent("p"), "ml/p", "NeuronAllocated");
    EXPECT_GE(poster.dropped(), 15U);
    EXPECT_LE(poster.dropped(), 16U);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 1s) << "post() blocked";
  }
  // One call in flight (3 s timeout) and at most one more started before the 3 s drain ends.
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s) << "stopping waited too long";
}

}  // namespace
}  // namespace torus::extender
