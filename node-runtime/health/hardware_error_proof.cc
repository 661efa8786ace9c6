#include "node-runtime/health/hardware_error_proof.h"

#include <algorithm>

#include "common/base/sleep_until_stopped.h"
#include "node-runtime/discovery/sysfs_attribute.h"

namespace torus::health {

void ClaimEvidence::observe(int device, std::uint64_t total, TimePoint now) {
  Counters& counters = counters_[device];
  if (counters.total && total > *counters.total) counters.lastRise = now;
  counters.total = total;
}

bool ClaimEvidence::confirms(const HardwareErrorClaim& claim) const {
  const auto found = counters_.find(claim.device);
  if (found == counters_.end() || !found->second.lastRise) return false;
  const TimePoint rise = *found->second.lastRise;
  return rise >= claim.at - window_ && rise <= claim.at + window_;
}

bool ClaimEvidence::claim(int device, const std::string& type, TimePoint now) {
  HardwareErrorClaim claim{device, type, now};
  if (confirms(claim)) return true;
  if (pending_.size() >= kMaxPending && !pending_.contains({device, type})) {
    pending_.erase(
        std::min_element(pending_.begin(), pending_.end(),
                         [](const auto& a, const auto& b) { return a.second.at < b.second.at; }));
  }
  pending_[{device, type}] = std::move(claim);
  return false;
}

ClaimEvidence::Settled ClaimEvidence::settle(TimePoint now) {
  Settled settled;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (confirms(it->second)) {
      settled.confirmed.push_back(std::move(it->second));
    } else if (now - it->second.at > window_) {
      settled.unproven.push_back(std::move(it->second));
    } else {
      ++it;
      continue;
    }
    it = pending_.erase(it);
  }
  return settled;
}

HardwareErrorProof::HardwareErrorProof(std::vector<std::vector<std::string>> counterFiles,
                                       std::chrono::milliseconds window,
                                       std::chrono::milliseconds interval, OnConfirmed onConfirmed,
                                       OnUnproven onUnproven)
    : counterFiles_(std::move(counterFiles)),
      interval_(interval),
      onConfirmed_(std::move(onConfirmed)),
      onUnproven_(std::move(onUnproven)),
      evidence_(window) {
  readAll();  // the baseline: what the counters say before any claim is not a rise
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

HardwareErrorProof::~HardwareErrorProof() {
  thread_.request_stop();
}

bool HardwareErrorProof::claim(int device, const std::string& type) {
  std::lock_guard lock(mutex_);
  return evidence_.claim(device, type, std::chrono::steady_clock::now());
}

void HardwareErrorProof::readAll() {
  for (std::size_t device = 0; device < counterFiles_.size(); ++device) {
    std::uint64_t total = 0;
    bool readable = true;
    for (const std::string& path : counterFiles_[device]) {
      auto text = discovery::readAttribute(path);
      if (!text && text.error().code == ErrorCode::kNotFound) continue;  // no such counter here
      auto value = text ? discovery::parseCounter(*text) : Result<std::uint64_t>(text.error());
      if (!value) {
        readable = false;  // a counter that cannot be read proves nothing either way
        break;
      }
      total += *value;
    }
    if (!readable) continue;
    std::lock_guard lock(mutex_);
    evidence_.observe(static_cast<int>(device), total, std::chrono::steady_clock::now());
  }
}

void HardwareErrorProof::run(std::stop_token stop) {
  while (!sleepUntilStopped(stop, interval_)) {
    readAll();
    ClaimEvidence::Settled settled;
    {
      std::lock_guard lock(mutex_);
      settled = evidence_.settle(std::chrono::steady_clock::now());
    }
    for (const HardwareErrorClaim& claim : settled.confirmed)
      onConfirmed_(claim);
    if (onUnproven_) {
      for (const HardwareErrorClaim& claim : settled.unproven)
        onUnproven_(claim);
    }
  }
}

}  // namespace torus::health
