#include "common/kubelet/pod_resources_poll.h"

#include <algorithm>

#include "common/metrics/event_counters.h"

namespace torus::kubelet {
namespace {

constexpr std::chrono::milliseconds kAfterPokeDelay{200};
// After a pod ended, kubelet lists it until its sandbox is torn down: read often meanwhile.
constexpr std::chrono::milliseconds kAfterPodEnd{2000};
constexpr std::chrono::milliseconds kAfterPodEndInterval{200};
constexpr std::chrono::seconds kListTimeout{5};
// The poll waits as long as allocations keep kubelet's window open: a List then would set off the
// double allocation it exists to avoid. Log a hold that long, so a stream of them is visible.
constexpr std::chrono::milliseconds kLongHold{500};
constexpr std::chrono::hours kNoLimit{24};

}  // namespace

PodResourcesPoll::PodResourcesPoll(Options options,
                                   std::function<bool(PodResourcesRows&&)> answered)
    : options_(std::move(options)),
      client_(options_.socket),
      answered_(std::move(answered)),
      thread_([this](std::stop_token stop) { run(stop); }) {}

PodResourcesPoll::~PodResourcesPoll() {
  thread_.request_stop();
  wake_.notify_all();
}

void PodResourcesPoll::pokeAfterAllocate() {
  std::lock_guard lock(mutex_);
  poked_ = true;
  wake_.notify_all();
}

void PodResourcesPoll::pokeNow() {
  std::lock_guard lock(mutex_);
  poked_ = true;
  pokedNow_ = true;
  fastUntil_ = std::chrono::steady_clock::now() + kAfterPodEnd;
  wake_.notify_all();
}

bool PodResourcesPoll::waitForFirstList(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  wake_.wait_for(lock, timeout, [&] { return firstTried_; });
  return firstAnswered_;
}

Result<PodResourcesRows> PodResourcesPoll::listWhenSafe(std::stop_token stop,
                                                        std::chrono::milliseconds limit) {
  if (options_.window == nullptr) return client_.list(kListTimeout);
  std::chrono::milliseconds waited{0};
  const bool safe = options_.window->beginList(stop, limit, &waited);
  if (waited.count() > 0) {
    metrics::processCounters().add(metrics::names::kListsHeldTotal, {});
    metrics::processCounters().add(metrics::names::kListsHeldSecondsTotal, {},
                                   static_cast<double>(waited.count()) / 1000.0);
  }
  if (waited >= kLongHold && log::enabled(log::Level::kInfo, options_.component)) {
    log::write(log::Level::kInfo, options_.component,
               "pod-resources List held back while kubelet had a device allocation in flight",
               {{"held_ms", static_cast<std::int64_t>(waited.count())}, {"sent", safe}});
  }
  if (!safe) {
    return makeError(ErrorCode::kUnavailable, "kubelet kept a device allocation in flight for " +
                                                  std::to_string(waited.count()) +
                                                  " ms; pod-resources not read meanwhile");
  }
  auto listed = client_.list(kListTimeout);
  options_.window->endList();
  return listed;
}

Result<PodResourcesRows> PodResourcesPoll::listNow(std::chrono::milliseconds wait) {
  return listWhenSafe(std::stop_token{}, wait);
}

void PodResourcesPoll::run(std::stop_token stop) {
  bool reachable = true;
  while (!stop.stop_requested()) {
    bool soon = false;
    auto listed = listWhenSafe(stop, kNoLimit);
    if (stop.stop_requested()) break;
    if (listed) {
      if (!reachable && log::enabled(log::Level::kInfo, options_.component)) {
        log::write(log::Level::kInfo, options_.component, "pod-resources API reachable again");
      }
      reachable = true;
      soon = answered_(std::move(*listed));
    } else if (reachable) {
      reachable = false;
      if (log::enabled(log::Level::kWarn, options_.component)) {
        log::write(log::Level::kWarn, options_.component,
                   "cannot read kubelet's pod-resources; " + options_.whileUnreachable,
                   {{"error", listed.error().message},
                    {"retry_ms", static_cast<int>(options_.interval.count())}});
      }
    }
    std::unique_lock lock(mutex_);
    if (!firstTried_) {
      firstTried_ = true;
      firstAnswered_ = listed.ok();
      wake_.notify_all();
    }
    const auto wait = soon || std::chrono::steady_clock::now() < fastUntil_
                          ? std::min(options_.interval, kAfterPodEndInterval)
                          : options_.interval;
    if (wake_.wait_for(lock, stop, wait, [&] { return poked_; })) {
      // After an Allocate, kubelet records the assignment once the call has returned; asking at
      // once would race it, and a burst of Allocate calls needs one List, not one each. A pod
      // that ended cuts the wait short: its ids are free in kubelet already.
      wake_.wait_for(lock, stop, kAfterPokeDelay, [&] { return pokedNow_; });
    }
    poked_ = false;
    pokedNow_ = false;
  }
}

}  // namespace torus::kubelet
