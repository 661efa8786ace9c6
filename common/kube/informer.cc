#include "common/kube/informer.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/base/sleep_until_stopped.h"
#include "common/kube/object_fields.h"

namespace torus::kube {
namespace {

using nlohmann::json;

std::string resourceVersionOf(const json& object) {
  return stringAt(object, {"metadata", "resourceVersion"});
}

}  // namespace

Informer::Informer(KubeConfig config, std::string collection, InformerHandlers handlers,
                   InformerOptions options)
    : collection_(std::move(collection)),
      handlers_(std::move(handlers)),
      options_(options),
      // The read timeout outlasts the server's own watch timeout, so a quiet watch ends cleanly.
      client_(std::make_unique<KubeClient>(
          std::move(config), std::chrono::seconds(options.watchTimeoutSeconds + 30))) {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

Informer::~Informer() {
  thread_.request_stop();
  // cancel() only aborts a request already in flight; one may be starting right now, so keep
  // cancelling until the thread has seen the stop.
  while (!finished_.load()) {
    client_->cancel();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void Informer::run(std::stop_token stop) {
  std::chrono::milliseconds backoff = options_.minBackoff;
  const auto failed = [&](const char* what, const Error& error) {
    TORUS_LOG(Warn, Kube, what, {"collection", collection_}, {"error", error.message},
              {"retry_in_ms", static_cast<std::int64_t>(backoff.count())});
    const bool keepGoing = !sleepUntilStopped(stop, backoff);
    backoff = std::min(backoff * 2, options_.maxBackoff);
    return keepGoing;
  };
  const std::string separator = collection_.find('?') == std::string::npos ? "?" : "&";
  const std::string watchPath =
      collection_ + separator + "timeoutSeconds=" + std::to_string(options_.watchTimeoutSeconds);
  while (!stop.stop_requested()) {
    auto list = client_->get(collection_);
    if (!list) {
      if (!failed("list failed", list.error())) break;
      continue;
    }
    std::string version = resourceVersionOf(*list);
    std::vector<std::shared_ptr<const json>> items;
    if (const auto found = list->find("items"); found != list->end() && found->is_array()) {
      items.reserve(found->size());
      for (json& item : *found)
        items.push_back(std::make_shared<const json>(std::move(item)));
    }
    handlers_.onList(items);
    lists_.fetch_add(1);
    synced_.store(true);
    TORUS_LOG(Info, Kube, "listed", {"collection", collection_},
              {"items", static_cast<std::int64_t>(items.size())}, {"resource_version", version});
    while (!stop.stop_requested()) {
      auto watched = client_->watch(
          watchPath, version,
          [&](const WatchEvent& event) {
            if (const std::string seen = resourceVersionOf(*event.object); !seen.empty()) {
              version = seen;
            }
            TORUS_LOG(Debug, Kube, "watch event", {"collection", collection_}, {"type", event.type},
                      {"resource_version", version});
            if (event.type != "BOOKMARK") handlers_.onEvent(event);
            backoff = options_.minBackoff;
          },
          stop);
      if (watched) continue;  // the server closed the stream: watch again from where we were
      if (stop.stop_requested()) break;
      if (watched.error().code == ErrorCode::kFailedPrecondition) {
        TORUS_LOG(Info, Kube, "watch expired; listing again", {"collection", collection_},
                  {"error", watched.error().message});
      } else {
        failed("watch failed; listing again", watched.error());
      }
      break;
    }
  }
  finished_.store(true);
}

}  // namespace torus::kube
