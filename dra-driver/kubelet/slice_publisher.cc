#include "dra-driver/kubelet/slice_publisher.h"

#include <utility>

#include "common/base/log.h"
#include "common/base/sleep_until_stopped.h"
#include "common/kube/object_fields.h"
#include "common/metrics/event_counters.h"
#include "dra-driver/kubelet/slice_content.h"

namespace torus::dra {
namespace {

using nlohmann::json;

constexpr const char* kSlicesPath = "/apis/resource.k8s.io/v1/resourceslices";
constexpr auto kRetryAfterError = std::chrono::seconds(5);

const json& itemsOf(const json& list) {
  static const json kEmpty = json::array();
  const auto items = list.find("items");
  return items != list.end() && items->is_array() ? *items : kEmpty;
}

}  // namespace

SlicePublisher::SlicePublisher(kube::KubeConfig kube, SliceSource& source, PublisherOptions options)
    : client_(kube),
      // A watch blocks reading for minutes; its own client keeps writes from waiting behind it.
      watchClient_(std::move(kube), std::chrono::minutes(10)),
      source_(source),
      options_(std::move(options)) {}

SlicePublisher::~SlicePublisher() {
  stop();
}

void SlicePublisher::start() {
  subscription_ = source_.onChange([this] {
    std::lock_guard lock(mutex_);
    changed_ = true;
    wake_.notify_all();
  });
  worker_ = std::jthread([this](std::stop_token stop) { run(stop); });
  watcher_ = std::jthread([this](std::stop_token stop) { watchSlices(stop); });
}

void SlicePublisher::stop() {
  subscription_ = {};
  if (watcher_.joinable()) {
    watcher_.request_stop();
    watchClient_.cancel();
    watcher_.join();
  }
  if (worker_.joinable()) {
    worker_.request_stop();
    client_.cancel();
    worker_.join();
  }
}

KeptFields SlicePublisher::kept() const {
  std::lock_guard lock(mutex_);
  return kept_;
}

std::string SlicePublisher::listPath() const {
  return std::string(kSlicesPath) + "?fieldSelector=spec.nodeName%3D" + options_.nodeName +
         "%2Cspec.driver%3D" + options_.driverName;
}

void SlicePublisher::run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    const Result<void> published = publishOnce();
    if (!published) {
      TORUS_LOG(Warn, Dra, "publishing ResourceSlices failed; retrying",
                {"node", options_.nodeName}, {"error", published.error().message});
    }
    std::unique_lock lock(mutex_);
    const auto wait = published ? options_.resync
                                : std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::milliseconds(kRetryAfterError));
    wake_.wait_for(lock, stop, wait, [this] { return changed_; });
  }
}

void SlicePublisher::watchSlices(std::stop_token stop) {
  while (!stop.stop_requested()) {
    auto listed = watchClient_.get(listPath());
    Result<void> watched = okResult();
    if (listed) {
      const auto metadata = listed->find("metadata");
      const std::string version = metadata != listed->end() && metadata->is_object() &&
                                          metadata->contains("resourceVersion") &&
                                          (*metadata)["resourceVersion"].is_string()
                                      ? (*metadata)["resourceVersion"].get<std::string>()
                                      : "";
      watched = watchClient_.watch(
          listPath(), version,
          [this](const kube::WatchEvent& event) {
            if (event.type != "DELETED" && event.type != "MODIFIED" && event.type != "ADDED") {
              return;
            }
            std::lock_guard lock(mutex_);
            // Deleted, or changed by someone else (kubectl edit, an old controller): ours again.
            if (event.type != "DELETED") {
              if (!event.object || isPublishedContent(*event.object)) return;
              if (!mayDefendAgainstEdits()) return;
              TORUS_LOG(Info, Dra,
                        "a ResourceSlice of this node's pool differs from what was published; "
                        "writing it back",
                        {"slice", sliceLabel(*event.object)});
            }
            rewrite_ = true;
            changed_ = true;
            wake_.notify_all();
          },
          stop);
    }
    if (stop.stop_requested()) break;
    if (!listed || !watched) {
      const Error& error = listed ? watched.error() : listed.error();
      if (error.code != ErrorCode::kFailedPrecondition) {  // 410: just list again
        TORUS_LOG(Debug, Dra, "watching ResourceSlices failed; retrying", {"error", error.message});
        sleepUntilStopped(stop, std::chrono::seconds(kRetryAfterError));
      }
    }
  }
}

Result<void> SlicePublisher::refreshNode() {
  auto node = client_.get("/api/v1/nodes/" + options_.nodeName);
  if (!node) return std::move(node).error().withContext("reading Node " + options_.nodeName);
  std::map<std::string, std::string> labels;
  if (const auto metadata = node->find("metadata");
      metadata != node->end() && metadata->is_object()) {
    if (const auto found = metadata->find("labels");
        found != metadata->end() && found->is_object()) {
      for (const auto& [key, value] : found->items()) {
        if (value.is_string()) labels[key] = value.get<std::string>();
      }
    }
    if (const auto uid = metadata->find("uid"); uid != metadata->end() && uid->is_string()) {
      nodeUid_ = uid->get<std::string>();
    }
  }
  labels_ = std::move(labels);
  return okResult();
}

Result<void> SlicePublisher::publishOnce() {
  bool rewrite = false;
  {
    std::lock_guard lock(mutex_);
    changed_ = false;
    rewrite = std::exchange(rewrite_, false);
  }
  if (!source_.ready()) {
    if (!saidWaiting_) {
      TORUS_LOG(Info, Dra,
                "not publishing ResourceSlices until the pool is known; the API keeps "
                "what was published before",
                {"node", options_.nodeName});
      saidWaiting_ = true;
    }
    std::lock_guard lock(mutex_);
    rewrite_ = rewrite_ || rewrite;  // done once the source is ready
    return okResult();
  }
  // Labels and the owner uid change rarely; a failed read keeps the last ones.
  if (auto refreshed = refreshNode(); !refreshed && nodeUid_.empty()) {
    return std::move(refreshed).error();
  }

  if (!generationKnown_) {
    // Continue the pool's generation where an earlier run left it, so consumers never see it go
    // backwards.
    auto existing = client_.get(listPath());
    if (!existing) return std::move(existing).error().withContext("listing ResourceSlices");
    for (const json& item : itemsOf(*existing)) {
      const json* pool =
          item.contains("spec") && item["spec"].contains("pool") ? &item["spec"]["pool"] : nullptr;
      if (pool != nullptr && pool->contains("generation") &&
          (*pool)["generation"].is_number_integer()) {
        generation_ = std::max(generation_, (*pool)["generation"].get<std::int64_t>());
      }
    }
    generationKnown_ = true;
  }
  std::vector<json> slices = source_.slices(kept(), labels_);
  if (!fieldsProbed_) {
    // Before the first write: does the API keep counters and taints? Found out by dry run, so
    // the scheduler never sees a pool that lost them (partitions without counters, unhealthy
    // devices untainted) even for the moment a real write and its correction would take.
    auto dropped = probeDroppedFields(slices);
    if (!dropped)
      return std::move(dropped).error().withContext("probing which fields the API keeps");
    fieldsProbed_ = true;
    if (*dropped) slices = source_.slices(kept(), labels_);
  }
  const json unchanged = slices;  // built with generation 0: what "nothing changed" compares
  if (unchanged == publishedCopy() && !rewrite) return okResult();

  std::int64_t generation = 0;
  {
    std::lock_guard lock(mutex_);
    generation = ++generation_;
  }
  for (json& slice : slices)
    slice["spec"]["pool"]["generation"] = generation;
  if (!nodeUid_.empty()) {
    for (json& slice : slices) {
      slice["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "v1"},
                                                           {"kind", "Node"},
                                                           {"name", options_.nodeName},
                                                           {"uid", nodeUid_},
                                                           {"controller", true}}});
    }
  }
  {
    // Before the write: the watch compares what it sees with it, our own writes included.
    std::lock_guard lock(mutex_);
    lastPublished_ = unchanged;
  }
  const Result<void> written = write(slices);
  metrics::processCounters().add(metrics::names::kDraSlicePublishTotal,
                                 {{"result", written ? "ok" : "error"}});
  if (!written) {
    std::lock_guard lock(mutex_);
    lastPublished_ = json();  // unknown: the next pass writes whatever it builds
    return written;
  }
  const KeptFields keeps = kept();
  TORUS_LOG(Info, Dra, "ResourceSlices published", {"node", options_.nodeName},
            {"generation", generation}, {"slices", static_cast<std::int64_t>(slices.size())},
            {"counters", keeps.counters}, {"taints", keeps.taints});
  return okResult();
}

bool SlicePublisher::dropsFields(const json& sent, const json& stored) {
  bool dropped = false;
  std::lock_guard lock(mutex_);
  const bool sentCounters =
      sent["spec"].contains("sharedCounters") || anyDeviceHas(sent, "consumesCounters");
  const bool keptCounters = stored.contains("spec") && (stored["spec"].contains("sharedCounters") ||
                                                        anyDeviceHas(stored, "consumesCounters"));
  if (kept_.counters && sentCounters && !keptCounters) {
    TORUS_LOG(Warn, Dra,
              "the API server dropped device counters (DRAPartitionableDevices is off); "
              "publishing the pool without them (no devices that share counters)",
              {"slice", sliceLabel(sent)});
    kept_.counters = false;
    dropped = true;
  }
  if (kept_.taints && anyDeviceHas(sent, "taints") && !anyDeviceHas(stored, "taints")) {
    TORUS_LOG(Warn, Dra,
              "the API server dropped device taints (DRADeviceTaints is off); unhealthy devices "
              "are left out of the pool instead",
              {"slice", sliceLabel(sent)});
    kept_.taints = false;
    dropped = true;
  }
  if (dropped) changed_ = true;
  return dropped;
}

nlohmann::json SlicePublisher::publishedCopy() const {
  std::lock_guard lock(mutex_);
  return lastPublished_;
}

bool SlicePublisher::mayDefendAgainstEdits() {
  // Three write-backs a minute at most: something that keeps changing the pool (another
  // controller, a field the API drops that the probe did not know) must not get a new pool
  // generation every few seconds.
  const auto now = std::chrono::steady_clock::now();
  while (!editWriteBacks_.empty() && now - editWriteBacks_.front() > std::chrono::minutes(1)) {
    editWriteBacks_.pop_front();
  }
  if (editWriteBacks_.size() >= 3) {
    if (!editWarned_) {
      TORUS_LOG(Warn, Dra,
                "this node's ResourceSlices keep being changed by someone else; not writing them "
                "back more than three times a minute (the next change of the node writes them)");
      editWarned_ = true;
    }
    return false;
  }
  editWarned_ = false;
  editWriteBacks_.push_back(now);
  return true;
}

bool SlicePublisher::isPublishedContent(const json& stored) const {
  if (!lastPublished_.is_array()) return true;  // nothing written yet: nothing to defend
  const std::string name = kube::stringAt(stored, {"metadata", "name"});
  for (const json& published : lastPublished_) {
    if (kube::stringAt(published, {"metadata", "name"}) == name) {
      return sameSliceContent(stored, published);
    }
  }
  return false;  // a slice of our pool we did not write
}

Result<bool> SlicePublisher::probeDroppedFields(const std::vector<json>& slices) {
  bool dropped = false;
  bool taintProbed = !kept().taints;
  for (const json& slice : slices) {
    json probe = slice;
    bool useful =
        probe["spec"].contains("sharedCounters") || anyDeviceHas(probe, "consumesCounters");
    const bool hasDevices = probe["spec"].contains("devices") &&
                            probe["spec"]["devices"].is_array() &&
                            !probe["spec"]["devices"].empty();
    bool probesNone = false;
    if (!taintProbed && hasDevices) {
      // A healthy node has no taint to tell by; the probe carries one, and one with the effect
      // None, which an API before 1.35 refuses (the whole object, not the field).
      // The device's own taints give way to the probe's (within the API's four).
      probe["spec"]["devices"][0]["taints"] =
          json::array({{{"key", options_.driverName + "/probe"}, {"effect", "NoSchedule"}},
                       {{"key", options_.driverName + "/probe-none"}, {"effect", "None"}}});
      probesNone = true;
      taintProbed = true;
      useful = true;
    }
    if (!useful) continue;
    // A generated name: a dry run under an existing slice's name would only say it exists.
    probe["metadata"].erase("name");
    probe["metadata"]["generateName"] = options_.nodeName + "-probe-";
    auto stored = client_.create(std::string(kSlicesPath) + "?dryRun=All", probe);
    if (!stored && probesNone && stored.error().code == ErrorCode::kInvalidArgument &&
        stored.error().message.find("None") != std::string::npos) {
      TORUS_LOG(Warn, Dra,
                "the API server refuses the device taint effect None (before Kubernetes 1.35); "
                "unmonitored devices carry no taint of that effect");
      {
        std::lock_guard lock(mutex_);
        kept_.noneEffect = false;
      }
      dropped = true;
      json& taints = probe["spec"]["devices"][0]["taints"];
      taints.erase(taints.size() - 1);
      stored = client_.create(std::string(kSlicesPath) + "?dryRun=All", probe);
    }
    if (!stored) return std::move(stored).error();
    dropped = dropsFields(probe, *stored) || dropped;
  }
  return dropped;
}

Result<void> SlicePublisher::write(const std::vector<json>& slices) {
  auto existing = client_.get(listPath());
  if (!existing) return std::move(existing).error().withContext("listing ResourceSlices");
  std::map<std::string, std::string> versions;  // name -> resourceVersion
  for (const json& item : itemsOf(*existing)) {
    if (!item.contains("metadata") || !item["metadata"].is_object()) continue;
    const json& metadata = item["metadata"];
    if (metadata.contains("name") && metadata["name"].is_string()) {
      const auto version = metadata.find("resourceVersion");
      versions[metadata["name"].get<std::string>()] =
          version != metadata.end() && version->is_string() ? version->get<std::string>() : "";
    }
  }
  bool redo = false;
  for (const json& slice : slices) {
    const std::string name = slice["metadata"]["name"].get<std::string>();
    Result<json> stored = makeError(ErrorCode::kInternal, "not written");
    if (const auto found = versions.find(name); found != versions.end()) {
      json body = slice;
      body["metadata"]["resourceVersion"] = found->second;
      stored = client_.replace(std::string(kSlicesPath) + "/" + name, body);
      versions.erase(found);
    } else {
      stored = client_.create(kSlicesPath, slice);
    }
    if (!stored) return std::move(stored).error().withContext("writing ResourceSlice " + name);
    redo = dropsFields(slice, *stored) || redo;
  }
  // Slices of an earlier, larger pool (more devices, core devices since switched off).
  for (const auto& [name, version] : versions) {
    auto removed = client_.remove(std::string(kSlicesPath) + "/" + name);
    if (!removed && removed.error().code != ErrorCode::kNotFound) {
      return std::move(removed).error().withContext("deleting ResourceSlice " + name);
    }
  }
  if (redo) {
    return makeError(ErrorCode::kUnavailable,
                     "the API server dropped fields of a switched-off feature; publishing again "
                     "without them");
  }
  return okResult();
}

}  // namespace torus::dra
