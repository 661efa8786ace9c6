// The Kubernetes client against an API-server stand-in speaking the REST wire format over real
// HTTP on loopback: auth header, errors with the server's message, merge-patch content type,
// create, and watch streams (events, 410 Gone), plus kubeconfig and in-cluster loading.
#include "common/kube/kube_client.h"

#include <filesystem>
#include <mutex>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "common/kube/kube_client_pool.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::kube {
namespace {

using nlohmann::json;

class FakeApiServer {
 public:
  FakeApiServer() {
    server_.Get(
        "/api/v1/nodes/n1", [this](const httplib::Request& request, httplib::Response& response) {
          lastAuthorization_ = request.get_header_value("Authorization");
          std::lock_guard lock(mutex_);
          clientPorts_.push_back(request.remote_port);
          response.set_content(R"({"kind":"Node","metadata":{"name":"n1"}})", "application/json");
        });
    // Accepts only the token currently in `validToken_`, as an API server does after rotation.
    server_.Get("/api/v1/nodes/rotating",
                [this](const httplib::Request& request, httplib::Response& response) {
                  std::lock_guard lock(mutex_);
                  ++rotatingCalls_;
                  if (request.get_header_value("Authorization") != "Bearer " + validToken_) {
                    response.status = 401;
                    response.set_content(R"({"kind":"Status","message":"Unauthorized","code":401})",
                                         "application/json");
                    return;
                  }
                  response.set_content(R"({"kind":"Node"})", "application/json");
                });
    server_.Get("/api/v1/nodes/missing", [](const httplib::Request&, httplib::Response& response) {
      response.status = 404;
      response.set_content(
          R"({"kind":"Status","message":"nodes \"missing\" not found","code":404})",
          "application/json");
    });
    server_.Patch("/api/v1/namespaces/default/pods/p",
                  [this](const httplib::Request& request, httplib::Response& response) {
                    lastContentType_ = request.get_header_value("Content-Type");
                    lastBody_ = request.body;
                    response.set_content(R"({"kind":"Pod"})", "application/json");
                  });
    server_.Post("/api/v1/namespaces/default/pods/p/binding",
                 [this](const httplib::Request& request, httplib::Response& response) {
                   lastBody_ = request.body;
                   response.status = 201;
                   response.set_content(R"({"kind":"Status","status":"Success"})",
                                        "application/json");
                 });
    server_.Get("/api/v1/pods", [](const httplib::Request& request, httplib::Response& response) {
      if (request.get_param_value("resourceVersion") == "2") {  // a Status with a bad code
        response.set_content(
            "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":\"410\"}}\n",
            "application/json");
        return;
      }
      if (request.get_param_value("resourceVersion") == "1") {
        response.set_content(
            "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"message\":\"too "
            "old "
            "resource version: 1 (500)\"}}\n",
            "application/json");
        return;
      }
      response.set_content(
          "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"
          "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n\n"
          "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n",
          "application/json");
    });
    // Answers after 1.5 s: longer than a client that waits under a second should.
    server_.Get("/api/v1/nodes/slow", [](const httplib::Request&, httplib::Response& response) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      response.set_content(R"({"kind":"Node"})", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::jthread([this] { server_.listen_after_bind(); });
    while (!server_.is_running())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeApiServer() { server_.stop(); }

  KubeConfig config() const {
    KubeConfig config;
    config.server = "http://127.0.0.1:" + std::to_string(port_);
    config.token = BearerToken::fixed("secret-token");
    return config;
  }

  httplib::Server server_;
  int port_ = 0;
  std::jthread thread_;
  std::mutex mutex_;
  std::string validToken_;
  int rotatingCalls_ = 0;
  std::vector<int> clientPorts_;  // the client's source port of each /api/v1/nodes/n1 request
  std::string lastAuthorization_;
  std::string lastContentType_;
  std::string lastBody_;
};

TEST(KubeClient, GetSendsTheTokenAndErrorsCarryTheServersMessage) {
  FakeApiServer api;
  KubeClient client(api.config());
  auto node = client.get("/api/v1/nodes/n1");
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ((*node)["metadata"]["name"], "n1");
  EXPECT_EQ(api.lastAuthorization_, "Bearer secret-token");
  auto missing = client.get("/api/v1/nodes/missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(missing.error().message,
            "GET /api/v1/nodes/missing: HTTP 404: nodes \"missing\" not found");
}

TEST(KubeClient, MergePatchSetsOneAnnotationAndCreatePosts) {
  FakeApiServer api;
  KubeClient client(api.config());
  ASSERT_TRUE(client
                  .mergePatch("/api/v1/namespaces/default/pods/p",
                              annotationPatch("AWS_NEURON_IDS", "0,1,2,3"))
                  .ok());
  EXPECT_EQ(api.lastContentType_, "application/merge-patch+json");
  EXPECT_EQ(json::parse(api.lastBody_),
            json::parse(R"({"metadata":{"annotations":{"AWS_NEURON_IDS":"0,1,2,3"}}})"));
  EXPECT_EQ(json::parse(annotationPatch("X", std::nullopt).dump()),
            json::parse(R"({"metadata":{"annotations":{"X":null}}})"));
  const json binding = {{"apiVersion", "v1"},
                        {"kind", "Binding"},
                        {"metadata", {{"name", "p"}}},
                        {"target", {{"kind", "Node"}, {"name", "n1"}}}};
  ASSERT_TRUE(client.create("/api/v1/namespaces/default/pods/p/binding", binding).ok());
  EXPECT_EQ(json::parse(api.lastBody_)["target"]["name"], "n1");
}

TEST(KubeClient, WatchDeliversEventsAndReportsGone) {
  FakeApiServer api;
  KubeClient client(api.config());
  std::vector<std::string> types;
  auto watched = client.watch("/api/v1/pods", "7", [&](const WatchEvent& event) {
    types.push_back(event.type);
    EXPECT_EQ((*event.object)["metadata"]["name"], "a");
  });
  ASSERT_TRUE(watched.ok()) << watched.error().message;
  EXPECT_EQ(types, (std::vector<std::string>{"ADDED", "MODIFIED", "DELETED"}));
  auto gone = client.watch("/api/v1/pods", "1", [](const WatchEvent&) {});
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(gone.error().message.find("too old resource version"), std::string::npos);
  // A wrong-typed code is an error to report, not an exception in the watch thread.
  auto garbled = client.watch("/api/v1/pods", "2", [](const WatchEvent&) {});
  ASSERT_FALSE(garbled.ok());
  EXPECT_NE(garbled.error().message.find("HTTP 500"), std::string::npos) << garbled.error().message;
}

TEST(KubeClient, AnUnreachableServerIsUnavailable) {
  KubeConfig config;
  config.server = "http://127.0.0.1:1";
  KubeClient client(config, std::chrono::seconds(2));
  auto reply = client.get("/api/v1/nodes");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(reply.error().message.find("cannot connect to http://127.0.0.1:1"), std::string::npos)
      << reply.error().message;
}

// A timeout under a second (a lease's renew deadline, a CLI's --timeout) is that long: it was
// once cut to whole seconds, zero, and every call failed at once.
TEST(KubeClient, ATimeoutUnderASecondIsKeptNotRoundedToZero) {
  FakeApiServer api;
  KubeClient client(api.config(), std::chrono::milliseconds(500));
  auto node = client.get("/api/v1/nodes/n1");
  ASSERT_TRUE(node.ok()) << node.error().message;
  const auto started = std::chrono::steady_clock::now();
  auto slow = client.get("/api/v1/nodes/slow");
  const auto waited = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(slow.error().code, ErrorCode::kUnavailable) << slow.error().message;
  EXPECT_GE(waited, std::chrono::milliseconds(400)) << "it waited for the reply";
  EXPECT_LT(waited, std::chrono::milliseconds(1400)) << "and no longer than its timeout";
}

// A server whose certificate the kubeconfig's authority did not sign: the error says so, and the
// same client setup with the right authority gets through.
TEST(KubeClient, AnUntrustedCertificateIsNamedAsSuch) {
  auto dir = TempDir::create("kube-tls");
  ASSERT_TRUE(dir.ok());
  const auto selfSigned = [&](const std::string& name) {
    const std::string base = (dir->path() / name).string();
    const auto made = testing::runProcess(
        {"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
         "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", base + ".key",
         "-out", base + ".crt"});
    EXPECT_EQ(made.exitCode, 0) << made.err;
    return base;
  };
  const std::string server = selfSigned("server");
  const std::string stranger = selfSigned("stranger");
  httplib::SSLServer tls((server + ".crt").c_str(), (server + ".key").c_str());
  ASSERT_TRUE(tls.is_valid());
  tls.Get("/api/v1/nodes", [](const httplib::Request&, httplib::Response& response) {
    response.set_content(R"({"kind":"NodeList","items":[]})", "application/json");
  });
  const int port = tls.bind_to_any_port("127.0.0.1");
  std::jthread serving([&] { tls.listen_after_bind(); });
  while (!tls.is_running())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));

  KubeConfig config;
  config.server = "https://127.0.0.1:" + std::to_string(port);
  config.caFile = stranger + ".crt";
  auto refused = KubeClient(config, std::chrono::seconds(5)).get("/api/v1/nodes");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find(
                "certificate is not signed by the kubeconfig's certificate authority"),
            std::string::npos)
      << refused.error().message;
  config.caFile = server + ".crt";
  auto trusted = KubeClient(config, std::chrono::seconds(5)).get("/api/v1/nodes");
  EXPECT_TRUE(trusted.ok()) << trusted.error().message;
  tls.stop();
}

TEST(KubeConfigLoading, ReadsTheCurrentContextAndMaterialisesInlineData) {
  auto dir = TempDir::create("kubeconfig");
  ASSERT_TRUE(dir.ok());
  const auto path = dir->path() / "config";
  // "LS0tCg==" is base64 for "---\n".
  ASSERT_TRUE(writeFile(path, R"(apiVersion: v1
kind: Config
current-context: prod
contexts:
  - name: prod
    context: {cluster: c1, user: u1}
  - name: other
    context: {cluster: c1, user: plugin}
clusters:
  - name: c1
    cluster: {server: "https://10.0.0.1:6443", certificate-authority-data: LS0tCg==}
users:
  - name: u1
    user: {token: abc}
  - name: plugin
    user: {auth-provider: {name: oidc}}
)")
                  .ok());
  auto config = loadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->server, "https://10.0.0.1:6443");
  EXPECT_EQ(config->token.current(), "abc");
  EXPECT_EQ(*readSmallFile(config->caFile), "---\n");
  auto plugin = loadKubeconfig(path, "other");
  ASSERT_FALSE(plugin.ok());
  EXPECT_NE(plugin.error().message.find("uses an auth-provider plugin (\"oidc\"), which kubectl"),
            std::string::npos)
      << plugin.error().message;
  EXPECT_NE(loadKubeconfig(path, "nope").error().message.find("context \"nope\" not found"),
            std::string::npos);
  EXPECT_FALSE(loadKubeconfig(dir->path() / "absent").ok());
  EXPECT_FALSE(decodeBase64("not base64!").ok());
}

// A TLS handshake per call was most of a bind's cost: calls on one client share a connection,
// and a pool hands the same kept-alive client to the next borrower.
TEST(KubeClient, ReusesItsConnectionAndThePoolReusesClients) {
  FakeApiServer api;
  KubeClient client(api.config());
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(client.get("/api/v1/nodes/n1").ok());
  KubeClientPool pool(api.config(), 1);
  {
    auto first = pool.acquire();
    ASSERT_TRUE(first->get("/api/v1/nodes/n1").ok());
    auto second = pool.acquire();  // borrowed at the same time: a second connection
    ASSERT_TRUE(second->get("/api/v1/nodes/n1").ok());
  }
  EXPECT_EQ(pool.idleCount(), 1u);  // only one is kept
  ASSERT_TRUE(pool.acquire()->get("/api/v1/nodes/n1").ok());
  std::lock_guard lock(api.mutex_);
  ASSERT_EQ(api.clientPorts_.size(), 6u);
  EXPECT_EQ(api.clientPorts_[0], api.clientPorts_[1]);
  EXPECT_EQ(api.clientPorts_[1], api.clientPorts_[2]);
  EXPECT_NE(api.clientPorts_[3], api.clientPorts_[4]);
  // The kept client is one of the two used before (the second one, given back last is dropped
  // or kept; either way its connection is reused, not a new one).
  EXPECT_TRUE(api.clientPorts_[5] == api.clientPorts_[3] ||
              api.clientPorts_[5] == api.clientPorts_[4]);
}

// Projected service-account tokens and kubeconfig tokenFiles rotate under a running process.
TEST(KubeClient, FollowsARotatedTokenFile) {
  FakeApiServer api;
  auto dir = TempDir::create("token");
  ASSERT_TRUE(dir.ok());
  const auto tokenFile = dir->path() / "token";
  ASSERT_TRUE(writeFile(tokenFile, "token-one\n").ok());
  auto token = BearerToken::fromFile(tokenFile);
  ASSERT_TRUE(token.ok()) << token.error().message;
  KubeConfig config = api.config();
  config.token = *token;
  KubeClient client(config);
  api.validToken_ = "token-one";
  ASSERT_TRUE(client.get("/api/v1/nodes/rotating").ok());

  // Rotation: a new file (new inode) with a new token, the old one no longer accepted.
  ASSERT_TRUE(writeFile(dir->path() / "next", "token-two").ok());
  std::filesystem::rename(dir->path() / "next", tokenFile);
  api.validToken_ = "token-two";
  auto rotated = client.get("/api/v1/nodes/rotating");
  EXPECT_TRUE(rotated.ok()) << rotated.error().message;

  // Rewritten in place with the same size and modification time: nothing on disk looks changed,
  // so the first try sends the old token; the 401 makes the client re-read and try once more.
  struct stat before {};
  ASSERT_EQ(::stat(tokenFile.c_str(), &before), 0);
  ASSERT_TRUE(writeFile(tokenFile, "token-3x3").ok());
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, tokenFile.c_str(), times, 0), 0);
  api.validToken_ = "token-3x3";
  api.rotatingCalls_ = 0;
  auto retried = client.get("/api/v1/nodes/rotating");
  EXPECT_TRUE(retried.ok()) << retried.error().message;
  EXPECT_EQ(api.rotatingCalls_, 2);

  // A token the server refuses for good is reported, after exactly one retry.
  api.validToken_ = "revoked-everything";
  api.rotatingCalls_ = 0;
  auto refused = client.get("/api/v1/nodes/rotating");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(api.rotatingCalls_, 2);

  // A token file that disappears keeps the last good token and says so once.
  std::filesystem::remove(tokenFile);
  api.validToken_ = "token-3x3";
  EXPECT_TRUE(client.get("/api/v1/nodes/rotating").ok());
}

TEST(KubeConfigLoading, ReadsTokenFileAndRefusesAnEmptyOne) {
  auto dir = TempDir::create("kubeconfig");
  ASSERT_TRUE(dir.ok());
  const auto path = dir->path() / "config";
  ASSERT_TRUE(writeFile(dir->path() / "token", "from-file\n").ok());
  ASSERT_TRUE(writeFile(dir->path() / "empty", "\n").ok());
  ASSERT_TRUE(writeFile(path,
                        "current-context: a\ncontexts:\n"
                        "  - {name: a, context: {cluster: c, user: file}}\n"
                        "  - {name: b, context: {cluster: c, user: empty}}\n"
                        "clusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\n"
                        "users:\n"
                        "  - {name: file, user: {tokenFile: " +
                            (dir->path() / "token").string() +
                            "}}\n"
                            "  - {name: empty, user: {tokenFile: " +
                            (dir->path() / "empty").string() + "}}\n")
                  .ok());
  auto config = loadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->token.current(), "from-file");
  EXPECT_EQ(config->token.file(), dir->path() / "token");
  auto empty = loadKubeconfig(path, "b");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("is empty"), std::string::npos) << empty.error().message;
}

// Regression: a kubeconfig that is a YAML scalar (say --kubeconfig=/etc/hostname) aborted three
// binaries with an uncaught yaml-cpp exception.
TEST(KubeConfigLoading, AnythingButAKubeconfigIsAClearError) {
  auto dir = TempDir::create("kubeconfig");
  ASSERT_TRUE(dir.ok());
  const std::pair<const char*, const char*> cases[] = {
      {"my-hostname\n", "expected a kubeconfig (a YAML mapping)"},
      {"- a\n- b\n", "expected a kubeconfig (a YAML mapping)"},
      {"current-context: a\ncontexts: [7, [x], {name: a, context: 5}]\n",
       "context \"a\" not found"},
      {"current-context: [a]\n", "no current-context and no context given"},
      {"current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\nclusters: [c]\n",
       "cluster \"c\" not found"},
      // Found by tests/fuzz: a named entry without its body threw from yaml-cpp.
      {"current-context: a\ncontexts: [{name: a, contex: {cluster: c}}]\n",
       "context \"a\" not found"},
      {"current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\nclusters: [{name: c}]\n",
       "cluster \"c\" not found"},
  };
  for (const auto& [text, message] : cases) {
    const auto path = dir->path() / "config";
    ASSERT_TRUE(writeFile(path, text).ok());
    auto config = loadKubeconfig(path);
    ASSERT_FALSE(config.ok()) << text;
    EXPECT_NE(config.error().message.find(message), std::string::npos)
        << text << " -> " << config.error().message;
  }
}

TEST(KubeConfigLoading, InClusterNeedsTheServiceEnvironment) {
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  auto config = inClusterConfig("/nonexistent");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.error().message.find("pass --kubeconfig"), std::string::npos);
}

}  // namespace
}  // namespace torus::kube
