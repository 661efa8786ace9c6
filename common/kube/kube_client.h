// KubeClient: the few Kubernetes API calls Torus makes — get, list, watch (with resourceVersion;
// 410 Gone is reported so the caller re-lists), JSON merge-patch, create (Bindings, Events),
// replace and delete (ResourceSlices) — over HTTPS with a bearer token or a client certificate,
// fixed, from a file, or from the kubeconfig's exec credential plugin.
// Bodies are nlohmann::json values.
//
// Errors carry the HTTP status mapped to our codes and the API server's own message:
// 404 NotFound, 409 Aborted (conflict: re-read and retry), 410 FailedPrecondition (watch too
// old: re-list), 401/403 PermissionDenied, 422 InvalidArgument, 429/5xx and transport failures
// Unavailable. Nothing throws.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"
#include "common/kube/kube_config.h"

namespace httplib {
class Result;
}  // namespace httplib

namespace torus::kube {

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK
  std::shared_ptr<const nlohmann::json> object;
};

class KubeClient {
 public:
  explicit KubeClient(KubeConfig config,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~KubeClient();
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  Result<nlohmann::json> get(const std::string& path);
  // A GET whose answer is not JSON (a pod's /metrics through the API server's proxy).
  Result<std::string> getText(const std::string& path);
  Result<nlohmann::json> create(const std::string& path, const nlohmann::json& body);
  // PUT: replaces the object (body carries metadata.resourceVersion for optimistic concurrency;
  // a stale one is Aborted).
  Result<nlohmann::json> replace(const std::string& path, const nlohmann::json& body);
  // DELETE; an object that is already gone is NotFound.
  Result<nlohmann::json> remove(const std::string& path);
  // DELETE with a DeleteOptions body (preconditions, propagationPolicy).
  Result<nlohmann::json> remove(const std::string& path, const nlohmann::json& deleteOptions);
  // application/merge-patch+json: only the keys in `patch` change; an annotation map is never
  // replaced wholesale.
  Result<nlohmann::json> mergePatch(const std::string& path, const nlohmann::json& patch);
  // application/strategic-merge-patch+json: lists with a merge key (a node's conditions, by
  // type) are merged item by item instead of replaced.
  Result<nlohmann::json> strategicMergePatch(const std::string& path, const nlohmann::json& patch);
  // Streams watch events of `path` (a collection) from `resourceVersion` until the server ends
  // the stream (Ok), `stop` is requested (Ok), or an error; ERROR events with code 410 become a
  // FailedPrecondition error so the caller re-lists.
  Result<void> watch(const std::string& path, const std::string& resourceVersion,
                     const std::function<void(const WatchEvent&)>& onEvent,
                     std::stop_token stop = {});

  // Aborts the request in flight (a watch blocked reading), from another thread. Calls made after
  // it run normally; a caller that stops must also stop issuing new ones. Not for a client whose
  // exec plugin hands out client certificates (a new one replaces the connection it would stop).
  void cancel();

  const KubeConfig& config() const { return config_; }

 private:
  struct Transport;
  // (Re)builds the connection, presenting this client certificate (none when empty).
  void connect(const std::string& clientCertFile, const std::string& clientKeyFile);
  // The credentials for the next request; reconnects when the client certificate changed.
  Result<RequestCredentials> credentials();
  // Sends with fresh headers (the bearer token may have rotated since the last call).
  template <typename Send>
  Result<httplib::Result> exchange(Send&& request);
  template <typename Send>
  Result<nlohmann::json> send(const char* method, const std::string& path, Send&& request);

  KubeConfig config_;
  std::unique_ptr<Transport> transport_;
};

// The code for an API server's HTTP status, as the header comment lists them.
ErrorCode errorCodeOfStatus(int status);

// Escapes a JSON merge-patch that sets one annotation (value) or removes it (nullopt).
nlohmann::json annotationPatch(const std::string& key, const std::optional<std::string>& value);

}  // namespace torus::kube
