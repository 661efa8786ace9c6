// Where the Kubernetes API is and how to authenticate to it: from a kubeconfig file (current
// context, or a named one) or from inside a pod (service-account token and CA).
//
// Only what the agent and extender need is understood: server, certificate authority (file or
// data), bearer token (or token file), client certificate and key (file or data), and
// insecure-skip-tls-verify. Exec and auth-provider plugins are refused with a clear error.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "common/base/result.h"
#include "common/base/temp_dir.h"
#include "common/kube/bearer_token.h"

namespace torus::kube {

struct KubeConfig {
  std::string server;          // https://host:port
  std::string caFile;          // empty: system roots
  BearerToken token;           // fixed, or re-read from its file when it rotates
  std::string clientCertFile;  // with clientKeyFile: mutual TLS
  std::string clientKeyFile;
  bool insecureSkipTlsVerify = false;
  // Inline *-data fields are written here (mode 0600) because the TLS library wants files.
  std::shared_ptr<TempDir> materialized;
};

// The kubeconfig at `path`, using `context` or, when empty, its current-context.
Result<KubeConfig> loadKubeconfig(const std::filesystem::path& path, std::string_view context = {});

// In a pod: KUBERNETES_SERVICE_HOST/PORT and the service-account files under `accountDir`.
Result<KubeConfig> inClusterConfig(
    const std::filesystem::path& accountDir = "/var/run/secrets/kubernetes.io/serviceaccount");

Result<std::string> decodeBase64(std::string_view text);

}  // namespace torus::kube
