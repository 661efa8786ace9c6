// Informer: keeps a caller's cache of one Kubernetes collection current — list, then watch from
// the list's resourceVersion, and list again whenever the watch is too old (410 Gone) or fails.
// A re-list hands the caller the whole collection so it can drop whatever it missed; that is what
// makes restarts and lost events heal themselves.
//
// One thread per informer, with its own connection (a watch holds its connection for minutes).
// Errors back off from `minBackoff` doubling to `maxBackoff` and are logged; nothing throws.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/kube/kube_client.h"

namespace torus::kube {

struct InformerHandlers {
  // The whole collection, after every (re-)list: replace the cache with it.
  std::function<void(const std::vector<std::shared_ptr<const nlohmann::json>>& items)> onList;
  // ADDED, MODIFIED or DELETED of one object (bookmarks are handled here).
  std::function<void(const WatchEvent& event)> onEvent;
};

struct InformerOptions {
  std::chrono::milliseconds minBackoff{500};
  std::chrono::milliseconds maxBackoff{std::chrono::seconds(30)};
  // The server ends each watch after this long; the informer then watches again.
  int watchTimeoutSeconds = 300;
};

class Informer {
 public:
  // `collection` is an API path such as "/api/v1/pods" or "/api/v1/nodes?labelSelector=a%3Db".
  Informer(KubeConfig config, std::string collection, InformerHandlers handlers,
           InformerOptions options = {});
  ~Informer();  // stops the thread, interrupting a watch in flight
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  bool hasSynced() const { return synced_.load(); }
  std::uint64_t lists() const { return lists_.load(); }

 private:
  void run(std::stop_token stop);

  std::string collection_;
  InformerHandlers handlers_;
  InformerOptions options_;
  std::unique_ptr<KubeClient> client_;
  std::atomic<bool> synced_{false};
  std::atomic<std::uint64_t> lists_{0};
  std::atomic<bool> finished_{false};
  std::jthread thread_;
};

}  // namespace torus::kube
