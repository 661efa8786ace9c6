#include "node-runtime/health/deep_check/ring_order.h"

#include <algorithm>

namespace torus::health {
namespace {

constexpr int kSearchBudget = 200'000;  // extension steps; a 4x4 torus needs a few dozen

class RingSearch {
 public:
  RingSearch(std::span<const int> devices, const std::function<bool(int, int)>& linked)
      : devices_(devices.begin(), devices.end()), linked_(linked), used_(devices.size(), false) {}

  NeuronLinkRing run() {
    NeuronLinkRing ring;
    if (devices_.empty()) return ring;
    for (std::size_t start = 0; start < devices_.size() && !foundCycle_; ++start) {
      path_ = {devices_[start]};
      std::fill(used_.begin(), used_.end(), false);
      used_[start] = true;
      extend();
    }
    if (foundCycle_ || best_.size() == devices_.size()) {
      ring.order = foundCycle_ ? cycle_ : best_;
      ring.closed = foundCycle_ || devices_.size() == 1;
      ring.alongLinks = true;
      return ring;
    }
    ring.order = best_;
    for (const int device : devices_) {
      if (std::find(best_.begin(), best_.end(), device) == best_.end())
        ring.order.push_back(device);
    }
    return ring;
  }

 private:
  void extend() {
    if (foundCycle_ || --budget_ < 0) return;
    if (path_.size() > best_.size()) best_ = path_;
    if (path_.size() == devices_.size()) {
      if (devices_.size() > 2 && linked_(path_.back(), path_.front())) {
        foundCycle_ = true;
        cycle_ = path_;
      }
      return;
    }
    for (std::size_t i = 0; i < devices_.size(); ++i) {
      if (used_[i] || !linked_(path_.back(), devices_[i])) continue;
      used_[i] = true;
      path_.push_back(devices_[i]);
      extend();
      if (foundCycle_) return;
      path_.pop_back();
      used_[i] = false;
    }
  }

  std::vector<int> devices_;
  const std::function<bool(int, int)>& linked_;
  std::vector<bool> used_;
  std::vector<int> path_;
  std::vector<int> best_;
  std::vector<int> cycle_;
  bool foundCycle_ = false;
  int budget_ = kSearchBudget;
};

}  // namespace

NeuronLinkRing neuronLinkRing(std::span<const int> devices,
                              const std::function<bool(int, int)>& linked) {
  return RingSearch(devices, linked).run();
}

}  // namespace torus::health
