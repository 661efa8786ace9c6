#include "common/kube/kube_config.h"

#include <cstdlib>

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include "common/base/file_io.h"
#include "common/base/strings.h"

namespace torus::kube {
namespace {

Error bad(const std::string& where, const std::string& why) {
  return makeError(ErrorCode::kInvalidArgument, where + ": " + why);
}

YAML::Node findNamed(const YAML::Node& list, const std::string& name, const char* field) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const YAML::Node& entry : list) {
    if (!entry.IsMap()) continue;  // operator[] of a scalar or list throws
    if (!entry["name"] || entry["name"].as<std::string>("") != name) continue;
    // A missing key reads as an invalid node, on which IsMap() throws (found by fuzzing).
    if (const YAML::Node value = entry[field]; value) return value;
    return YAML::Node();
  }
  return YAML::Node();
}

std::string scalar(const YAML::Node& node, const char* key) {
  return node && node.IsMap() && node[key] && node[key].IsScalar() ? node[key].as<std::string>("")
                                                                   : "";
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
  auto text = readSmallFile(path, 4 << 20);
  if (!text) return std::move(text).error().withContext("kubeconfig");
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& error) {
    return bad("kubeconfig " + path.string(), std::string("not valid YAML: ") + error.what());
  }
  const std::string where = "kubeconfig " + path.string();
  // A file that parses as a scalar (say /etc/hostname) used to abort on root["current-context"].
  if (!root.IsMap()) return bad(where, "expected a kubeconfig (a YAML mapping)");
  const std::string contextName =
      context.empty() ? scalar(root, "current-context") : std::string(context);
  if (contextName.empty()) return bad(where, "no current-context and no context given");
  const YAML::Node ctx = findNamed(root["contexts"], contextName, "context");
  if (!ctx.IsMap()) return bad(where, "context " + quoteJsonString(contextName) + " not found");
  const YAML::Node cluster = findNamed(root["clusters"], scalar(ctx, "cluster"), "cluster");
  if (!cluster.IsMap())
    return bad(where, "cluster " + quoteJsonString(scalar(ctx, "cluster")) + " not found");
  const YAML::Node user = findNamed(root["users"], scalar(ctx, "user"), "user");

  KubeConfig config;
  config.server = scalar(cluster, "server");
  if (config.server.empty()) return bad(where, "cluster has no server");
  config.insecureSkipTlsVerify = scalar(cluster, "insecure-skip-tls-verify") == "true";
  config.caFile = scalar(cluster, "certificate-authority");
  if (const std::string data = scalar(cluster, "certificate-authority-data"); !data.empty()) {
    auto file = materialize(config, data, "ca.crt");
    if (!file) return std::move(file).error().withContext(where);
    config.caFile = *file;
  }
  if (user.IsMap()) {
    if (user["exec"] || user["auth-provider"]) {
      return bad(where, "user " + quoteJsonString(scalar(ctx, "user")) +
                            " uses an exec or auth-provider plugin, which is not supported; "
                            "use a token or client certificate");
    }
    if (const std::string token = scalar(user, "token"); !token.empty()) {
      config.token = BearerToken::fixed(token);
    }
    if (const std::string tokenFile = scalar(user, "tokenFile"); !tokenFile.empty()) {
      auto token = BearerToken::fromFile(tokenFile);
      if (!token) return std::move(token).error().withContext(where);
      config.token = std::move(*token);
    }
    config.clientCertFile = scalar(user, "client-certificate");
    config.clientKeyFile = scalar(user, "client-key");
    for (const auto& [field, target, name] :
         {std::tuple{"client-certificate-data", &config.clientCertFile, "client.crt"},
          std::tuple{"client-key-data", &config.clientKeyFile, "client.key"}}) {
      if (const std::string data = scalar(user, field); !data.empty()) {
        auto file = materialize(config, data, name);
        if (!file) return std::move(file).error().withContext(where);
        *target = *file;
      }
    }
  }
  return config;
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
