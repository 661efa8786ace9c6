// Where the Kubernetes API is and how to authenticate to it: from a kubeconfig file (current
// context, or a named one) or from inside a pod (service-account token and CA).
//
// Understood: server, certificate authority (file or data), insecure-skip-tls-verify, proxy-url
// (http:// only), the context's namespace, and a user's bearer token (or token file), client
// certificate and key (file or data), or exec credential plugin (exec_credential.h). Several
// files merge as kubectl merges them (kubeconfig_files.h). auth-provider (dropped by kubectl
// 1.26), username/password, impersonation and a SOCKS proxy are refused with an error naming them.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "common/base/result.h"
#include "common/base/temp_dir.h"
#include "common/kube/bearer_token.h"
#include "common/kube/exec_credential.h"

namespace torus::kube {

struct KubeConfig {
  std::string server;          // https://host:port
  std::string caFile;          // empty: system roots
  BearerToken token;           // fixed, or re-read from its file when it rotates
  std::string clientCertFile;  // with clientKeyFile: mutual TLS
  std::string clientKeyFile;
  bool insecureSkipTlsVerify = false;
  std::string proxyUrl;   // http://host:port, or empty
  std::string nameSpace;  // the context's namespace; empty when it names none
  // The user's credential plugin; when set, token and client certificate come from it.
  std::shared_ptr<ExecCredentialSource> exec;
  // Inline *-data fields are written here (mode 0600) because the TLS library wants files.
  std::shared_ptr<TempDir> materialized;
};

// The kubeconfig at `path`, using `context` or, when empty, its current-context.
Result<KubeConfig> loadKubeconfig(const std::filesystem::path& path, std::string_view context = {});

// As kubectl finds it: `explicitPath` (--kubeconfig) alone when set, else the files of
// $KUBECONFIG merged, else ~/.kube/config; `context` or the merged current-context.
Result<KubeConfig> loadKubeconfigAsKubectl(std::string_view explicitPath,
                                           std::string_view context = {});

// What one request authenticates with, now: the bearer token and client certificate, fixed or
// from the file or the plugin (which may run, once, and fail).
struct RequestCredentials {
  std::string token;
  std::string clientCertFile;
  std::string clientKeyFile;
  std::shared_ptr<const ExecCredential> exec;  // keeps the plugin's files alive
};
Result<RequestCredentials> requestCredentials(const KubeConfig& config);
// The API server answered 401 to `used`: whether a fresh credential may be worth one more try
// (the token file or the plugin's may have rotated), and arranges for the next
// requestCredentials to get it.
bool refreshAfterUnauthorized(const KubeConfig& config, const RequestCredentials& used);

// In a pod: KUBERNETES_SERVICE_HOST/PORT and the service-account files under `accountDir`.
Result<KubeConfig> inClusterConfig(
    const std::filesystem::path& accountDir = "/var/run/secrets/kubernetes.io/serviceaccount");

Result<std::string> decodeBase64(std::string_view text);

}  // namespace torus::kube
