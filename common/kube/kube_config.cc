#include "common/kube/kube_config.h"

#include <cstdlib>

#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include "common/base/file_io.h"
#include "common/base/strings.h"
#include "common/kube/kubeconfig_files.h"

namespace torus::kube {
namespace {

using nlohmann::json;

Error bad(const std::string& where, const std::string& why) {
  return makeError(ErrorCode::kInvalidArgument, where + ": " + why);
}

std::string scalar(const YAML::Node& node, const char* key) {
  return node && node.IsMap() && node[key] && node[key].IsScalar() ? node[key].as<std::string>("")
                                                                   : "";
}

std::vector<std::string> scalars(const YAML::Node& node, const char* key) {
  std::vector<std::string> out;
  if (!node || !node.IsMap() || !node[key] || !node[key].IsSequence()) return out;
  for (const YAML::Node& item : node[key])
    out.push_back(item.IsScalar() ? item.as<std::string>("") : "");
  return out;
}

// A cluster extension as the plugin receives it in spec.cluster.config (scalars stay strings).
json jsonOf(const YAML::Node& node) {
  if (!node || node.IsNull()) return nullptr;
  if (node.IsScalar()) return node.as<std::string>("");
  json out = node.IsSequence() ? json::array() : json::object();
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (node.IsSequence()) {
      out.push_back(jsonOf(*it));
    } else {
      out[it->first.as<std::string>("")] = jsonOf(it->second);
    }
  }
  return out;
}

// "*-data" fields hold base64 PEM; the TLS library reads files, so write them privately.
Result<std::string> materialize(KubeConfig& config, const std::string& data, const char* name) {
  auto decoded = decodeBase64(data);
  if (!decoded) return std::move(decoded).error().withContext(name);
  if (!config.materialized) {
    auto dir = TempDir::create("torus-kube");
    if (!dir) return std::move(dir).error();
    config.materialized = std::make_shared<TempDir>(std::move(*dir));
    ::chmod(config.materialized->path().c_str(), 0700);
  }
  const auto path = config.materialized->path() / name;
  TORUS_RETURN_IF_ERROR(writeFile(path, *decoded), name);
  ::chmod(path.c_str(), 0600);
  return path.string();
}

Result<ExecPluginConfig> execStanza(const YAML::Node& exec, const KubeconfigEntry& user,
                                    const std::string& userName) {
  ExecPluginConfig plugin;
  plugin.user = userName;
  plugin.apiVersion = scalar(exec, "apiVersion");
  plugin.command = scalar(exec, "command");
  // As kubectl: a command with a '/' is a path relative to the kubeconfig, a bare name is on $PATH.
  if (plugin.command.find('/') != std::string::npos) {
    plugin.command = resolvedPath(user, plugin.command);
  }
  plugin.args = scalars(exec, "args");
  if (const YAML::Node env = exec["env"]; env && env.IsSequence()) {
    for (const YAML::Node& item : env) {
      const std::string name = scalar(item, "name");
      if (name.empty()) {
        return bad("user " + quoteJsonString(userName), "exec env entry without a name");
      }
      plugin.env.emplace_back(name, scalar(item, "value"));
    }
  }
  plugin.installHint = scalar(exec, "installHint");
  plugin.interactiveMode = scalar(exec, "interactiveMode");
  plugin.provideClusterInfo = scalar(exec, "provideClusterInfo") == "true";
  return plugin;
}

ExecClusterInfo clusterInfo(const KubeConfig& config, const YAML::Node& cluster) {
  ExecClusterInfo info;
  info.server = config.server;
  info.tlsServerName = scalar(cluster, "tls-server-name");
  info.insecureSkipTlsVerify = config.insecureSkipTlsVerify;
  info.proxyUrl = config.proxyUrl;
  if (!config.caFile.empty()) {
    if (auto pem = readSmallFile(config.caFile, 1 << 20)) info.certificateAuthorityData = *pem;
  }
  if (const YAML::Node extensions = cluster["extensions"]; extensions && extensions.IsSequence()) {
    for (const YAML::Node& item : extensions) {
      if (scalar(item, "name") == "client.authentication.k8s.io/exec") {
        info.config = jsonOf(item["extension"]);
      }
    }
  }
  return info;
}

Result<void> readUser(KubeConfig& config, const KubeconfigEntry& user, const std::string& name,
                      const YAML::Node& cluster) {
  const YAML::Node& node = user.value;
  const std::string where = "user " + quoteJsonString(name);
  if (node["auth-provider"]) {
    return bad(where, "uses an auth-provider plugin (" +
                          quoteJsonString(scalar(node["auth-provider"], "name")) +
                          "), which kubectl itself dropped in 1.26; use the provider's exec "
                          "plugin (EKS: aws eks update-kubeconfig, GKE: gke-gcloud-auth-plugin, "
                          "AKS: kubelogin)");
  }
  for (const char* field : {"username", "password", "as", "as-groups", "as-uid", "as-user-extra"}) {
    if (node[field]) return bad(where, std::string(field) + " is not supported by kubectl-neuron");
  }
  if (const std::string token = scalar(node, "token"); !token.empty()) {
    config.token = BearerToken::fixed(token);
  }
  if (const std::string tokenFile = resolvedPath(user, scalar(node, "tokenFile"));
      !tokenFile.empty()) {
    auto token = BearerToken::fromFile(tokenFile);
    if (!token) return std::move(token).error().withContext(where);
    config.token = std::move(*token);
  }
  config.clientCertFile = resolvedPath(user, scalar(node, "client-certificate"));
  config.clientKeyFile = resolvedPath(user, scalar(node, "client-key"));
  for (const auto& [field, target, file] :
       {std::tuple{"client-certificate-data", &config.clientCertFile, "client.crt"},
        std::tuple{"client-key-data", &config.clientKeyFile, "client.key"}}) {
    if (const std::string data = scalar(node, field); !data.empty()) {
      auto written = materialize(config, data, file);
      if (!written) return std::move(written).error().withContext(where);
      *target = *written;
    }
  }
  if (const YAML::Node exec = node["exec"]; exec && exec.IsMap()) {
    auto plugin = execStanza(exec, user, name);
    if (!plugin) return std::move(plugin).error();
    auto source = ExecCredentialSource::create(std::move(*plugin), clusterInfo(config, cluster));
    if (!source) return std::move(source).error();
    config.exec = std::move(*source);
  }
  return okResult();
}

Result<KubeConfig> configOf(const MergedKubeconfig& merged, std::string_view context) {
  std::string files;
  for (const auto& file : merged.files) {
    if (!files.empty()) files += ':';
    files += file.string();
  }
  const std::string where = "kubeconfig " + files;
  const std::string contextName = context.empty() ? merged.currentContext : std::string(context);
  if (contextName.empty()) return bad(where, "no current-context and no context given");
  const auto ctx = merged.contexts.find(contextName);
  if (ctx == merged.contexts.end() || !ctx->second.value.IsMap()) {
    return bad(where, "context " + quoteJsonString(contextName) + " not found");
  }
  const std::string clusterName = scalar(ctx->second.value, "cluster");
  const auto cluster = merged.clusters.find(clusterName);
  if (cluster == merged.clusters.end() || !cluster->second.value.IsMap()) {
    return bad(where, "cluster " + quoteJsonString(clusterName) + " not found");
  }
  const YAML::Node& clusterNode = cluster->second.value;

  KubeConfig config;
  config.nameSpace = scalar(ctx->second.value, "namespace");
  config.server = scalar(clusterNode, "server");
  if (config.server.empty()) return bad(where, "cluster has no server");
  config.insecureSkipTlsVerify = scalar(clusterNode, "insecure-skip-tls-verify") == "true";
  config.caFile = resolvedPath(cluster->second, scalar(clusterNode, "certificate-authority"));
  if (const std::string data = scalar(clusterNode, "certificate-authority-data"); !data.empty()) {
    auto file = materialize(config, data, "ca.crt");
    if (!file) return std::move(file).error().withContext(where);
    config.caFile = *file;
  }
  config.proxyUrl = scalar(clusterNode, "proxy-url");
  if (!config.proxyUrl.empty() && config.proxyUrl.rfind("http://", 0) != 0) {
    return bad(where, "cluster " + quoteJsonString(clusterName) + ": proxy-url " +
                          quoteJsonString(config.proxyUrl) +
                          " is not supported (only http:// proxies are)");
  }
  if (config.proxyUrl.find('@') != std::string::npos) {
    return bad(where, "cluster " + quoteJsonString(clusterName) +
                          ": a proxy-url with credentials (user@) is not supported");
  }
  const std::string userName = scalar(ctx->second.value, "user");
  if (const auto user = merged.users.find(userName);
      user != merged.users.end() && user->second.value.IsMap()) {
    TORUS_RETURN_IF_ERROR(readUser(config, user->second, userName, clusterNode), where);
  }
  return config;
}

}  // namespace

Result<std::string> decodeBase64(std::string_view text) {
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (const char c : text) {
    int value;
    if (c >= 'A' && c <= 'Z')
      value = c - 'A';
    else if (c >= 'a' && c <= 'z')
      value = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      value = c - '0' + 52;
    else if (c == '+')
      value = 62;
    else if (c == '/')
      value = 63;
    else if (c == '=' || c == '\n' || c == '\r' || c == ' ')
      continue;
    else
      return bad("base64", "unexpected character " + quoteJsonString(std::string(1, c)));
    buffer = (buffer << 6) | static_cast<unsigned>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xff);
    }
  }
  return out;
}

Result<KubeConfig> loadKubeconfig(const std::filesystem::path& path, std::string_view context) {
  const std::filesystem::path files[] = {path};
  auto merged = readKubeconfigs(files, true);
  if (!merged) return std::move(merged).error();
  return configOf(*merged, context);
}

Result<KubeConfig> loadKubeconfigAsKubectl(std::string_view explicitPath,
                                           std::string_view context) {
  const char* env = std::getenv("KUBECONFIG");
  const char* home = std::getenv("HOME");
  const auto files =
      kubectlKubeconfigFiles(explicitPath, env != nullptr ? env : "", home != nullptr ? home : "");
  auto merged = readKubeconfigs(files, !explicitPath.empty());
  if (!merged) return std::move(merged).error();
  return configOf(*merged, context);
}

Result<RequestCredentials> requestCredentials(const KubeConfig& config) {
  RequestCredentials credentials;
  credentials.clientCertFile = config.clientCertFile;
  credentials.clientKeyFile = config.clientKeyFile;
  if (!config.token.empty()) credentials.token = config.token.current();
  if (config.exec) {
    auto exec = config.exec->current();
    if (!exec) return std::move(exec).error();
    // The plugin's answer takes the place of the kubeconfig's own (client-go does the same).
    if (!(*exec)->token.empty()) credentials.token = (*exec)->token;
    if (!(*exec)->clientCertFile.empty()) {
      credentials.clientCertFile = (*exec)->clientCertFile;
      credentials.clientKeyFile = (*exec)->clientKeyFile;
    }
    credentials.exec = std::move(*exec);
  }
  return credentials;
}

bool refreshAfterUnauthorized(const KubeConfig& config, const RequestCredentials& used) {
  if (config.exec && used.exec) {
    config.exec->unauthorized(used.exec);
    return true;
  }
  if (!config.token.file().empty()) {
    config.token.invalidate();
    return true;
  }
  return false;
}

Result<KubeConfig> inClusterConfig(const std::filesystem::path& accountDir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr) {
    return makeError(
        ErrorCode::kFailedPrecondition,
        "not running in a pod (KUBERNETES_SERVICE_HOST/PORT unset); pass --kubeconfig");
  }
  // The kubelet rotates this projected token; BearerToken follows the file.
  auto token = BearerToken::fromFile(accountDir / "token");
  if (!token) return std::move(token).error().withContext("in-cluster config");
  KubeConfig config;
  const std::string hostText(host);
  const bool ipv6 = hostText.find(':') != std::string::npos;
  config.server = "https://" + (ipv6 ? "[" + hostText + "]" : hostText) + ":" + port;
  config.token = std::move(*token);
  config.caFile = (accountDir / "ca.crt").string();
  return config;
}

}  // namespace torus::kube
