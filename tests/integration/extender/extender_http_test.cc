// neuron-scheduler-extender as kube-scheduler meets it: the binary on a simulated cluster, real
// HTTP on loopback, the exact JSON kube-scheduler sends (captured), and bad input of every kind —
// after each of which the server still answers the next good request.
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "common/base/unique_fd.h"
#include "tests/integration/loopback_socket.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

std::string capture(const std::string& name) {
  return *readSmallFile(std::string(TORUS_SOURCE_DIR) + "/tests/fixtures/captures/" + name,
                        1 << 20);
}

// The captured requests name nodes fake-trn-node-1/2; point them at the simulated cluster's.
std::string onSimulatedNodes(std::string body) {
  for (const auto& [from, to] : {std::pair{"fake-trn-node-1", "sim-trn1.32xlarge-0"},
                                 std::pair{"fake-trn-node-2", "sim-trn1.32xlarge-1"}}) {
    for (std::size_t at = body.find(from); at != std::string::npos; at = body.find(from, at)) {
      body.replace(at, std::strlen(from), to);
    }
  }
  return body;
}

// The verbs as kube-scheduler's captured requests exercise them, every fitting node passing
// filter (--choose-in-filter=false; ChoosingInFilter below is the default).
class ExtenderBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    extender_ = std::make_unique<BackgroundProcess>(std::vector<std::string>{
        binaryPath("neuron-scheduler-extender"),
        "--simulate-cluster=trn1.32xlarge:2,inf2.48xlarge:1", "--listen=127.0.0.1:0",
        "--url-prefix=/neuron", "--max-body-mib=8", "--choose-in-filter=false"});
    const auto log = extender_->waitForStderr("\"serving\"", 10s);
    ASSERT_TRUE(log.has_value()) << extender_->stderrText();
    port_ = loggedPort(*log, "\"serving\"");
    ASSERT_GT(port_, 0);
  }
  void TearDown() override {
    extender_->signal(SIGTERM);
    EXPECT_EQ(extender_->waitExit(10s), std::optional<int>(0));
  }
  json post(const std::string& verb, const std::string& body) {
    const auto reply = httpPost(port_, "/neuron/" + verb, body);
    EXPECT_TRUE(reply.has_value());
    EXPECT_EQ(reply->substr(0, 3), "200") << *reply;
    return json::parse(reply->substr(4), nullptr, false);
  }
  std::unique_ptr<BackgroundProcess> extender_;
  int port_ = 0;
};

TEST_F(ExtenderBinaryTest, FilterPrioritizeBindWithCapturedRequests) {
  const json filtered =
      post("filter", onSimulatedNodes(capture("nodecachecapable-filter.request.json")));
  EXPECT_EQ(filtered["NodeNames"], json({"sim-trn1.32xlarge-0", "sim-trn1.32xlarge-1"}));
  EXPECT_EQ(filtered["Error"], "");
  const json scores =
      post("prioritize", onSimulatedNodes(capture("nodecachecapable-prioritize.request.json")));
  ASSERT_EQ(scores.size(), 2U);
  EXPECT_EQ(scores[0]["Host"], "sim-trn1.32xlarge-0");
  // Bind the pod the filter saw (same UID), twice: the retry gets the same answer.
  const json request = json::parse(capture("nodecachecapable-filter.request.json"));
  const json binding = {{"PodName", request["Pod"]["metadata"]["name"]},
                        {"PodNamespace", "default"},
                        {"PodUID", request["Pod"]["metadata"]["uid"]},
                        {"Node", "sim-trn1.32xlarge-1"}};
  EXPECT_EQ(post("bind", binding.dump())["Error"], "");
  EXPECT_EQ(post("bind", binding.dump())["Error"], "");
  const auto metrics = httpGet(port_, "/metrics");
  ASSERT_TRUE(metrics.has_value());
  EXPECT_NE(metrics->find("torus_extender_requests_total{verb=\"bind\",result=\"ok\"} 2"),
            std::string::npos)
      << *metrics;
}

// By default a pod that states no scoring preference passes filter on the one node the extender
// chooses (so kube-scheduler skips prioritize), and only a bind there is accepted; a pod with a
// preferred node affinity keeps every fitting node for kube-scheduler's scoring.
TEST(ExtenderChoosingInFilter, OneNodeForAPodWithoutPreferencesEveryNodeForOneWithThem) {
  BackgroundProcess extender({binaryPath("neuron-scheduler-extender"),
                              "--simulate-cluster=trn1.32xlarge:2", "--listen=127.0.0.1:0"});
  const auto log = extender.waitForStderr("\"serving\"", 10s);
  ASSERT_TRUE(log.has_value()) << extender.stderrText();
  const int port = loggedPort(*log, "\"serving\"");
  const auto post = [&](const std::string& verb, const json& body) {
    const auto reply = httpPost(port, "/" + verb, body.dump());
    EXPECT_TRUE(reply.has_value() && reply->substr(0, 3) == "200") << reply.value_or("");
    return reply ? json::parse(reply->substr(4), nullptr, false) : json();
  };
  json request = json::parse(onSimulatedNodes(capture("nodecachecapable-filter.request.json")));
  const json& pod = request["Pod"];
  json binding = {{"PodName", pod["metadata"]["name"]},
                  {"PodNamespace", "default"},
                  {"PodUID", pod["metadata"]["uid"]},
                  {"Node", "sim-trn1.32xlarge-1"}};
  const json chosen = post("filter", request);
  ASSERT_EQ(chosen["NodeNames"], json({"sim-trn1.32xlarge-0"})) << chosen.dump();
  EXPECT_NE(post("bind", binding)["Error"].get<std::string>().find("did not pass that node"),
            std::string::npos);
  binding["Node"] = "sim-trn1.32xlarge-0";
  EXPECT_EQ(post("bind", binding)["Error"], "");

  request["Pod"]["metadata"]["uid"] = "uid-of-a-pod-with-a-preference";
  request["Pod"]["spec"]["affinity"]["nodeAffinity"]
         ["preferredDuringSchedulingIgnoredDuringExecution"] =
             json::array({{{"weight", 10},
                           {"preference",
                            {{"matchExpressions",
                              {{{"key", "zone"}, {"operator", "In"}, {"values", {"a"}}}}}}}}});
  EXPECT_EQ(post("filter", request)["NodeNames"],
            json({"sim-trn1.32xlarge-0", "sim-trn1.32xlarge-1"}));
  extender.signal(SIGTERM);
  EXPECT_EQ(extender.waitExit(10s), std::optional<int>(0));
}

// Idle connections beyond the server's cap (200) are cut, and /metrics counts each cut by reason.
TEST_F(ExtenderBinaryTest, ConnectionsCutOverTheCapAreCountedInMetrics) {
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 230; ++i)
    idle.push_back(connectLoopback(port_));
  const std::string series = "torus_http_connections_cut_total{reason=\"cap\"} ";
  std::string last;
  const bool counted = eventually(
      [&] {
        last = httpGet(port_, "/metrics").value_or("");
        const std::size_t at = last.find(series);
        return at != std::string::npos && std::stod(last.substr(at + series.size())) >= 25;
      },
      5s);
  EXPECT_TRUE(counted) << last;
}

TEST_F(ExtenderBinaryTest, FullNodeListModeReturnsNodes) {
  const json filtered = post("filter", onSimulatedNodes(capture("filter.request.json")));
  EXPECT_TRUE(filtered["NodeNames"].is_null());
  EXPECT_EQ(filtered["Nodes"]["items"].size(), 2U);
}

TEST_F(ExtenderBinaryTest, BadInputGetsAClearErrorAndTheServerKeepsServing) {
  const std::string good = onSimulatedNodes(capture("nodecachecapable-filter.request.json"));
  const std::pair<std::string, std::string> cases[] = {
      {"{not json", "request body: not valid JSON"},
      {R"({"Pod":null,"NodeNames":[]})", "Pod: missing"},
      {R"({"Pod":{"metadata":{"name":"p"},"spec":{}},"NodeNames":{"a":1}})",
       "NodeNames: expected a list, got object"},
      {R"({"Pod":{"metadata":{"name":"p"},"spec":{"containers":[{"resources":{"limits":{"aws.amazon.com/neuron":"-1"}}}]}},"NodeNames":[]})",
       "expected 0..4096, got \"-1\""},
      // Regression: 50,000 nested brackets in the full-Node form overflowed the stack (SIGSEGV).
      {R"({"Pod":{"metadata":{"name":"d"},"spec":{}},"Nodes":{"items":[],"x":)" +
           std::string(50000, '[') + std::string(50000, ']') + "}}",
       "request body: nests deeper than 100 levels"},
      // Regression: a number beyond a double, and invalid UTF-8, were HTTP 500s.
      {R"({"Pod":{"metadata":{"name":"p"},"spec":{}},"NodeNames":[1e999]})",
       "request body: not valid JSON"},
      {"{\"Pod\":{\"metadata\":{\"name\":\"\xff\"}}}", "request body: not valid JSON"},
  };
  for (const auto& [body, message] : cases) {
    const json reply = post("filter", body);
    EXPECT_NE(reply["Error"].get<std::string>().find(message), std::string::npos) << reply.dump();
    EXPECT_EQ(post("filter", good)["NodeNames"].size(), 2U);
  }
  EXPECT_NE(
      post("bind", R"({"PodName":"x","PodNamespace":"d","PodUID":"nope","Node":"n"})")["Error"]
          .get<std::string>()
          .find("filter has not passed the pod"),
      std::string::npos);
  const std::string huge(50 * 1024 * 1024, ' ');
  const auto refused = httpPost(port_, "/neuron/filter", huge);
  if (refused) {
    EXPECT_EQ(refused->substr(0, 3), "413");
  }
  EXPECT_EQ(post("filter", good)["NodeNames"].size(), 2U);
  // No body and no Content-Length (`curl -X POST`): answered at once, not after a read timeout.
  const auto bodiless = httpPostNoBody(port_, "/neuron/filter");
  ASSERT_TRUE(bodiless.has_value()) << "no answer to a POST without Content-Length";
  EXPECT_NE(bodiless->find("request body: empty"), std::string::npos) << *bodiless;
  EXPECT_EQ(httpPostNoBody(port_, "/neuron/nothing-here").value_or("").substr(0, 3), "404");
  EXPECT_EQ(post("filter", good)["NodeNames"].size(), 2U);
  EXPECT_EQ(httpGet(port_, "/healthz"), std::optional<std::string>("200 ok\n"));
}

TEST(ExtenderBinary, BadFlagsExitTwoWithTheReason) {
  const ProcessResult bad = runProcess({binaryPath("neuron-scheduler-extender"),
                                        "--simulate-cluster=trn9.huge:3", "--listen=127.0.0.1:0"});
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_NE(bad.err.find("expected TYPE:COUNT with a catalog instance type"), std::string::npos)
      << bad.err;
  const ProcessResult help = runProcess({binaryPath("neuron-scheduler-extender"), "--help"});
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_NE(help.out.find("--simulate-cluster=TYPE:N,..."), std::string::npos);
}

}  // namespace
}  // namespace torus::testing

namespace torus::testing {
namespace {

TEST(ExtenderBinary, ServesHttpsWithTheGivenCertificate) {
  auto dir = TempDir::create("extender-tls");
  ASSERT_TRUE(dir.ok());
  const std::string cert = (dir->path() / "tls.crt").string();
  const std::string key = (dir->path() / "tls.key").string();
  const ProcessResult made =
      runProcess({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                  "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", cert});
  ASSERT_EQ(made.exitCode, 0) << made.err;
  BackgroundProcess extender({binaryPath("neuron-scheduler-extender"),
                              "--simulate-cluster=inf2.xlarge:1", "--listen=127.0.0.1:0",
                              "--tls-cert-file=" + cert, "--tls-key-file=" + key});
  const auto log = extender.waitForStderr("\"serving\"", 10s);
  ASSERT_TRUE(log.has_value()) << extender.stderrText();
  EXPECT_NE(log->find("tls=true"), std::string::npos);
  const int port = loggedPort(*log, "\"serving\"");
  const ProcessResult https =
      runProcess({"/usr/bin/curl", "-sS", "--max-time", "5", "--cacert", cert,
                  "https://127.0.0.1:" + std::to_string(port) + "/healthz"});
  EXPECT_EQ(https.exitCode, 0) << https.err;
  EXPECT_EQ(https.out, "ok\n");
  extender.signal(SIGTERM);
  EXPECT_EQ(extender.waitExit(10s), std::optional<int>(0));
  const ProcessResult missingKey = runProcess(
      {binaryPath("neuron-scheduler-extender"), "--listen=127.0.0.1:0", "--tls-cert-file=" + cert});
  EXPECT_EQ(missingKey.exitCode, 2);
  EXPECT_NE(missingKey.err.find("TLS needs both a certificate file and a key file"),
            std::string::npos)
      << missingKey.err;
}

// kube-scheduler's extenders[].tlsConfig presents a client certificate; with --tls-client-ca-file
// nothing else gets past the handshake. Probes and Prometheus present none, so --health-listen
// serves them apart in plain HTTP.
TEST(ExtenderBinary, MutualTlsAdmitsOnlyClientsWithACertificateOfItsAuthority) {
  auto dir = TempDir::create("extender-mtls");
  ASSERT_TRUE(dir.ok());
  const auto selfSigned = [&](const std::string& name) {
    const std::string base = (dir->path() / name).string();
    const ProcessResult made =
        runProcess({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days",
                    "1", "-subj", "/CN=" + name, "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", base + ".key", "-out", base + ".crt"});
    EXPECT_EQ(made.exitCode, 0) << made.err;
    return base;
  };
  const std::string server = selfSigned("server");
  const std::string scheduler = selfSigned("scheduler");  // its own authority
  const std::string stranger = selfSigned("stranger");
  BackgroundProcess extender(
      {binaryPath("neuron-scheduler-extender"), "--simulate-cluster=inf2.xlarge:1",
       "--listen=127.0.0.1:0", "--health-listen=127.0.0.1:0", "--tls-cert-file=" + server + ".crt",
       "--tls-key-file=" + server + ".key", "--tls-client-ca-file=" + scheduler + ".crt"});
  const auto log = extender.waitForStderr("\"serving\"", 10s);
  ASSERT_TRUE(log.has_value()) << extender.stderrText();
  EXPECT_NE(log->find("client_certificates=true"), std::string::npos) << *log;
  const std::string url = "https://127.0.0.1:" + std::to_string(loggedPort(*log, "\"serving\""));
  const auto curl = [&](std::vector<std::string> args) {
    std::vector<std::string> command{"/usr/bin/curl", "-sS",          "--max-time", "5",
                                     "--cacert",      server + ".crt"};
    command.insert(command.end(), args.begin(), args.end());
    return runProcess(command);
  };
  const std::string bind = R"({"PodName":"x","PodNamespace":"d","PodUID":"u","Node":"n"})";
  const ProcessResult withCertificate =
      curl({"--cert", scheduler + ".crt", "--key", scheduler + ".key", "-H",
            "Content-Type: application/json", "--data-binary", bind, url + "/bind"});
  EXPECT_EQ(withCertificate.exitCode, 0) << withCertificate.err;
  EXPECT_NE(withCertificate.out.find("\"Error\""), std::string::npos) << withCertificate.out;
  for (const auto& [what, args] :
       {std::pair<std::string, std::vector<std::string>>{"no certificate", {}},
        {"a certificate of another authority",
         {"--cert", stranger + ".crt", "--key", stranger + ".key"}}}) {
    std::vector<std::string> request = args;
    for (const std::string& part : {std::string("--data-binary"), bind, url + "/bind"})
      request.push_back(part);
    const ProcessResult refused = curl(request);
    EXPECT_NE(refused.exitCode, 0) << what << " got through: " << refused.out;
    EXPECT_EQ(refused.out, "") << what;
  }
  // Health and metrics apart, in plain HTTP.
  const auto healthLog = extender.waitForStderr("serving health and metrics", 10s);
  ASSERT_TRUE(healthLog.has_value()) << extender.stderrText();
  const int healthPort = loggedPort(*healthLog, "serving health and metrics");
  for (const char* path : {"/healthz", "/readyz", "/metrics"}) {
    const auto reply = httpGet(healthPort, path);
    ASSERT_TRUE(reply.has_value()) << path;
    EXPECT_EQ(reply->substr(0, 3), "200") << path;
  }
  extender.signal(SIGTERM);
  EXPECT_EQ(extender.waitExit(10s), std::optional<int>(0));

  const ProcessResult caWithoutTls =
      runProcess({binaryPath("neuron-scheduler-extender"), "--listen=127.0.0.1:0",
                  "--tls-client-ca-file=" + scheduler + ".crt"});
  EXPECT_EQ(caWithoutTls.exitCode, 2);
  EXPECT_NE(caWithoutTls.err.find("--tls-client-ca-file (mutual TLS) needs --tls-cert-file"),
            std::string::npos)
      << caWithoutTls.err;
}

TEST(ExtenderBinary, ConfigReferenceMatchesDocs) {
  const ProcessResult reference =
      runProcess({binaryPath("neuron-scheduler-extender"), "--print-config-reference"});
  ASSERT_EQ(reference.exitCode, 0);
  auto docs = readSmallFile(std::string(TORUS_SOURCE_DIR) + "/docs/config.md", 1 << 20);
  ASSERT_TRUE(docs.ok()) << docs.error().message;
  EXPECT_NE(docs->find(reference.out), std::string::npos)
      << "docs/config.md is out of date; regenerate the table with "
         "build/bin/neuron-scheduler-extender --print-config-reference";
}

}  // namespace
}  // namespace torus::testing
