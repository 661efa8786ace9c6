// OperatorApi's writes as the API server receives them, over real HTTP on loopback: a template
// replaced because its spec changed is deleted only as the object that was read.
#include "ultraserver-operator/kube/operator_api.h"

#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/unit/ultraserver/operator_fixtures.h"
#include "ultraserver-operator/model/operator_objects.h"

namespace torus::ultraserver {
namespace {

using nlohmann::json;

// Serves one ResourceClaimTemplate (GET, DELETE, POST) and records each DELETE's body.
class TemplateServer {
 public:
  explicit TemplateServer(json stored) : stored_(std::move(stored)) {
    const std::string one =
        R"(/apis/resource.k8s.io/v1/namespaces/ml/resourceclaimtemplates/train)";
    server_.Get(one, [this](const httplib::Request&, httplib::Response& response) {
      std::lock_guard lock(mutex_);
      response.set_content(stored_.dump(), "application/json");
    });
    server_.Delete(one, [this](const httplib::Request& request, httplib::Response& response) {
      std::lock_guard lock(mutex_);
      deletes_.push_back(request.body.empty() ? json() : json::parse(request.body));
      response.set_content(stored_.dump(), "application/json");
    });
    server_.Post("/apis/resource.k8s.io/v1/namespaces/ml/resourceclaimtemplates",
                 [](const httplib::Request& request, httplib::Response& response) {
                   response.status = 201;
                   response.set_content(request.body, "application/json");
                 });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::jthread([this] { server_.listen_after_bind(); });
  }
  ~TemplateServer() { server_.stop(); }

  kube::KubeConfig config() const {
    kube::KubeConfig config;
    config.server = "http://127.0.0.1:" + std::to_string(port_);
    return config;
  }
  std::vector<json> deletes() const {
    std::lock_guard lock(mutex_);
    return deletes_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  mutable std::mutex mutex_;
  json stored_;
  std::vector<json> deletes_;
  std::jthread thread_;  // last: joined before the members it uses go
};

TEST(UltraServerOperatorApi, TemplateReplacedOnlyAsTheObjectItRead) {
  const Workload train = workload("train", 4, 1, "");
  Workload before = train;
  before.logicalNeuronCore = 1;  // the spec it was written with
  json stored = claimTemplate(before);
  stored["metadata"]["uid"] = "uid-template-read";
  stored["metadata"]["resourceVersion"] = "7";
  TemplateServer server(stored);

  OperatorApi api(server.config(), "neuron", std::chrono::seconds(0), nullptr);
  WorkloadOutcome outcome;
  ASSERT_TRUE(api.ensureClaimTemplate(train, outcome));
  EXPECT_NE(outcome.state, WorkloadState::kFailed);

  const std::vector<json> deletes = server.deletes();
  ASSERT_EQ(deletes.size(), 1u) << "the template whose spec differs is made anew";
  ASSERT_TRUE(deletes[0].is_object()) << "deleted without DeleteOptions: no UID precondition";
  EXPECT_EQ(deletes[0].value("/preconditions/uid"_json_pointer, std::string()), "uid-template-read")
      << "a template of the same name made since must not be deleted: " << deletes[0].dump();
}

}  // namespace
}  // namespace torus::ultraserver
