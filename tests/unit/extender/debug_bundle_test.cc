#include "kubectl-neuron/debug_bundle.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "common/base/file_io.h"
#include "common/base/tar_archive.h"
#include "common/base/temp_dir.h"

namespace torus::kubectl_neuron {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kJwt =
    "eyJhbGciOiJSUzI1NiIsImtpZCI6IngifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.c2lnbmF0dXJl";

// Extracts `tar` with the system's tar into a fresh directory: what a user's tool makes of it.
struct Extracted {
  TempDir dir;
  std::string read(const fs::path& file) const {
    std::ifstream in(dir.path() / file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
};

Extracted extract(const std::string& tar) {
  auto dir = TempDir::create("debug-bundle");
  EXPECT_TRUE(dir.ok());
  EXPECT_TRUE(writeFile(dir->path() / "archive.tar", tar).ok());
  const std::string command =
      "tar -xf '" + (dir->path() / "archive.tar").string() + "' -C '" + dir->path().string() + "'";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  fs::remove(dir->path() / "archive.tar");
  return {std::move(*dir)};
}

TEST(TarArchive, TarReadsFilesDirectoriesAndLongPaths) {
  TarArchive tar(std::chrono::system_clock::now());
  const std::string longPath = std::string(120, 'a') + "/" + std::string(90, 'b') + ".txt";
  ASSERT_TRUE(tar.addDirectory("top").ok());
  ASSERT_TRUE(tar.addFile("top/small.txt", "hello\n").ok());
  ASSERT_TRUE(tar.addFile("top/" + longPath, std::string(1000, 'x')).ok());
  ASSERT_TRUE(tar.addFile("top/empty", "").ok());
  const Extracted out = extract(std::move(tar).finish());
  EXPECT_EQ(out.read("top/small.txt"), "hello\n");
  EXPECT_EQ(out.read("top/" + longPath), std::string(1000, 'x'));
  EXPECT_TRUE(fs::is_regular_file(out.dir.path() / "top/empty"));
}

TEST(TarArchive, RefusesPathsThatEscapeOrDoNotFit) {
  TarArchive tar(std::chrono::system_clock::now());
  for (const std::string& bad : std::vector<std::string>{"", "/etc/passwd", "a/../b", "./a", "a//b",
                                                         "a/", std::string(200, 'c')}) {
    auto added = tar.addFile(bad, "x");
    ASSERT_FALSE(added.ok()) << bad;
    EXPECT_NE(added.error().message.find("archive path"), std::string::npos);
  }
}

TEST(DebugBundle, RedactsTokensAndKeysAndNothingElse) {
  EXPECT_EQ(redactSecrets(std::string("token: ") + kJwt + " end"), "token: [redacted] end");
  EXPECT_EQ(redactSecrets("Authorization: Bearer abcdefgh12345678\n"),
            "Authorization: Bearer [redacted]\n");
  EXPECT_EQ(redactSecrets("a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE "
                          "KEY-----\nb"),
            "a\n[redacted]\nb");
  const std::string plain =
      "device 5 bearer of bad news; eyJ; -----BEGIN CERTIFICATE----- NEURON_HW_ERR=x";
  EXPECT_EQ(redactSecrets(plain), plain);
}

// What the form alone cannot tell: PEM keys wrapped in base64 (a kubeconfig's client-key-data),
// AWS access key ids, a URL's password, and any value of a key named like a credential.
TEST(DebugBundle, RedactsWrappedKeysAccessKeysUrlPasswordsAndNamedCredentials) {
  EXPECT_EQ(redactSecrets("client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=\n"),
            "client-key-data: [redacted]\n");
  EXPECT_EQ(redactSecrets("key AKIAIOSFODNN7EXAMPLE and ASIAY34FZKBOKMUTVV7A."),
            "key [redacted] and [redacted].");
  EXPECT_EQ(redactSecrets("proxy https://admin:hunter2@proxy.internal:3128/ up"),
            "proxy https://admin:[redacted]@proxy.internal:3128/ up");
  EXPECT_EQ(redactSecrets("HF_TOKEN=hf_abc123 aws_secret_access_key = wJalrXUtnFEMI/K7MDENG"),
            "HF_TOKEN=[redacted] aws_secret_access_key = [redacted]");
  EXPECT_EQ(redactSecrets(R"({"password": "p@ss w", "clientSecret":'x1'})"),
            R"({"password": "[redacted] w", "clientSecret":'[redacted]'})");
  // Words that only look alike stay.
  const std::string plain =
      "max_tokens=5 tokenizer: bpe \"secretName\": \"creds\" "
      "\"automountServiceAccountToken\": true https://example.com/a:b@c AKIA-short "
      "s3://bucket/key ASIAlowercase0000000";
  EXPECT_EQ(redactSecrets(plain), plain);
}

json podOn(const std::string& name, const std::string& secret) {
  return {{"metadata",
           {{"namespace", "ml"},
            {"name", name},
            {"uid", name + "-uid"},
            {"annotations",
             {{"kubectl.kubernetes.io/last-applied-configuration", secret},
              {"aws.amazon.com/neuron-ids", "5"}}}}},
          {"spec",
           {{"nodeName", "n1"},
            {"containers",
             json::array({{{"name", "main"},
                           {"image", "trainer"},
                           {"env", json::array({{{"name", "PASSWORD"}, {"value", secret}}})},
                           {"resources", {{"limits", {{"aws.amazon.com/neuron", "1"}}}}}}})},
            {"volumes", json::array({{{"name", "creds"}, {"secret", {{"secretName", secret}}}}})}}},
          {"status", {{"phase", "Running"}}}};
}

DebugInputs inputsWithSecrets(const std::string& secret) {
  DebugInputs inputs;
  inputs.node = "n1";
  inputs.device = 5;
  inputs.collectedAt = std::chrono::system_clock::time_point(std::chrono::seconds(1796198400));
  inputs.toolVersion = "test";
  inputs.agentPod = "kube-system/agent-x";
  inputs.agentReport = json{
      {"kind", "NeuronAgentDebugReport"},
      {"devices",
       json::array(
           {{{"index", 5},
             {"health", {{"state", "unhealthy"}}},
             {"driver",
              {{"directory", "/sys/class/neuron_device/neuron5"},
               {"files", {{"core_count", "8\n"}, {"stats/hardware/mem_ecc_uncorrected", "3\n"}}},
               {"links", {{"subsystem", "../../class/neuron_device"}}}}}}})},
      {"kernelLog",
       {{"source", "/dev/kmsg"},
        {"lines", json::array({{{"seenAt", "2026-12-02T08:00:00Z"},
                                {"device", 5},
                                {"type", "HBM_UNCORRECTABLE_ERROR"},
                                {"line", "nd5 NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR"}}})}}},
      {"allocations",
       {{"holders", json::array({{{"pod", "ml/on-5"}, {"devices", {5}}},
                                 {{"pod", "ml/on-3"}, {"devices", {3}}}})},
        {"claims", json::array()}}},
      {"metrics", std::string("torus_device_healthy 0\n# leaked ") + kJwt + "\n"}};
  inputs.agentLog = std::string("level=info msg=ready\nAuthorization: Bearer ") + secret + "\n";
  inputs.nodeObject =
      json{{"metadata",
            {{"name", "n1"},
             {"annotations",
              {{"torus.dev/topology", "{}"},
               {"kubectl.kubernetes.io/last-applied-configuration", secret}}}}},
           {"status", {{"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  inputs.events = json{{"items", json::array()}};
  inputs.pods = json{{"items", json::array({podOn("on-5", secret), podOn("on-3", secret)})}};
  // A claim allocated chip 5 here, whose driver configuration carries the secret.
  json claim = json::parse(R"({
    "metadata": {"namespace": "ml", "name": "claim-5"},
    "spec": {"devices": {"config": [{"opaque": {"parameters": {"password": ""}}}]}},
    "status": {"allocation": {"devices": {
                 "results": [{"driver": "neuron.aws.com", "pool": "n1", "device": "neurondevice5"}],
                 "config": [{"opaque": {"parameters": {"password": ""}}}]}},
               "reservedFor": [{"resource": "pods", "name": "dra-5"}]}})");
  claim["spec"]["devices"]["config"][0]["opaque"]["parameters"]["password"] = secret;
  claim["status"]["allocation"]["devices"]["config"][0]["opaque"]["parameters"]["password"] =
      secret;
  inputs.claims = json{{"items", json::array({claim})}};
  inputs.slices = json{{"items", json::array()}};
  return inputs;
}

// What a bundle must never carry (the CLI's promise), and what it must: every part in the
// manifest and in the archive, the pods and claims on the device and no others.
TEST(DebugBundle, HoldsThePartsOfTheDeviceAndNoSecret) {
  const std::string secret = "s3cr3t-value-0123456789";
  const DebugBundle bundle = buildDebugBundle(inputsWithSecrets(secret));
  EXPECT_EQ(bundle.directory, "neuron-debug-n1-neuron5-20261202T080000Z");
  EXPECT_TRUE(bundle.complete());
  EXPECT_EQ(bundle.tar.find(secret), std::string::npos);
  EXPECT_EQ(bundle.tar.find("eyJhbGciOiJSUzI1NiIsImtpZCI6IngifQ"), std::string::npos);

  const Extracted out = extract(bundle.tar);
  const fs::path top = bundle.directory;
  const json manifest = json::parse(out.read(top / "manifest.json"));
  EXPECT_EQ(manifest["kind"], "NeuronDebugBundle");
  EXPECT_EQ(manifest["device"], 5);
  for (const json& part : manifest["parts"]) {
    ASSERT_TRUE(part.contains("file")) << part.dump();
    EXPECT_TRUE(fs::is_regular_file(out.dir.path() / top / part["file"].get<std::string>()))
        << part.dump();
  }
  EXPECT_EQ(out.read(top / "devices/neuron5/sys/stats/hardware/mem_ecc_uncorrected"), "3\n");
  EXPECT_NE(out.read(top / "agent/kernel-log.txt").find("NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR"),
            std::string::npos);
  EXPECT_EQ(out.read(top / "agent/log.txt"),
            "level=info msg=ready\nAuthorization: Bearer [redacted]\n");

  const json pods = json::parse(out.read(top / "cluster/pods.json"));
  ASSERT_EQ(pods.size(), 1U);
  EXPECT_EQ(pods[0]["metadata"]["name"], "on-5");
  EXPECT_FALSE(pods[0]["spec"]["containers"][0].contains("env"));
  EXPECT_FALSE(pods[0]["spec"].contains("volumes"));
  EXPECT_EQ(pods[0]["metadata"]["annotations"].size(), 1U);
  const json claims = json::parse(out.read(top / "cluster/claims.json"));
  ASSERT_EQ(claims.size(), 1U);
  EXPECT_EQ(claims[0]["metadata"]["name"], "claim-5");
  const json node = json::parse(out.read(top / "cluster/node.json"));
  EXPECT_EQ(node["metadata"]["annotations"].size(), 1U);
  EXPECT_EQ(node["status"]["conditions"][0]["type"], "Ready");
}

// A node's name may be 253 characters; ustar holds 155 of a path's directories. Every part of a
// bundle of a node with a long name is in the archive, under a directory named by the name's start
// and a hash of the whole.
TEST(DebugBundle, ANodeWithALongNameGetsEveryPart) {
  DebugInputs inputs = inputsWithSecrets("x");
  inputs.node = "ip-10-0-0-1." + std::string(110, 'a') + ".us-west-2.compute.internal";
  ASSERT_GT(inputs.node.size(), 125U);
  const DebugBundle bundle = buildDebugBundle(inputs);
  EXPECT_TRUE(bundle.complete()) << bundle.manifest.dump(2);
  EXPECT_LE(bundle.directory.size(), 100U) << bundle.directory;
  EXPECT_TRUE(bundle.directory.starts_with("neuron-debug-ip-10-0-0-1.aaaa")) << bundle.directory;
  const Extracted out = extract(bundle.tar);
  const json manifest = json::parse(out.read(fs::path(bundle.directory) / "manifest.json"));
  for (const json& part : manifest["parts"]) {
    ASSERT_TRUE(part.contains("file")) << part.dump();
  }
  inputs.node.back() = 'x';  // another long name with the same start
  EXPECT_NE(buildDebugBundle(inputs).directory, bundle.directory);
}

// Why a part is missing is shown and kept in the manifest: scrubbed as the parts are. A pod's
// terminated containers keep their reason and exit code, not the message the application wrote.
TEST(DebugBundle, ReasonsAndContainerMessagesCarryNoSecret) {
  DebugInputs inputs = inputsWithSecrets("x");
  inputs.agentLog =
      makeError(ErrorCode::kUnavailable, "GET pods/log: HTTP 500: token=opaque-9f8e7d");
  json pod = podOn("on-5", "x");
  pod["status"]["containerStatuses"] = json::array(
      {{{"name", "main"},
        {"lastState",
         {{"terminated",
           {{"reason", "Error"}, {"exitCode", 1}, {"message", "db password is pw-42"}}}}}}});
  inputs.pods = json{{"items", json::array({pod})}};
  const DebugBundle bundle = buildDebugBundle(inputs);
  EXPECT_EQ(bundle.tar.find("opaque-9f8e7d"), std::string::npos);
  EXPECT_EQ(bundle.tar.find("pw-42"), std::string::npos);
  EXPECT_EQ(bundle.manifest.dump().find("opaque-9f8e7d"), std::string::npos);
  const Extracted out = extract(bundle.tar);
  const json pods = json::parse(out.read(fs::path(bundle.directory) / "cluster/pods.json"));
  ASSERT_EQ(pods.size(), 1U);
  const json& terminated = pods[0]["status"]["containerStatuses"][0]["lastState"]["terminated"];
  EXPECT_EQ(terminated, json({{"reason", "Error"}, {"exitCode", 1}}));
}

TEST(DebugBundle, AMissingPartIsNamedWithItsReason) {
  DebugInputs inputs = inputsWithSecrets("x");
  inputs.agentReport = makeError(ErrorCode::kPermissionDenied, "pods/exec is forbidden");
  inputs.agentLog = makeError(ErrorCode::kUnavailable, "the log is gone");
  const DebugBundle bundle = buildDebugBundle(inputs);
  EXPECT_FALSE(bundle.complete());
  std::vector<std::string> errors;
  for (const json& part : bundle.manifest["parts"]) {
    if (part.contains("error")) errors.push_back(part["error"].get<std::string>());
  }
  EXPECT_EQ(errors, (std::vector<std::string>{"pods/exec is forbidden", "the log is gone"}));
  // No agent pod to ask: the listing's failure, or that none runs, is the reason.
  DebugInputs unlisted = inputsWithSecrets("x");
  unlisted.agentPod = "";
  unlisted.agentReport = makeError(ErrorCode::kPermissionDenied, "listing the node agent pods: no");
  EXPECT_EQ(buildDebugBundle(unlisted).manifest["parts"][0]["error"],
            "listing the node agent pods: no");
  unlisted.agentReport = json(nullptr);
  EXPECT_EQ(buildDebugBundle(unlisted).manifest["parts"][0]["error"],
            "no running Torus node agent pod on n1");
  // The pods on the device are still found through the claims the API allocated there.
  const Extracted out = extract(bundle.tar);
  const json claims = json::parse(out.read(fs::path(bundle.directory) / "cluster/claims.json"));
  EXPECT_EQ(claims.size(), 1U);
}

}  // namespace
}  // namespace torus::kubectl_neuron
