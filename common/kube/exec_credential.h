// ExecCredentialSource: the credentials of a kubeconfig user whose `exec` stanza names a
// credential plugin (`aws eks get-token`, `gke-gcloud-auth-plugin`, `kubelogin`), obtained as
// kubectl's client-go obtains them (plugin/pkg/client/auth/exec):
//
// - the plugin runs with our environment plus the stanza's `env` and KUBERNETES_EXEC_INFO, an
//   ExecCredential of the stanza's apiVersion (client.authentication.k8s.io/v1 or v1beta1) whose
//   spec says whether it may talk to the user (`interactive`) and, with provideClusterInfo, which
//   cluster it is for;
// - interactiveMode Never, IfAvailable (stdin is a terminal) or Always (else an error); v1 must
//   name one, v1beta1 defaults to IfAvailable; an interactive plugin gets our stdin and stderr;
// - its stdout is an ExecCredential of the same apiVersion with a token and/or a client
//   certificate and key (PEM), optionally an expirationTimestamp;
// - the credential is kept until that time, and the plugin runs again after the API server
//   answers 401 to it (once per credential: callers that saw the same 401 share the new one).
//
// Not here: the plugin policy allowlist of kubectl 1.35's preferences (kuberc), and auth-provider
// (removed from kubectl in 1.26); the kubeconfig loader refuses the latter by name.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "common/base/temp_dir.h"

namespace torus::kube {

// A user's `exec` stanza, as written in the kubeconfig.
struct ExecPluginConfig {
  std::string user;  // the kubeconfig user's name, for messages
  std::string apiVersion;
  std::string command;  // a path with a '/' is already resolved against the kubeconfig's directory
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string installHint;
  std::string interactiveMode;  // Never, IfAvailable, Always; empty: the apiVersion's default
  bool provideClusterInfo = false;
};

// What provideClusterInfo hands the plugin (ExecCredential spec.cluster).
struct ExecClusterInfo {
  std::string server;
  std::string tlsServerName;
  bool insecureSkipTlsVerify = false;
  std::string certificateAuthorityData;  // PEM, not base64
  std::string proxyUrl;
  nlohmann::json config;  // the cluster's extension "client.authentication.k8s.io/exec", or null
};

// One credential the plugin printed.
struct ExecCredential {
  std::string token;
  std::string clientCertFile;  // with clientKeyFile: PEM files (mode 0600) in `files`
  std::string clientKeyFile;
  std::optional<std::chrono::system_clock::time_point> expiry;
  std::shared_ptr<TempDir> files;
};

// The plugin's stdout, checked: an error names what is wrong with it.
struct ParsedExecCredential {
  std::string token;
  std::string clientCertificatePem;
  std::string clientKeyPem;
  std::optional<std::chrono::system_clock::time_point> expiry;
};
Result<ParsedExecCredential> parseExecCredential(std::string_view text,
                                                 std::string_view apiVersion);

// KUBERNETES_EXEC_INFO's value.
std::string execInfoJson(const ExecPluginConfig& plugin, const ExecClusterInfo& cluster,
                         bool interactive);

// "2026-11-22T05:31:07Z", with optional fractional seconds and a numeric offset (RFC 3339).
std::optional<std::chrono::system_clock::time_point> parseRfc3339(std::string_view text);

class ExecCredentialSource {
 public:
  using Clock = std::function<std::chrono::system_clock::time_point()>;
  // Checks the stanza now (apiVersion, interactiveMode); runs nothing until current().
  static Result<std::shared_ptr<ExecCredentialSource>> create(
      ExecPluginConfig plugin, ExecClusterInfo cluster, Clock now = &std::chrono::system_clock::now,
      std::optional<bool> stdinIsTerminal = {});

  // The cached credential, or a new one from the plugin when there is none or it has expired.
  Result<std::shared_ptr<const ExecCredential>> current();
  // The API server answered 401 to `used`: the next current() runs the plugin, unless another
  // caller already replaced `used`.
  void unauthorized(const std::shared_ptr<const ExecCredential>& used);

  const ExecPluginConfig& plugin() const { return plugin_; }

  // Only create() makes one (it checks the stanza first).
  class Checked {
    friend class ExecCredentialSource;
    Checked() = default;
  };
  ExecCredentialSource(Checked, ExecPluginConfig plugin, ExecClusterInfo cluster, Clock now,
                       bool interactive);

 private:
  Result<std::shared_ptr<const ExecCredential>> runPluginLocked();

  ExecPluginConfig plugin_;
  ExecClusterInfo cluster_;
  Clock now_;
  bool interactive_;
  std::mutex mutex_;
  std::shared_ptr<const ExecCredential> cached_;
};

}  // namespace torus::kube
