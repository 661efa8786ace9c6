// Exec credential plugins as kubectl runs them, against an API-server stand-in over real HTTP
// that accepts one bearer token at a time: the ExecCredential handed in (KUBERNETES_EXEC_INFO,
// env, args) and read back (v1 and v1beta1), the credential kept until its expirationTimestamp
// (an injected clock, no sleeping), the plugin run again after a 401, a client certificate from
// the plugin, the cluster's proxy-url, and the errors a user sees when the plugin fails or is
// missing. What is wrong with output that is no credential: tests/unit/kube.
#include "common/kube/exec_credential.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "common/kube/kube_client.h"
#include "common/kube/kube_config.h"

namespace torus::kube {
namespace {

using nlohmann::json;
using std::chrono::system_clock;

// Answers GET /api/v1/nodes to `accepted` only, 401 to any other token.
class TokenCheckingServer {
 public:
  TokenCheckingServer() {
    server_.Get("/api/v1/nodes", [this](const httplib::Request& request, httplib::Response& reply) {
      std::lock_guard lock(mutex_);
      seen_.push_back(request.get_header_value("Authorization"));
      if (seen_.back() != "Bearer " + accepted_) {
        reply.status = 401;
        reply.set_content(R"({"kind":"Status","message":"Unauthorized","code":401})",
                          "application/json");
        return;
      }
      reply.set_content(R"({"kind":"NodeList","items":[]})", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::jthread([this] { server_.listen_after_bind(); });
    while (!server_.is_running())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~TokenCheckingServer() { server_.stop(); }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void accept(std::string token) {
    std::lock_guard lock(mutex_);
    accepted_ = std::move(token);
  }
  std::vector<std::string> seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::jthread thread_;
  std::mutex mutex_;
  std::string accepted_;
  std::vector<std::string> seen_;
};

// A plugin script in a temp dir. Each run appends its KUBERNETES_EXEC_INFO, $GREETING and
// arguments as one JSON line to runs.jsonl and prints `body` with RUN replaced by its run number.
class Plugin {
 public:
  explicit Plugin(const std::string& body, const std::string& before = "") {
    auto dir = TempDir::create("exec-plugin");
    EXPECT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(*dir));
    const std::string runs = (dir_->path() / "runs.jsonl").string();
    const std::string script = "#!/bin/sh\n" + before + "run=$(( $(cat '" + runs +
                               "' 2>/dev/null | wc -l) + 1 ))\n"
                               "printf '{\"info\":%s,\"greeting\":\"%s\",\"args\":\"%s\"}\\n' "
                               "\"$KUBERNETES_EXEC_INFO\" \"$GREETING\" \"$*\" >> '" +
                               runs +
                               "'\n"
                               "cat <<EOF | sed \"s/RUN/$run/g\"\n" +
                               body + "\nEOF\n";
    EXPECT_TRUE(writeFile(path(), script).ok());
    ::chmod(path().c_str(), 0755);
  }
  std::string path() const { return (dir_->path() / "plugin").string(); }
  std::vector<json> runs() const {
    std::vector<json> out;
    auto text = readSmallFile(dir_->path() / "runs.jsonl");
    if (!text) return out;
    for (std::size_t start = 0, end; (end = text->find('\n', start)) != std::string::npos;
         start = end + 1) {
      out.push_back(json::parse(text->substr(start, end - start)));
    }
    return out;
  }

 private:
  std::unique_ptr<TempDir> dir_;
};

ExecPluginConfig pluginConfig(const std::string& user, const std::string& version,
                              const std::string& command, const std::string& mode) {
  ExecPluginConfig config;
  config.user = user;
  config.apiVersion = "client.authentication.k8s.io/" + version;
  config.command = command;
  config.interactiveMode = mode;
  return config;
}

std::string credential(const std::string& version, const std::string& status) {
  return R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/)" + version +
         R"(","status":)" + status + "}";
}

// A kubeconfig whose user runs `command`; `execExtra` adds lines to its exec stanza.
std::filesystem::path writeKubeconfig(const TempDir& dir, const std::string& server,
                                      const std::string& command, const std::string& execExtra) {
  const auto path = dir.path() / "config";
  EXPECT_TRUE(writeFile(path,
                        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                        "clusters:\n- name: k\n  cluster:\n    server: " +
                            server +
                            "\n"
                            "    extensions:\n    - name: client.authentication.k8s.io/exec\n"
                            "      extension: {audience: torus}\n"
                            "users:\n- name: u\n  user:\n    exec:\n      command: " +
                            command + "\n" + execExtra)
                  .ok());
  return path;
}

TEST(ExecCredential, V1PluginGetsItsSpecEnvAndArgsAndItsTokenIsSent) {
  TokenCheckingServer server;
  server.accept("token-1");
  Plugin plugin(credential("v1", R"({"token":"token-RUN"})"));
  auto dir = TempDir::create("kubeconfig");
  ASSERT_TRUE(dir.ok());
  const auto path = writeKubeconfig(*dir, server.url(), plugin.path(),
                                    "      apiVersion: client.authentication.k8s.io/v1\n"
                                    "      interactiveMode: Never\n      provideClusterInfo: true\n"
                                    "      args: [eks, get-token]\n"
                                    "      env: [{name: GREETING, value: hello}]\n");
  auto config = loadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.error().message;
  KubeClient client(*config);
  auto nodes = client.get("/api/v1/nodes");
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  EXPECT_EQ(server.seen(), std::vector<std::string>{"Bearer token-1"});
  const auto runs = plugin.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["greeting"], "hello");
  EXPECT_EQ(runs[0]["args"], "eks get-token");
  const json& info = runs[0]["info"];
  EXPECT_EQ(info["kind"], "ExecCredential");
  EXPECT_EQ(info["apiVersion"], "client.authentication.k8s.io/v1");
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_EQ(info["spec"]["cluster"]["server"], server.url());
  EXPECT_EQ(info["spec"]["cluster"]["config"], json({{"audience", "torus"}}));
  // No expirationTimestamp: kept for the client's life.
  ASSERT_TRUE(client.get("/api/v1/nodes").ok());
  EXPECT_EQ(plugin.runs().size(), 1u);
}

TEST(ExecCredential, V1beta1DefaultsToIfAvailableAndV1MustNameAMode) {
  TokenCheckingServer server;
  server.accept("beta");
  Plugin plugin(credential("v1beta1", R"({"token":"beta"})"));
  auto dir = TempDir::create("kubeconfig");
  ASSERT_TRUE(dir.ok());
  auto beta =
      loadKubeconfig(writeKubeconfig(*dir, server.url(), plugin.path(),
                                     "      apiVersion: client.authentication.k8s.io/v1beta1\n"));
  ASSERT_TRUE(beta.ok()) << beta.error().message;
  auto nodes = KubeClient(*beta).get("/api/v1/nodes");
  EXPECT_TRUE(nodes.ok()) << nodes.error().message;
  // ctest's stdin is not a terminal: IfAvailable means not interactive.
  EXPECT_EQ(plugin.runs().at(0)["info"]["spec"]["interactive"], false);
  EXPECT_FALSE(plugin.runs().at(0)["info"]["spec"].contains("cluster"));

  auto v1 = loadKubeconfig(writeKubeconfig(*dir, server.url(), plugin.path(),
                                           "      apiVersion: client.authentication.k8s.io/v1\n"));
  ASSERT_FALSE(v1.ok());
  EXPECT_NE(v1.error().message.find("interactiveMode must be set"), std::string::npos)
      << v1.error().message;
  auto always = loadKubeconfig(writeKubeconfig(
      *dir, server.url(), plugin.path(),
      "      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Always\n"));
  ASSERT_FALSE(always.ok());
  EXPECT_NE(always.error().message.find("standard input is not a terminal"), std::string::npos)
      << always.error().message;
  auto old =
      loadKubeconfig(writeKubeconfig(*dir, server.url(), plugin.path(),
                                     "      apiVersion: client.authentication.k8s.io/v1alpha1\n"));
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.error().message.find("v1alpha1\" is not supported"), std::string::npos);
}

TEST(ExecCredential, KeptUntilItsExpirationTimestamp) {
  Plugin plugin(
      credential("v1", R"({"token":"t-RUN","expirationTimestamp":"2030-01-01T00:10:00Z"})"));
  const ExecPluginConfig config = pluginConfig("u", "v1", plugin.path(), "Never");
  auto now = *parseRfc3339("2030-01-01T00:00:00Z");
  auto source = ExecCredentialSource::create(config, {}, [&] { return now; });
  ASSERT_TRUE(source.ok()) << source.error().message;
  auto first = (*source)->current();
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ((*first)->token, "t-1");
  now = *parseRfc3339("2030-01-01T00:09:59Z");
  EXPECT_EQ((*(*source)->current())->token, "t-1");
  EXPECT_EQ(plugin.runs().size(), 1u);
  now = *parseRfc3339("2030-01-01T00:10:01Z");
  EXPECT_EQ((*(*source)->current())->token, "t-2");
  EXPECT_EQ(plugin.runs().size(), 2u);
}

TEST(ExecCredential, A401RunsThePluginAgainOnceAndTheRequestSucceeds) {
  TokenCheckingServer server;
  server.accept("token-2");  // the first credential was revoked
  Plugin plugin(credential("v1", R"({"token":"token-RUN"})"));
  auto dir = TempDir::create("kubeconfig");
  ASSERT_TRUE(dir.ok());
  auto config = loadKubeconfig(writeKubeconfig(
      *dir, server.url(), plugin.path(),
      "      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n"));
  ASSERT_TRUE(config.ok()) << config.error().message;
  KubeClient client(*config);
  auto nodes = client.get("/api/v1/nodes");
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  EXPECT_EQ(server.seen(), (std::vector<std::string>{"Bearer token-1", "Bearer token-2"}));
  ASSERT_TRUE(client.get("/api/v1/nodes").ok());
  EXPECT_EQ(plugin.runs().size(), 2u);
  // A credential the server never accepts: one more run, then the 401 is the caller's.
  server.accept("nothing-the-plugin-prints");
  auto refused = client.get("/api/v1/nodes");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(plugin.runs().size(), 3u);
}

TEST(ExecCredential, AFailingPluginsExitCodeAndStderrReachTheUser) {
  Plugin plugin("", "echo 'the SSO session has expired; run aws sso login' >&2\nexit 3\n");
  const ExecPluginConfig config = pluginConfig("eks-admin", "v1", plugin.path(), "Never");
  auto source = ExecCredentialSource::create(config, {});
  ASSERT_TRUE(source.ok());
  auto failed = (*source)->current();
  ASSERT_FALSE(failed.ok());
  const std::string& message = failed.error().message;
  EXPECT_NE(message.find("user \"eks-admin\""), std::string::npos) << message;
  EXPECT_NE(message.find("exited with code 3"), std::string::npos) << message;
  EXPECT_NE(message.find("the SSO session has expired; run aws sso login"), std::string::npos)
      << message;
}

TEST(ExecCredential, AMissingPluginNamesItselfAndGivesTheInstallHint) {
  ExecPluginConfig config = pluginConfig("u", "v1beta1", "torus-no-such-credential-plugin", "");
  config.installHint = "Install the AWS CLI: https://aws.amazon.com/cli/";
  auto source = ExecCredentialSource::create(config, {});
  ASSERT_TRUE(source.ok());
  auto failed = (*source)->current();
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("executable \"torus-no-such-credential-plugin\" not found"),
            std::string::npos)
      << failed.error().message;
  EXPECT_NE(failed.error().message.find("Install the AWS CLI"), std::string::npos);
}

// A plugin may hand out a client certificate instead of a token (kubelogin, some OIDC setups): the
// client presents it to a server that demands one, and a client without it is refused.
TEST(ExecCredential, AClientCertificateFromThePluginIsPresented) {
  auto dir = TempDir::create("exec-tls");
  ASSERT_TRUE(dir.ok());
  const auto selfSigned = [&](const std::string& name) {
    const std::string base = (dir->path() / name).string();
    const std::string command =
        "/usr/bin/openssl req -x509 -newkey rsa:2048 -nodes -days 1 "
        "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout " +
        base + ".key -out " + base + ".crt 2>/dev/null";
    EXPECT_EQ(std::system(command.c_str()), 0);
    return base;
  };
  const std::string server = selfSigned("server");
  const std::string user = selfSigned("user");
  // Trusts only `user`'s certificate, and requires one.
  httplib::SSLServer tls((server + ".crt").c_str(), (server + ".key").c_str(),
                         (user + ".crt").c_str());
  ASSERT_TRUE(tls.is_valid());
  tls.Get("/api/v1/nodes", [](const httplib::Request&, httplib::Response& reply) {
    reply.set_content(R"({"kind":"NodeList","items":[]})", "application/json");
  });
  const int port = tls.bind_to_any_port("127.0.0.1");
  std::jthread serving([&] { tls.listen_after_bind(); });
  while (!tls.is_running())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));

  Plugin plugin("",
                "exec python3 -c 'import json; print(json.dumps({\"apiVersion\": "
                "\"client.authentication.k8s.io/v1\", \"kind\": \"ExecCredential\", \"status\": "
                "{\"clientCertificateData\": open(\"" +
                    user +
                    ".crt\").read(), \"clientKeyData\": "
                    "open(\"" +
                    user + ".key\").read()}}))'\n");
  KubeConfig config;
  config.server = "https://127.0.0.1:" + std::to_string(port);
  config.caFile = server + ".crt";
  auto refused = KubeClient(config, std::chrono::seconds(5)).get("/api/v1/nodes");
  EXPECT_FALSE(refused.ok());
  auto source = ExecCredentialSource::create(pluginConfig("u", "v1", plugin.path(), "Never"), {});
  ASSERT_TRUE(source.ok());
  config.exec = *source;
  auto nodes = KubeClient(config, std::chrono::seconds(5)).get("/api/v1/nodes");
  EXPECT_TRUE(nodes.ok()) << nodes.error().message;
  auto credential = (*source)->current();
  ASSERT_TRUE(credential.ok());
  struct stat info {};
  ASSERT_EQ(::stat((*credential)->clientKeyFile.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  tls.stop();
}

// The kubeconfig's proxy-url: requests go to the proxy, naming the API server (absolute form),
// with the plugin's token.
TEST(ExecCredential, RequestsGoThroughTheClustersProxyUrl) {
  httplib::Server proxy;
  std::mutex mutex;
  std::vector<std::string> targets;
  proxy.set_pre_routing_handler([&](const httplib::Request& request, httplib::Response& reply) {
    std::lock_guard lock(mutex);
    targets.push_back(request.target + " " + request.get_header_value("Authorization"));
    reply.set_content(R"({"kind":"NodeList","items":[]})", "application/json");
    return httplib::Server::HandlerResponse::Handled;
  });
  const int port = proxy.bind_to_any_port("127.0.0.1");
  std::jthread serving([&] { proxy.listen_after_bind(); });
  while (!proxy.is_running())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Plugin plugin(credential("v1", R"({"token":"via-proxy"})"));
  auto dir = TempDir::create("kubeconfig");
  ASSERT_TRUE(dir.ok());
  const auto path = dir->path() / "config";
  ASSERT_TRUE(writeFile(path,
                        "current-context: c\ncontexts: [{name: c, context: {cluster: k, "
                        "user: u}}]\nclusters: [{name: k, cluster: {server: "
                        "\"http://api.invalid:6443\", proxy-url: \"http://127.0.0.1:" +
                            std::to_string(port) +
                            "\"}}]\nusers: [{name: u, user: {exec: {apiVersion: "
                            "client.authentication.k8s.io/v1, interactiveMode: Never, "
                            "command: " +
                            plugin.path() + "}}}]\n")
                  .ok());
  auto config = loadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.error().message;
  auto nodes = KubeClient(*config).get("/api/v1/nodes");
  EXPECT_TRUE(nodes.ok()) << nodes.error().message;
  proxy.stop();
  std::lock_guard lock(mutex);
  EXPECT_EQ(targets,
            std::vector<std::string>{"http://api.invalid:6443/api/v1/nodes Bearer via-proxy"});
}

}  // namespace
}  // namespace torus::kube
