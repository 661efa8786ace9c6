// PodResourcesPoller: asks kubelet's pod-resources API (List) which of our ids containers hold,
// every interval, shortly after each Allocate (pokeAfterAllocate) and at once when a pod on the
// node ended (pokeNow), and feeds the answer to the AssignmentTracker. When the socket is missing
// it logs one WARN and keeps trying; the tracker then only knows our own recent Allocate calls.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "common/base/result.h"
#include "device-plugin/assignments.h"
#include "device-plugin/node_view.h"

namespace torus::plugin {

// A container that uses a ResourceClaim with devices of one DRA driver's pool, as kubelet's
// pod-resources lists it (dynamic_resources; GA since Kubernetes 1.36, beta on by default 1.34).
struct ClaimHolder {
  std::string claimNamespace;
  std::string claimName;
  std::string podNamespace;
  std::string pod;
  std::string container;
  bool operator==(const ClaimHolder&) const = default;
};

// A client of kubelet's pod-resources socket; the channel is made once and reconnects by itself.
class PodResourcesClient {
 public:
  explicit PodResourcesClient(std::string socket);
  ~PodResourcesClient();
  // One List call: what each of our resources has handed to running containers.
  Result<Assignments> list(const topology::Node& node, std::chrono::milliseconds timeout);
  // One List call: the containers using claims with devices of `driver` in `pool`.
  Result<std::vector<ClaimHolder>> listClaimHolders(std::string_view driver, std::string_view pool,
                                                    std::chrono::milliseconds timeout);

 private:
  struct Lister;
  std::string socket_;
  std::unique_ptr<Lister> lister_;
};

class PodResourcesPoller {
 public:
  // `answered` runs after every successful List, once the tracker holds its answer; true asks
  // for the next List soon (a pod that ended is still being torn down).
  PodResourcesPoller(std::string socket, std::chrono::milliseconds interval, NodeView& node,
                     AssignmentTracker& tracker, std::function<bool()> answered = {});
  ~PodResourcesPoller();
  PodResourcesPoller(const PodResourcesPoller&) = delete;
  PodResourcesPoller& operator=(const PodResourcesPoller&) = delete;

  // After an Allocate: kubelet records it once the call has returned, so List a little later.
  void pokeAfterAllocate();
  // A pod ended: read at once, and every 200 ms for 2 s, until kubelet has torn it down (it
  // lists the pod, and counts its ids in use, until then); the ids wait for that.
  void pokeNow();

 private:
  void run(std::stop_token stop);

  PodResourcesClient client_;
  const std::chrono::milliseconds interval_;
  NodeView& node_;
  AssignmentTracker& tracker_;
  std::function<bool()> answered_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  bool poked_ = false;
  bool pokedNow_ = false;
  std::chrono::steady_clock::time_point fastUntil_{};
  std::jthread thread_;
};

}  // namespace torus::plugin
