// ClaimPreparer: the node side of a ResourceClaim, the ClaimDriver behind kubelet's DRA plumbing.
// Prepare resolves the claim's allocation (as the plumbing read it from the API) on this node,
// refuses a chip or core another prepared claim holds, writes the CDI spec and records the claim in
// the checkpoint before answering; unprepare removes the spec, forgets the claim and queues its
// chips for a reset, which a background worker does (a reset first looks through /proc for holders:
// a millisecond or more that kubelet's pod teardown need not wait for). A chip is never handed to a
// new claim before its reset: prepare resets a still-pending chip itself, and fails (kubelet
// retries) while that reset fails; a chip whose background reset failed waits for such a prepare.
// Unprepare waits (refuses; kubelet retries) while a pod the claim was prepared for still has a
// process on the node (claim_consumers.h). Both calls are idempotent, as kubelet retries them, and
// the checkpoint (claims and pending resets) lets a restarted driver lose nothing and prepare
// nothing twice.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"
#include "common/kubelet/node_view.h"
#include "dra-driver/cdi.h"
#include "dra-driver/checkpoint.h"
#include "dra-driver/claim_consumers.h"
#include "dra-driver/kubelet/claim_driver.h"

namespace torus::dra {

// Reads a ResourceClaim by namespace and name (the API in production).
using ClaimReader = ObjectReader;
// Reads a Pod the same way: a claim with several requests is resolved per consuming container,
// so that each container's environment names exactly the cores of the devices it gets.
using PodReader = ClaimReader;

struct PreparerOptions {
  std::string pool;  // this node's pool name (the node name)
  std::filesystem::path cdiRoot = "/var/run/cdi";
  std::filesystem::path checkpointFile;
  // Whether a pod the claim was prepared for still has a process on the node; without it, a
  // claim is given back whenever kubelet says (claim_consumers.h).
  PodStillRuns podStillRuns;
};

class ClaimPreparer final : public ClaimDriver {
 public:
  // Loads the checkpoint, removes CDI specs of claims it does not list (a crash between writing a
  // spec and recording the claim leaves one behind), writes missing specs of claims it does list
  // (a reboot empties /var/run), and starts resetting the chips it lists as pending.
  // Without `pods`, every device of a claim shows a container the whole claim's cores.
  static Result<std::unique_ptr<ClaimPreparer>> create(PreparerOptions options,
                                                       kubelet::NodeView& node,
                                                       PodReader pods = nullptr);
  ClaimPreparer(PreparerOptions options, kubelet::NodeView& node, PodReader pods,
                DriverState state);
  ~ClaimPreparer();
  ClaimPreparer(const ClaimPreparer&) = delete;
  ClaimPreparer& operator=(const ClaimPreparer&) = delete;

  Result<std::vector<PreparedDevice>> prepare(const ClaimRef& claim,
                                              const nlohmann::json& object) override;
  // The NeuronUltraServerWorkload ("namespace/name") this node is reserved for, "" for none.
  // Until `known`, prepare refuses (kubelet retries): a driver that has not read the
  // reservations yet cannot tell a workload's claim from anyone else's.
  void setReservation(bool known, std::string workloadRef);
  Result<void> unprepare(const ClaimRef& claim) override;
  // Claims prepared here that the API no longer has (or has under another UID) on two sweeps in
  // a row: kubelet unprepares a claim before its pod goes and the claim after it, so such an
  // entry is one kubelet will never unprepare (its state lost), and would hold its cores for
  // ever. They are unprepared here. `claims` reads them (the API in production). Returns how
  // many; the driver runs it every ten resyncs.
  int forgetClaimsGoneFromApi(const ClaimReader& claims);

  PreparedClaims prepared() const;
  topology::CoreSet heldCores() const;
  // Chips given back and not reset yet (those whose reset failed too).
  topology::DeviceSet pendingResets() const;
  // Waits until the worker has tried every queued reset (tests, benchmarks); false on timeout.
  bool waitForResets(std::chrono::milliseconds timeout) const;

 private:
  std::vector<PreparedDevice> answerOf(const ResolvedClaim& claim) const;
  // The containers of the pods the claim is reserved for that use it (see claimViews).
  Result<std::vector<ContainerView>> viewsOf(const nlohmann::json& claim) const;
  // Writes the claim's CDI spec when it is missing (a reboot emptied the tmpfs).
  Result<void> ensureSpec(const ResolvedClaim& claim) const;
  topology::CoreSet heldCoresExcept(const std::string& uid) const;  // caller holds mutex_
  // The checks before a claim's chips are handed out (caller holds mutex_): no core another
  // prepared claim holds, and the node's UltraServer reservation.
  Result<void> refuseOverlapLocked(const ClaimRef& ref, const ResolvedClaim& claim) const;
  Result<void> checkReservationLocked(const ClaimRef& ref, const ResolvedClaim& claim,
                                      const nlohmann::json& object) const;
  // Resets chips given back so recently that the worker has not reset them yet, outside the lock
  // (`lock` holds mutex_ before and after).
  Result<void> resetGivenBack(std::unique_lock<std::mutex>& lock, const ClaimRef& ref,
                              const ResolvedClaim& claim, const topology::Node& node);
  // Resets `chips` (not under `inUse`), counts and logs the result; caller holds mutex_ or is
  // the worker between its two critical sections.
  Result<void> reset(const topology::DeviceSet& chips, const topology::CoreSet& inUse);
  void resetInBackground(std::stop_token stop);

  PreparerOptions options_;
  kubelet::NodeView& node_;
  PodReader pods_;
  mutable std::mutex mutex_;
  mutable std::condition_variable_any changed_;
  DriverState state_;
  bool reservationKnown_ = true;  // false from setReservation(false, ...) until it is read
  std::map<std::string, int> goneFromApi_;  // claim UID -> sweeps in a row that missed it
  std::string reservedFor_;
  topology::DeviceSet resetting_;  // being reset outside the lock (the worker or a prepare)
  // Pending chips whose reset by the worker failed: it leaves them to the next prepare that
  // wants them (which tries again and fails while the reset does), instead of retrying in a loop.
  topology::DeviceSet failedResets_;
  std::jthread resetWorker_;
};

}  // namespace torus::dra
