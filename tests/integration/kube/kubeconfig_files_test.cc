// Kubeconfig files found and merged as kubectl does (client-go's clientcmd loading rules):
// --kubeconfig alone, else $KUBECONFIG's list, else ~/.kube/config; the first file to name an
// entry wins it whole; relative paths start at the file that wrote them; the context's namespace.
#include "common/kube/kubeconfig_files.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "common/kube/kube_config.h"

namespace torus::kube {
namespace {

TEST(KubeconfigFiles, FoundAsKubectlFindsThem) {
  using Files = std::vector<std::filesystem::path>;
  EXPECT_EQ(kubectlKubeconfigFiles("/x/explicit", "/a:/b", "/home/me"), Files{"/x/explicit"});
  EXPECT_EQ(kubectlKubeconfigFiles("", "/a::/b:/a", "/home/me"), (Files{"/a", "/b"}));
  EXPECT_EQ(kubectlKubeconfigFiles("", "", "/home/me"), Files{"/home/me/.kube/config"});
}

TEST(KubeconfigFiles, TheFirstFileToNameAnEntryWinsItWhole) {
  auto dir = TempDir::create("kubeconfigs");
  ASSERT_TRUE(dir.ok());
  std::filesystem::create_directories(dir->path() / "team");
  const auto first = dir->path() / "team" / "config";
  const auto second = dir->path() / "eks";
  // The first names user u (a token file next to it) and the current context, but not its
  // cluster; the second has the cluster, another u (ignored whole, its tokenFile too), and a
  // context of its own with a namespace.
  ASSERT_TRUE(writeFile(dir->path() / "team" / "token", "from-first\n").ok());
  ASSERT_TRUE(writeFile(first, R"(apiVersion: v1
kind: Config
current-context: team
contexts: [{name: team, context: {cluster: k, user: u}}]
users: [{name: u, user: {tokenFile: token}}]
)")
                  .ok());
  ASSERT_TRUE(writeFile(second, R"(apiVersion: v1
kind: Config
current-context: ml
contexts:
- {name: ml, context: {cluster: k, user: u, namespace: training}}
- {name: team, context: {cluster: nowhere, user: nobody}}
clusters: [{name: k, cluster: {server: "https://k:443", certificate-authority: ca.crt}}]
users: [{name: u, user: {token: from-second, client-certificate: second.crt}}]
)")
                  .ok());
  ASSERT_EQ(
      ::setenv("KUBECONFIG",
               (first.string() + ":" + (dir->path() / "absent").string() + ":" + second.string())
                   .c_str(),
               1),
      0);
  auto team = loadKubeconfigAsKubectl("");
  ASSERT_TRUE(team.ok()) << team.error().message;
  EXPECT_EQ(team->server, "https://k:443");
  EXPECT_EQ(team->token.current(), "from-first");
  EXPECT_EQ(team->clientCertFile, "");  // the second file's u is not merged into the first's
  EXPECT_EQ(team->caFile, (dir->path() / "ca.crt").string());
  EXPECT_EQ(team->nameSpace, "");
  auto ml = loadKubeconfigAsKubectl("", "ml");
  ASSERT_TRUE(ml.ok()) << ml.error().message;
  EXPECT_EQ(ml->nameSpace, "training");
  // --kubeconfig reads only that file: its own current-context and user.
  auto explicitFile = loadKubeconfigAsKubectl(second.string());
  ASSERT_TRUE(explicitFile.ok()) << explicitFile.error().message;
  EXPECT_EQ(explicitFile->nameSpace, "training");
  EXPECT_EQ(explicitFile->token.current(), "from-second");
  EXPECT_EQ(explicitFile->clientCertFile, (dir->path() / "second.crt").string());

  auto missing = loadKubeconfigAsKubectl((dir->path() / "absent").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("absent"), std::string::npos);
  ASSERT_EQ(::setenv("KUBECONFIG", (dir->path() / "absent").c_str(), 1), 0);
  auto none = loadKubeconfigAsKubectl("");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("none of " + (dir->path() / "absent").string() + " exists"),
            std::string::npos)
      << none.error().message;
}

TEST(KubeconfigFiles, UnsupportedSettingsAreNamed) {
  auto dir = TempDir::create("kubeconfigs");
  ASSERT_TRUE(dir.ok());
  const auto path = dir->path() / "config";
  const auto load = [&](const std::string& cluster, const std::string& user) {
    EXPECT_TRUE(writeFile(path,
                          "current-context: c\ncontexts: [{name: c, context: {cluster: k, "
                          "user: u}}]\nclusters: [{name: k, cluster: {server: "
                          "\"https://k\", " +
                              cluster + "}}]\nusers: [{name: u, user: {" + user + "}}]\n")
                    .ok());
    auto config = loadKubeconfig(path);
    return config.ok() ? std::string("loaded") : config.error().message;
  };
  EXPECT_NE(load("proxy-url: \"socks5://p:1080\"", "token: t").find("only http:// proxies"),
            std::string::npos);
  EXPECT_EQ(load("proxy-url: \"http://p:3128\"", "token: t"), "loaded");
  EXPECT_NE(load("proxy-url: \"http://me:pw@p:3128\"", "token: t").find("with credentials"),
            std::string::npos);
  EXPECT_NE(load("", "username: admin, password: x").find("username is not supported"),
            std::string::npos);
  EXPECT_NE(load("", "token: t, as: someone").find("as is not supported"), std::string::npos);
  // A relative exec command is the kubeconfig's neighbour; a bare one is looked up on $PATH.
  for (const auto& [command, expected] :
       {std::pair<std::string, std::string>{"bin/get-token",
                                            (dir->path() / "bin/get-token").string()},
        {"aws", "aws"}}) {
    ASSERT_EQ(load("", "exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: " +
                           command + "}"),
              "loaded");
    EXPECT_EQ(loadKubeconfig(path)->exec->plugin().command, expected);
  }
}

}  // namespace
}  // namespace torus::kube
