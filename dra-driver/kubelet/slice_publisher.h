// SlicePublisher: keeps this node's ResourceSlice pool in the API equal to what its SliceSource
// (slice_source.h) says it is now. It republishes (with the next pool generation) when the source
// says it may have changed and otherwise checks every resync period; slices are owned by the
// Node, so deleting the Node deletes them, and kubelet removes them once the plugin stays
// unregistered (uninstall).
//
// The API server silently drops fields of features that are switched off (device taints,
// partitionable devices on older clusters). Before its first write the publisher creates its
// slices by dry run (?dryRun=All) and reads what would be stored, and after each write it reads
// what was: if counters or taints were dropped, it asks the source again without them (KeptFields)
// and publishes that. So even the first pool a scheduler sees is one the API keeps whole.
//
// A watch on the pool's slices catches deletions and edits by others (kubelet wipes a node's
// slices when it starts, an operator's kubectl delete or edit, an old controller), so the pool is
// back as published within one write, not one resync.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "common/kube/kube_client.h"
#include "dra-driver/kubelet/slice_content.h"
#include "dra-driver/kubelet/slice_source.h"

namespace torus::dra {

struct PublisherOptions {
  std::string driverName;  // spec.driver of the pool's slices
  std::string nodeName;    // the pool's node, and the slices' owner
  std::chrono::milliseconds resync = std::chrono::seconds(60);
};

class SlicePublisher {
 public:
  SlicePublisher(kube::KubeConfig kube, SliceSource& source, PublisherOptions options);
  ~SlicePublisher();
  SlicePublisher(const SlicePublisher&) = delete;
  SlicePublisher& operator=(const SlicePublisher&) = delete;

  void start();
  void stop();
  // What the API server keeps of the pool, as far as the publisher has found out.
  KeptFields kept() const;

 private:
  void run(std::stop_token stop);
  // One reconciliation: the pool as built now, written if it differs from the last one.
  Result<void> publishOnce();
  std::string listPath() const;
  void watchSlices(std::stop_token stop);
  Result<void> refreshNode();
  Result<void> write(const std::vector<nlohmann::json>& slices);
  nlohmann::json publishedCopy() const;
  // Whether a slice the watch saw is one we wrote, as we wrote it (caller holds mutex_).
  bool isPublishedContent(const nlohmann::json& stored) const;
  // Whether another write-back of an edited slice is allowed now (caller holds mutex_).
  bool mayDefendAgainstEdits();
  // Dry-run creates of the slices that carry counters or taints; true when the API drops any.
  Result<bool> probeDroppedFields(const std::vector<nlohmann::json>& slices);
  bool dropsFields(const nlohmann::json& sent, const nlohmann::json& stored);

  kube::KubeClient client_;
  kube::KubeClient watchClient_;
  SliceSource& source_;
  PublisherOptions options_;
  bool saidWaiting_ = false;  // the worker's: logged once that the source was not ready

  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  bool changed_ = true;
  bool rewrite_ = false;  // a slice was deleted under us: write even if nothing changed
  KeptFields kept_;       // (mutex_)
  std::int64_t generation_ = 0;
  bool generationKnown_ = false;
  bool fieldsProbed_ = false;     // the first publication dry-runs its slices (worker thread only)
  nlohmann::json lastPublished_;  // the slices of the last pass, generation zeroed (mutex_)
  std::deque<std::chrono::steady_clock::time_point> editWriteBacks_;  // (mutex_)
  bool editWarned_ = false;                                           // (mutex_)
  std::map<std::string, std::string> labels_;
  std::string nodeUid_;
  ChangeNotifier::Subscription subscription_;
  std::jthread worker_;
  std::jthread watcher_;
};

}  // namespace torus::dra
