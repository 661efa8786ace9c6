#include "dra-driver/claim_preparer.h"

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/contracts/neuron_names.h"
#include "common/kube/object_fields.h"
#include "common/metrics/event_counters.h"
#include "dra-driver/ultraserver_reservation.h"

namespace torus::dra {

Result<std::unique_ptr<ClaimPreparer>> ClaimPreparer::create(PreparerOptions options,
                                                             kubelet::NodeView& node,
                                                             PodReader pods) {
  auto loaded = loadCheckpoint(options.checkpointFile);
  if (!loaded) {
    // Starting without it would forget which chips prepared claims hold, and hand them out.
    return makeError(loaded.error().code,
                     loaded.error().message +
                         "; the driver cannot tell which chips its prepared claims hold, so it "
                         "does not start. Drain the node (kubectl drain), delete " +
                         options.checkpointFile.string() +
                         " on it, and restart this agent pod (docs/troubleshooting.md)");
  }
  const PreparedClaims* prepared = &loaded->claims;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options.cdiRoot, ec)) {
    const std::optional<std::string> uid = claimUidOfSpec(entry.path());
    if (!uid || prepared->contains(*uid)) continue;
    TORUS_LOG(Warn, Dra, "removing a CDI spec of a claim the checkpoint does not list",
              {"file", entry.path().string()});
    std::filesystem::remove(entry.path(), ec);
  }
  if (!prepared->empty()) {
    TORUS_LOG(Info, Dra, "prepared claims restored from the checkpoint",
              {"claims", static_cast<std::int64_t>(prepared->size())},
              {"file", options.checkpointFile.string()});
  }
  auto preparer = std::make_unique<ClaimPreparer>(std::move(options), node, std::move(pods),
                                                  std::move(*loaded));
  // CDI specs live on a tmpfs: after a reboot kubelet prepares its claims again and the runtime
  // needs their specs, which only the checkpoint still knows.
  for (const auto& [uid, claim] : preparer->state_.claims) {
    TORUS_RETURN_IF_ERROR(preparer->ensureSpec(claim), "restoring CDI specs");
  }
  if (!preparer->state_.pendingReset.empty()) {
    TORUS_LOG(Info, Dra, "chips given back before the restart are reset first",
              {"chips", preparer->state_.pendingReset.toRangeString()});
  }
  preparer->resetWorker_ =
      std::jthread([raw = preparer.get()](std::stop_token stop) { raw->resetInBackground(stop); });
  return preparer;
}

Result<void> ClaimPreparer::ensureSpec(const ResolvedClaim& claim) const {
  if (std::filesystem::exists(cdiSpecPath(options_.cdiRoot, claim.ref.uid))) return okResult();
  const kubelet::NodeSnapshot snapshot = node_.snapshot();
  TORUS_LOG(Info, Dra, "writing the CDI spec of a prepared claim again", {"claim", claim.ref.key()},
            {"uid", claim.ref.uid});
  return writeCdiSpec(options_.cdiRoot, claim.ref.uid,
                      cdiSpec(claim, snapshot.node, snapshot.devRoot));
}

ClaimPreparer::ClaimPreparer(PreparerOptions options, kubelet::NodeView& node, PodReader pods,
                             DriverState state)
    : options_(std::move(options)), node_(node), pods_(std::move(pods)), state_(std::move(state)) {}

ClaimPreparer::~ClaimPreparer() {
  if (resetWorker_.joinable()) {
    resetWorker_.request_stop();
    changed_.notify_all();
    resetWorker_.join();  // what is still pending stays in the checkpoint for the next start
  }
}

Result<void> ClaimPreparer::reset(const topology::DeviceSet& chips,
                                  const topology::CoreSet& inUse) {
  const topology::Node node = node_.snapshot().node;
  Result<void> done = node_.prepareCores(node.coresOfDevices(chips), inUse);
  metrics::processCounters().add(metrics::names::kReleaseResetsTotal,
                                 {{"result", done ? "ok" : "failed"}});
  if (!done) {
    // The chip stays pending: no claim gets it until a reset succeeds (its health reports the
    // failure too, and taints it).
    TORUS_LOG(Error, Dra, "reset of chips a claim gave back failed; they are not handed out",
              {"chips", chips.toRangeString()}, {"error", done.error().message});
  }
  return done;
}

void ClaimPreparer::resetInBackground(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    // Not the chips a prepare is resetting itself.
    changed_.wait(lock, stop,
                  [this] { return !(state_.pendingReset - failedResets_ - resetting_).empty(); });
    if (stop.stop_requested()) break;
    const topology::DeviceSet batch = state_.pendingReset - failedResets_ - resetting_;
    const topology::CoreSet inUse = heldCoresExcept("");
    resetting_ |= batch;
    lock.unlock();
    const Result<void> done = reset(batch, inUse);
    lock.lock();
    if (done) {
      state_.pendingReset -= batch;
      state_.unresetCores -= node_.snapshot().node.coresOfDevices(batch);
    } else {
      failedResets_ |= batch;
    }
    resetting_ -= batch;
    // Not synced: lost in a crash, these resets are only done once more.
    if (auto saved = saveCheckpoint(options_.checkpointFile, state_, Durability::kAtomicOnly);
        !saved) {
      TORUS_LOG(Warn, Dra, "cannot record finished resets; a restart would reset them again",
                {"error", saved.error().message});
    }
    changed_.notify_all();
  }
}

std::vector<PreparedDevice> ClaimPreparer::answerOf(const ResolvedClaim& claim) const {
  std::vector<PreparedDevice> answer;
  const std::vector<CdiDeviceIds> ids = cdiDeviceIds(claim);
  for (std::size_t i = 0; i < claim.devices.size(); ++i) {
    answer.push_back({claim.devices[i].requests, claim.pool, claim.devices[i].name, ids[i].ids});
  }
  return answer;
}

Result<std::vector<ContainerView>> ClaimPreparer::viewsOf(const nlohmann::json& claim) const {
  std::vector<ContainerView> views;
  const std::string nameSpace = kube::stringAt(claim, {"metadata", "namespace"});
  const std::string name = kube::stringAt(claim, {"metadata", "name"});
  for (const ReservedPod& consumer : reservedPods(claim)) {
    auto pod = pods_(nameSpace, consumer.name);
    if (!pod && pod.error().code == ErrorCode::kNotFound) continue;  // gone: no container to serve
    if (!pod) {
      return std::move(pod).error().withContext("reading pod " + nameSpace + "/" + consumer.name);
    }
    if (kube::stringAt(*pod, {"metadata", "uid"}) != consumer.uid) continue;
    for (ContainerView& view : claimViews(*pod, name))
      views.push_back(std::move(view));
  }
  return views;
}

topology::CoreSet ClaimPreparer::heldCoresExcept(const std::string& uid) const {
  topology::CoreSet held;
  for (const auto& [other, claim] : state_.claims) {
    if (other != uid) held |= claim.cores;
  }
  return held;
}

void ClaimPreparer::setReservation(bool known, std::string workloadRef) {
  std::lock_guard lock(mutex_);
  if (known && (reservedFor_ != workloadRef || !reservationKnown_)) {
    TORUS_LOG(Info, Dra, "UltraServer reservation of this node",
              {"workload", workloadRef.empty() ? std::string("none") : workloadRef});
  }
  reservationKnown_ = known;
  reservedFor_ = std::move(workloadRef);
}

Result<void> ClaimPreparer::refuseOverlapLocked(const ClaimRef& ref,
                                                const ResolvedClaim& claim) const {
  // The scheduler never allocates one chip twice; a second line of defence costs nothing and
  // keeps a stale slice, a hand-edited claim or a driver bug from sharing a chip.
  for (const auto& [uid, other] : state_.claims) {
    const topology::CoreSet overlap = other.cores & claim.cores;
    if (!overlap.empty()) {
      metrics::processCounters().add(metrics::names::kDraOverlapsRefusedTotal, {});
      return makeError(ErrorCode::kFailedPrecondition,
                       "claim " + ref.key() + ": cores " + overlap.toRangeString() +
                           " are held by prepared claim " + other.ref.key() + " (" + uid + ")");
    }
  }
  return okResult();
}

Result<void> ClaimPreparer::checkReservationLocked(const ClaimRef& ref, const ResolvedClaim& claim,
                                                   const nlohmann::json& object) const {
  if (claim.chips.empty()) return okResult();
  if (!reservationKnown_) {
    return makeError(ErrorCode::kUnavailable,
                     "claim " + ref.key() +
                         ": the driver has not read this node's UltraServer reservations yet "
                         "(NeuronUltraServer objects); kubelet retries");
  }
  std::string refusal =
      reservationRefusal(reservedFor_, kube::annotationOf(object, contracts::kWorkloadAnnotation),
                         ref.nameSpace, ref.name, options_.pool, madeFromTemplateForPod(object));
  if (refusal.empty()) return okResult();
  return makeError(ErrorCode::kFailedPrecondition, std::move(refusal));
}

Result<void> ClaimPreparer::resetGivenBack(std::unique_lock<std::mutex>& lock, const ClaimRef& ref,
                                           const ResolvedClaim& claim, const topology::Node& node) {
  // Outside the lock, as the worker's: a slow reset (a real chip takes seconds) must not hold up
  // every other prepare and unprepare on the node. Its chips are marked as being reset, so a
  // retry of this claim or the worker waits for them.
  if (const topology::DeviceSet dirty = claim.chips & state_.pendingReset; !dirty.empty()) {
    resetting_ |= dirty;
    const topology::CoreSet inUse = heldCoresExcept("");
    lock.unlock();
    const Result<void> done = reset(dirty, inUse);
    lock.lock();
    resetting_ -= dirty;
    changed_.notify_all();
    if (!done) {
      failedResets_ |= dirty;
      return makeError(ErrorCode::kUnavailable,
                       "claim " + ref.key() + ": chips " + dirty.toRangeString() +
                           " were given back by their last claim and resetting them failed (" +
                           done.error().message +
                           "); the claim is prepared once a reset succeeds (kubelet retries)");
    }
    state_.pendingReset -= dirty;
    state_.unresetCores -= node.coresOfDevices(dirty);
    failedResets_ -= dirty;
  }
  return okResult();
}

Result<std::vector<PreparedDevice>> ClaimPreparer::prepare(const ClaimRef& ref,
                                                           const nlohmann::json& object) {
  const std::vector<std::string> consumers = reservedPodUids(object);
  {
    std::lock_guard lock(mutex_);
    if (const auto found = state_.claims.find(ref.uid); found != state_.claims.end()) {
      // Kubelet retried (or re-prepares after a reboot, or for another pod sharing the claim):
      // the same answer, nothing redone but to remember a new consumer.
      TORUS_RETURN_IF_ERROR(ensureSpec(found->second), "claim " + ref.key());
      if (addConsumers(found->second.consumerPods, consumers)) {
        TORUS_RETURN_IF_ERROR(saveCheckpoint(options_.checkpointFile, state_),
                              "claim " + ref.key() + ": recording its pods in the checkpoint");
      }
      return answerOf(found->second);
    }
  }
  const kubelet::NodeSnapshot snapshot = node_.snapshot();
  auto resolved = resolveClaim(object, ref, options_.pool, snapshot.node);
  if (!resolved) return std::move(resolved).error();
  if (pods_ && baseRequestsOf(*resolved).size() > 1) {
    // Containers may each name some of the requests: each device's environment must show what
    // the containers that get it get.
    auto views = viewsOf(object);
    if (!views) return std::move(views).error().withContext("claim " + ref.key());
    TORUS_RETURN_IF_ERROR(assignVisibleCores(*resolved, *views, snapshot.node),
                          "claim " + ref.key());
  }
  std::unique_lock lock(mutex_);
  // A chip the worker is resetting right now is not handed out until it is done.
  changed_.wait(lock, [&] { return (resetting_ & resolved->chips).empty(); });
  if (const auto found = state_.claims.find(ref.uid); found != state_.claims.end()) {
    return answerOf(found->second);
  }
  if (auto checked = refuseOverlapLocked(ref, *resolved); !checked)
    return std::move(checked).error();
  if (auto checked = checkReservationLocked(ref, *resolved, object); !checked)
    return std::move(checked).error();
  resolved->chips.forEach([&](int chip) {
    const topology::Device& device = snapshot.node.devices[static_cast<std::size_t>(chip)];
    if (!device.health.healthy) {
      TORUS_LOG(Warn, Dra, "preparing an unhealthy chip (the claim tolerates its taint)",
                {"claim", ref.key()}, {"device", chip}, {"reason", device.health.reason});
    }
  });
  if (auto checked = resetGivenBack(lock, ref, *resolved, snapshot.node); !checked)
    return std::move(checked).error();
  resolved->consumerPods = consumers;
  // Cores whose last tenant shared the chip with a claim that still runs: never reset since.
  const topology::CoreSet unreset = resolved->cores & state_.unresetCores;
  TORUS_RETURN_IF_ERROR(
      writeCdiSpec(options_.cdiRoot, ref.uid, cdiSpec(*resolved, snapshot.node, snapshot.devRoot)),
      "claim " + ref.key());
  state_.claims.emplace(ref.uid, *resolved);
  state_.unresetCores -= unreset;
  if (auto saved = saveCheckpoint(options_.checkpointFile, state_); !saved) {
    state_.claims.erase(ref.uid);
    state_.unresetCores |= unreset;
    (void)removeCdiSpec(options_.cdiRoot, ref.uid);
    return std::move(saved).error().withContext("claim " + ref.key() +
                                                ": recording it in the checkpoint");
  }
  if (!unreset.empty()) {
    TORUS_LOG(Warn, Dra,
              "cores handed on without a reset: their chip still served another claim when they "
              "were given back (a reset wipes a whole chip)",
              {"claim", ref.key()}, {"cores", unreset.toRangeString()});
    metrics::processCounters().add(metrics::names::kDraUnresetCoresTotal, {},
                                   static_cast<double>(unreset.size()));
  }
  TORUS_LOG(Info, Dra, "claim prepared", {"claim", ref.key()}, {"uid", ref.uid},
            {"chips", resolved->chips.toRangeString()}, {"cores", resolved->cores.toRangeString()},
            {"lnc", resolved->lnc});
  return answerOf(*resolved);
}

Result<void> ClaimPreparer::unprepare(const ClaimRef& ref) {
  std::vector<std::string> consumers;
  {
    std::lock_guard lock(mutex_);
    const auto found = state_.claims.find(ref.uid);
    if (found == state_.claims.end()) return okResult();  // never prepared here, or already undone
    consumers = found->second.consumerPods;
  }
  // Outside the lock: a pass over /proc takes a millisecond or more.
  if (auto stopped = checkConsumersStopped(ref, consumers, options_.podStillRuns); !stopped)
    return std::move(stopped).error();
  std::lock_guard lock(mutex_);
  const auto found = state_.claims.find(ref.uid);
  if (found == state_.claims.end()) return okResult();  // a concurrent retry got here first
  const ResolvedClaim claim = found->second;
  TORUS_RETURN_IF_ERROR(removeCdiSpec(options_.cdiRoot, ref.uid), "claim " + ref.key());
  const topology::DeviceSet before = state_.pendingReset;
  const topology::CoreSet unresetBefore = state_.unresetCores;
  state_.claims.erase(found);
  // A reset wipes a whole chip: not one another claim still has cores on.
  const topology::Node node = node_.snapshot().node;
  const topology::DeviceSet toReset = claim.chips - node.devicesOfCores(heldCoresExcept(""));
  state_.pendingReset |= toReset;
  state_.unresetCores |= claim.cores - node.coresOfDevices(toReset);
  if (auto saved = saveCheckpoint(options_.checkpointFile, state_); !saved) {
    state_.claims.emplace(ref.uid, claim);
    state_.pendingReset = before;
    state_.unresetCores = unresetBefore;
    return std::move(saved).error().withContext("claim " + ref.key() +
                                                ": recording the release in the checkpoint");
  }
  changed_.notify_all();
  TORUS_LOG(Info, Dra, "claim unprepared; its chips are reset in the background",
            {"claim", ref.key()}, {"uid", ref.uid}, {"chips", claim.chips.toRangeString()});
  return okResult();
}

int ClaimPreparer::forgetClaimsGoneFromApi(const ClaimReader& claims) {
  std::vector<ClaimRef> refs;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [uid, claim] : state_.claims)
      refs.push_back(claim.ref);
  }
  int forgotten = 0;
  for (const ClaimRef& ref : refs) {
    auto object = claims(ref.nameSpace, ref.name);  // outside the lock: prepares go on
    const bool gone = object ? kube::stringAt(*object, {"metadata", "uid"}) != ref.uid
                             : object.error().code == ErrorCode::kNotFound;
    bool forget = false;
    {
      std::lock_guard lock(mutex_);
      if (!gone) {
        goneFromApi_.erase(ref.uid);  // there, or the API could not say: keep it
        continue;
      }
      forget = ++goneFromApi_[ref.uid] >= 2;
    }
    if (!forget) continue;
    TORUS_LOG(Warn, Dra,
              "a prepared claim is gone from the API and kubelet never unprepared it; "
              "unpreparing it so its chips are reset and handed out again",
              {"claim", ref.key()}, {"uid", ref.uid});
    if (auto done = unprepare(ref); !done) {
      TORUS_LOG(Warn, Dra, "could not unprepare a claim gone from the API; trying again later",
                {"claim", ref.key()}, {"error", done.error().message});
      continue;
    }
    std::lock_guard lock(mutex_);
    goneFromApi_.erase(ref.uid);
    ++forgotten;
  }
  return forgotten;
}

PreparedClaims ClaimPreparer::prepared() const {
  std::lock_guard lock(mutex_);
  return state_.claims;
}

topology::DeviceSet ClaimPreparer::pendingResets() const {
  std::lock_guard lock(mutex_);
  return state_.pendingReset | resetting_;
}

bool ClaimPreparer::waitForResets(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [this] {
    return (state_.pendingReset - failedResets_).empty() && resetting_.empty();
  });
}

topology::CoreSet ClaimPreparer::heldCores() const {
  std::lock_guard lock(mutex_);
  return heldCoresExcept("");
}

}  // namespace torus::dra
