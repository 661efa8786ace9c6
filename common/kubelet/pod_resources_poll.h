// PodResourcesPoll: one thread that Lists kubelet's pod-resources every interval, soon after a
// poke, and hands each answer to its owner. When the socket is missing it logs one WARN saying
// what is degraded meanwhile, keeps trying, and logs INFO when kubelet answers again. Both kubelet
// adapters poll through this one loop; each turns the rows into its own types.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "common/base/log.h"
#include "common/kubelet/allocation_window.h"
#include "common/kubelet/pod_resources_client.h"

namespace torus::kubelet {

class PodResourcesPoll {
 public:
  struct Options {
    std::string socket;
    std::chrono::milliseconds interval{10000};
    log::Component component = log::Component::kPlugin;
    // Completes "cannot read kubelet's pod-resources; …" in the WARN: what the user loses.
    std::string whileUnreachable;
    // When set, no List is sent while kubelet may hold a device-plugin allocation in flight.
    AllocationWindow* window = nullptr;
  };
  // `answered` runs on the poll's thread after every successful List; true asks for the next
  // List soon (something kubelet is still tearing down). It must not destroy this object.
  PodResourcesPoll(Options options, std::function<bool(PodResourcesRows&&)> answered);
  ~PodResourcesPoll();
  PodResourcesPoll(const PodResourcesPoll&) = delete;
  PodResourcesPoll& operator=(const PodResourcesPoll&) = delete;

  // After an Allocate: kubelet records it once the call has returned, so List a little later.
  void pokeAfterAllocate();
  // A pod ended: List at once, and every 200 ms for 2 s, until kubelet has torn it down (it
  // lists the pod, and counts its ids in use, until then).
  void pokeNow();
  // Waits until the first List has been tried (its answer handed over, if kubelet answered) or
  // `timeout` passed; true when kubelet answered it.
  bool waitForFirstList(std::chrono::milliseconds timeout);
  // One List now, on the caller's thread, once no allocation is in flight: waits for that at most
  // `wait`, and answers UNAVAILABLE when it did not come (the List is not sent). The answer is
  // the caller's alone (not handed to `answered`).
  Result<PodResourcesRows> listNow(std::chrono::milliseconds wait);

 private:
  void run(std::stop_token stop);
  // One List, sent once no allocation is in flight (waiting at most `limit`; UNAVAILABLE past
  // it); counts and logs a List held back.
  Result<PodResourcesRows> listWhenSafe(std::stop_token stop, std::chrono::milliseconds limit);

  const Options options_;
  PodResourcesClient client_;
  std::function<bool(PodResourcesRows&&)> answered_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  bool poked_ = false;
  bool pokedNow_ = false;
  bool firstTried_ = false;
  bool firstAnswered_ = false;
  std::chrono::steady_clock::time_point fastUntil_{};
  std::jthread thread_;  // last: it starts once everything above is built
};

}  // namespace torus::kubelet
