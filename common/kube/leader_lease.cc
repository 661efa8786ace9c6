#include "common/kube/leader_lease.h"

#include <cstdio>
#include <cstdlib>
#include <random>

#include <unistd.h>

#include "common/base/log.h"
#include "common/base/sleep_until_stopped.h"
#include "common/base/utc_time.h"
#include "common/kube/object_fields.h"

namespace torus::kube {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

}  // namespace

LeaderLease::LeaderLease(KubeConfig config, LeaseOptions options, LeaseCallbacks callbacks)
    : client_(std::move(config), options.renewDeadline),
      options_(std::move(options)),
      callbacks_(std::move(callbacks)) {}

LeaderLease::~LeaderLease() {
  stop();
}

void LeaderLease::start() {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void LeaderLease::stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    client_.cancel();
    thread_.join();
  }
  if (leader_.exchange(false)) release();
}

std::string LeaderLease::path() const {
  return "/apis/coordination.k8s.io/v1/namespaces/" + options_.nameSpace + "/leases/" +
         options_.name;
}

json LeaderLease::record(const json& previous, bool takingOver) const {
  const std::string now = utcNowRfc3339Micro();
  json spec = {{"holderIdentity", options_.identity},
               {"leaseDurationSeconds",
                std::chrono::duration_cast<std::chrono::seconds>(options_.leaseDuration).count()},
               {"renewTime", now}};
  const json& before = fieldAt(previous, {"spec"});
  const auto transitions =
      before.is_object() && before.value("leaseTransitions", json()).is_number()
          ? before["leaseTransitions"].get<std::int64_t>()
          : 0;
  if (takingOver) {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] = previous.is_null() ? 0 : transitions + 1;
  } else {
    spec["acquireTime"] = stringAt(previous, {"spec", "acquireTime"});
    spec["leaseTransitions"] = transitions;
  }
  return spec;
}

Result<bool> LeaderLease::tryAcquireOrRenew() {
  auto current = client_.get(path());
  if (!current && current.error().code != ErrorCode::kNotFound) return std::move(current).error();
  std::lock_guard lock(mutex_);
  if (!current) {
    json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", options_.name}, {"namespace", options_.nameSpace}}},
                  {"spec", record(json(), true)}};
    auto created = client_.create(
        "/apis/coordination.k8s.io/v1/namespaces/" + options_.nameSpace + "/leases", lease);
    if (!created) {
      // Another candidate created it first: it holds the lease.
      if (created.error().code == ErrorCode::kAlreadyExists ||
          created.error().code == ErrorCode::kAborted) {
        return false;
      }
      return std::move(created).error();
    }
    observedHolder_ = options_.identity;
    observedAt_ = lastRenewal_ = Clock::now();
    return true;
  }

  const std::string holder = stringAt(*current, {"spec", "holderIdentity"});
  const std::string renewTime = stringAt(*current, {"spec", "renewTime"});
  const auto now = Clock::now();
  if (holder != observedHolder_ || renewTime != observedRenewTime_) {
    observedHolder_ = holder;
    observedRenewTime_ = renewTime;
    observedAt_ = now;
  }
  const bool mine = holder == options_.identity;
  const bool expired = holder.empty() || now - observedAt_ >= options_.leaseDuration;
  if (!mine && !expired) return false;

  json lease = *current;
  lease["spec"] = record(*current, !mine);
  auto written = client_.replace(path(), lease);
  if (!written) {
    if (written.error().code == ErrorCode::kAborted) return false;  // someone else wrote first
    return std::move(written).error();
  }
  observedHolder_ = options_.identity;
  observedRenewTime_ = stringAt(*written, {"spec", "renewTime"});
  observedAt_ = lastRenewal_ = now;
  return true;
}

void LeaderLease::run(std::stop_token stop) {
  do {
    auto held = tryAcquireOrRenew();
    if (stop.stop_requested()) return;
    if (!held) {
      TORUS_LOG(Warn, Kube, "lease: cannot reach it", {"lease", options_.name},
                {"error", held.error().message});
    }
    const bool holding = held && *held;
    if (holding && !leader_.exchange(true)) {
      TORUS_LOG(Info, Kube, "lease: now the leader", {"lease", options_.name},
                {"identity", options_.identity});
      if (callbacks_.startedLeading) callbacks_.startedLeading();
    }
    if (!holding && leader_.load()) {
      std::chrono::steady_clock::time_point last;
      {
        std::lock_guard lock(mutex_);
        last = lastRenewal_;
      }
      // Lost to another holder, or unrenewed for the deadline: stop acting at once.
      const bool lost = (held && !*held) || Clock::now() - last >= options_.renewDeadline;
      if (lost) {
        leader_.store(false);
        TORUS_LOG(Error, Kube, "lease: lost", {"lease", options_.name},
                  {"identity", options_.identity});
        if (callbacks_.stoppedLeading) callbacks_.stoppedLeading();
      }
    }
  } while (!sleepUntilStopped(stop, options_.retryPeriod));
}

void LeaderLease::release() {
  auto current = client_.get(path());
  if (!current || stringAt(*current, {"spec", "holderIdentity"}) != options_.identity) return;
  json lease = *current;
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["renewTime"] = utcNowRfc3339Micro();
  if (auto written = client_.replace(path(), lease); !written) {
    TORUS_LOG(Warn, Kube, "lease: cannot release it", {"lease", options_.name},
              {"error", written.error().message});
  }
}

std::string leaseIdentity() {
  std::string base;
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') {
    base = pod;
  } else {
    char host[256] = {};
    base = gethostname(host, sizeof host - 1) == 0 ? host : "unknown";
  }
  std::random_device random;
  char suffix[10];
  std::snprintf(suffix, sizeof suffix, "_%08x", static_cast<unsigned>(random()));
  return base + suffix;
}

}  // namespace torus::kube
