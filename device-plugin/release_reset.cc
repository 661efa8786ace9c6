#include "device-plugin/release_reset.h"

#include "common/base/log.h"
#include "common/metrics/event_counters.h"

namespace torus::plugin {

ReleaseResetter::ReleaseResetter(kubelet::NodeView& node, AssignmentTracker& tracker,
                                 std::function<Result<void>(const topology::CoreSet&)> mayReset)
    : node_(node), tracker_(tracker), mayReset_(std::move(mayReset)) {
  worker_ = std::jthread([this](std::stop_token stop) { run(stop); });
  subscription_ = tracker_.onChange([this] { changed(); });
}

ReleaseResetter::~ReleaseResetter() {
  subscription_ = {};
  worker_.request_stop();
}

void ReleaseResetter::kubeletAnswered() {
  const topology::CoreSet inUse = coresInUse(node_.snapshot().node, tracker_.current());
  std::lock_guard lock(mutex_);
  if (armed_) return;
  armed_ = true;
  lastInUse_ = inUse;
}

void ReleaseResetter::changed() {
  const topology::CoreSet inUse = coresInUse(node_.snapshot().node, tracker_.current());
  std::lock_guard lock(mutex_);
  if (!armed_) return;
  const topology::CoreSet released = lastInUse_ - inUse;
  lastInUse_ = inUse;
  if (released.empty()) return;
  released_ |= released;
  wake_.notify_all();
}

void ReleaseResetter::run(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, stop, [&] { return !released_.empty(); });
    if (stop.stop_requested()) return;
    const topology::CoreSet released = std::exchange(released_, {});
    const topology::CoreSet inUse = lastInUse_;
    lock.unlock();
    if (mayReset_) {
      if (auto may = mayReset_(released); !may) {
        TORUS_LOG(Info, Plugin, "not resetting released cores yet; the next container's start does",
                  {"cores", released.toRangeString()}, {"why", may.error().message});
        lock.lock();
        continue;
      }
    }
    // Devices with a core someone still holds are skipped by prepareCores.
    auto reset = node_.prepareCores(released, inUse);
    metrics::processCounters().add(metrics::names::kReleaseResetsTotal,
                                   {{"result", reset ? "ok" : "failed"}});
    if (reset) {
      TORUS_LOG(Info, Plugin, "reset devices of released cores",
                {"cores", released.toRangeString()});
    } else {
      TORUS_LOG(Warn, Plugin,
                "could not reset devices of released cores; the next container's "
                "start resets them",
                {"cores", released.toRangeString()}, {"error", reset.error().message});
    }
    lock.lock();
  }
}

}  // namespace torus::plugin
