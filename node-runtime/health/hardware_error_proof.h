// Whether a NEURON_HW_ERR line in the kernel log is backed by evidence no tenant can write.
//
// Any process holding any /dev/neuronN can printk any text through the driver's printk ioctl,
// so a well-formed line (kernel_log.h) is only a claim. What proves it is the chip's own firmware
// ECC counters, which the driver reads from the device (neuronN/stats/hardware/
// mem_ecc_uncorrected, mem_ecc_repairable_uncorrected, sram_ecc_uncorrected): a tenant cannot
// raise them. The per-core status counters are not used: a tenant's runtime posts those for its
// own cores.
//
// "Confirmed" means: the sum of the claimed chip's firmware ECC counters rose (read higher than
// the reading before) at a time within `window` (the kernel error hold) before or after the
// claim. The runtime prints its line when it sees the error, so the counter may rise just before
// or just after it. A counter that was already non-zero when the agent started, or that only
// falls (a reset clears it), proves nothing. A claim with no rise within `window` is dropped as
// unproven.
//
// ClaimEvidence is the decision, pure (times are passed in); HardwareErrorProof reads the
// counters on a thread of its own every interval and hands confirmed claims on. A read that
// hangs stalls only that thread: claims then stay unproven, and nobody loses a chip on a claim.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace torus::health {

struct HardwareErrorClaim {
  int device = -1;
  std::string type;
  std::chrono::steady_clock::time_point at;
};

class ClaimEvidence {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  // At most this many claims wait for evidence; the oldest goes first (a tenant can write
  // claims as fast as it likes).
  static constexpr std::size_t kMaxPending = 256;

  explicit ClaimEvidence(std::chrono::milliseconds window) : window_(window) {}
  // A reading of `device`'s firmware ECC counters, summed. The first one is the baseline.
  void observe(int device, std::uint64_t total, TimePoint now);
  // Records a claim; true when a rise within the window before it already confirms it (it is
  // then not kept).
  bool claim(int device, const std::string& type, TimePoint now);
  struct Settled {
    std::vector<HardwareErrorClaim> confirmed;
    std::vector<HardwareErrorClaim> unproven;  // no rise within the window
  };
  // The waiting claims a rise now confirms, and those whose window has passed without one.
  Settled settle(TimePoint now);
  std::size_t pending() const { return pending_.size(); }

 private:
  bool confirms(const HardwareErrorClaim& claim) const;

  const std::chrono::milliseconds window_;
  struct Counters {
    std::optional<std::uint64_t> total;
    std::optional<TimePoint> lastRise;
  };
  std::map<int, Counters> counters_;
  // By (device, type): a repeated claim moves its time, it does not queue another.
  std::map<std::pair<int, std::string>, HardwareErrorClaim> pending_;
};

class HardwareErrorProof {
 public:
  using OnConfirmed = std::function<void(const HardwareErrorClaim& claim)>;
  using OnUnproven = std::function<void(const HardwareErrorClaim& claim)>;
  // `counterFiles`: per device (by index), the paths of its firmware ECC counters (missing files
  // read as 0: inf1 has none). Reads them at once for the baseline, then every `interval`.
  HardwareErrorProof(std::vector<std::vector<std::string>> counterFiles,
                     std::chrono::milliseconds window, std::chrono::milliseconds interval,
                     OnConfirmed onConfirmed, OnUnproven onUnproven = {});
  ~HardwareErrorProof();
  HardwareErrorProof(const HardwareErrorProof&) = delete;
  HardwareErrorProof& operator=(const HardwareErrorProof&) = delete;

  // A claim on `device`: true when the counters confirm it already (the caller acts on it);
  // otherwise it waits, and onConfirmed is called from this object's thread if a rise within the
  // window confirms it.
  bool claim(int device, const std::string& type);

 private:
  void readAll();
  void run(std::stop_token stop);

  const std::vector<std::vector<std::string>> counterFiles_;
  const std::chrono::milliseconds interval_;
  OnConfirmed onConfirmed_;
  OnUnproven onUnproven_;
  std::mutex mutex_;
  ClaimEvidence evidence_;  // under mutex_
  std::jthread thread_;
};

}  // namespace torus::health
