#include "dra-driver/claim_preparer.h"

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/metrics/event_counters.h"

namespace torus::dra {

Result<std::unique_ptr<ClaimPreparer>> ClaimPreparer::create(PreparerOptions options,
                                                             plugin::NodeView& node,
                                                             ClaimReader reader) {
  auto prepared = loadCheckpoint(options.checkpointFile);
  if (!prepared) return std::move(prepared).error();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options.cdiRoot, ec)) {
    const std::string file = entry.path().filename().string();
    if (!file.starts_with("neuron.aws.com-") || !file.ends_with(".json")) continue;
    const std::string uid = file.substr(15, file.size() - 15 - 5);
    if (prepared->contains(uid)) continue;
    TORUS_LOG(Warn, Dra, "removing a CDI spec of a claim the checkpoint does not list",
              {"file", entry.path().string()});
    std::filesystem::remove(entry.path(), ec);
  }
  if (!prepared->empty()) {
    TORUS_LOG(Info, Dra, "prepared claims restored from the checkpoint",
              {"claims", static_cast<std::int64_t>(prepared->size())},
              {"file", options.checkpointFile.string()});
  }
  auto preparer = std::make_unique<ClaimPreparer>(std::move(options), node, std::move(reader),
                                                  std::move(*prepared));
  // CDI specs live on a tmpfs: after a reboot kubelet prepares its claims again and the runtime
  // needs their specs, which only the checkpoint still knows.
  for (const auto& [uid, claim] : preparer->prepared_) {
    TORUS_RETURN_IF_ERROR(preparer->ensureSpec(claim), "restoring CDI specs");
  }
  return preparer;
}

Result<void> ClaimPreparer::ensureSpec(const ResolvedClaim& claim) const {
  if (std::filesystem::exists(cdiSpecPath(options_.cdiRoot, claim.ref.uid))) return okResult();
  const plugin::NodeSnapshot snapshot = node_.snapshot();
  TORUS_LOG(Info, Dra, "writing the CDI spec of a prepared claim again",
            {"claim", claim.ref.nameSpace + "/" + claim.ref.name}, {"uid", claim.ref.uid});
  return writeCdiSpec(options_.cdiRoot, claim.ref.uid,
                      cdiSpec(claim, snapshot.node, snapshot.devRoot));
}

ClaimPreparer::ClaimPreparer(PreparerOptions options, plugin::NodeView& node, ClaimReader reader,
                             PreparedClaims prepared)
    : options_(std::move(options)),
      node_(node),
      reader_(std::move(reader)),
      prepared_(std::move(prepared)) {}

std::vector<PreparedDevice> ClaimPreparer::answerOf(const ResolvedClaim& claim) const {
  std::vector<PreparedDevice> answer;
  const std::vector<CdiDeviceIds> ids = cdiDeviceIds(claim);
  for (std::size_t i = 0; i < claim.devices.size(); ++i) {
    answer.push_back({claim.devices[i].requests, claim.pool, claim.devices[i].name, ids[i].ids});
  }
  return answer;
}

topology::CoreSet ClaimPreparer::heldCoresExcept(const std::string& uid) const {
  topology::CoreSet held;
  for (const auto& [other, claim] : prepared_) {
    if (other != uid) held |= claim.cores;
  }
  return held;
}

Result<std::vector<PreparedDevice>> ClaimPreparer::prepare(const ClaimRef& ref) {
  {
    std::lock_guard lock(mutex_);
    if (const auto found = prepared_.find(ref.uid); found != prepared_.end()) {
      // Kubelet retried (or re-prepares after a reboot): the same answer, nothing redone.
      TORUS_RETURN_IF_ERROR(ensureSpec(found->second), "claim " + ref.nameSpace + "/" + ref.name);
      return answerOf(found->second);
    }
  }
  // The API read happens outside the lock: other claims prepare meanwhile.
  auto object = reader_(ref.nameSpace, ref.name);
  if (!object) {
    return std::move(object).error().withContext("reading claim " + ref.nameSpace + "/" + ref.name);
  }
  const plugin::NodeSnapshot snapshot = node_.snapshot();
  auto resolved = resolveClaim(*object, ref, options_.pool, snapshot.node);
  if (!resolved) return std::move(resolved).error();

  std::lock_guard lock(mutex_);
  if (const auto found = prepared_.find(ref.uid); found != prepared_.end()) {
    return answerOf(found->second);
  }
  // The scheduler never allocates one chip twice; a second line of defence costs nothing and
  // keeps a stale slice, a hand-edited claim or a driver bug from sharing a chip.
  for (const auto& [uid, other] : prepared_) {
    const topology::CoreSet overlap = other.cores & resolved->cores;
    if (!overlap.empty()) {
      return makeError(ErrorCode::kFailedPrecondition,
                       "claim " + ref.nameSpace + "/" + ref.name + ": cores " +
                           overlap.toRangeString() + " are held by prepared claim " +
                           other.ref.nameSpace + "/" + other.ref.name + " (" + uid + ")");
    }
  }
  resolved->chips.forEach([&](int chip) {
    const topology::Device& device = snapshot.node.devices[static_cast<std::size_t>(chip)];
    if (!device.health.healthy) {
      TORUS_LOG(Warn, Dra, "preparing an unhealthy chip (the claim tolerates its taint)",
                {"claim", ref.nameSpace + "/" + ref.name}, {"device", chip},
                {"reason", device.health.reason});
    }
  });
  TORUS_RETURN_IF_ERROR(
      writeCdiSpec(options_.cdiRoot, ref.uid, cdiSpec(*resolved, snapshot.node, snapshot.devRoot)),
      "claim " + ref.nameSpace + "/" + ref.name);
  prepared_.emplace(ref.uid, *resolved);
  if (auto saved = saveCheckpoint(options_.checkpointFile, prepared_); !saved) {
    prepared_.erase(ref.uid);
    (void)removeCdiSpec(options_.cdiRoot, ref.uid);
    return std::move(saved).error().withContext("claim " + ref.nameSpace + "/" + ref.name +
                                                ": recording it in the checkpoint");
  }
  TORUS_LOG(Info, Dra, "claim prepared", {"claim", ref.nameSpace + "/" + ref.name},
            {"uid", ref.uid}, {"chips", resolved->chips.toRangeString()},
            {"cores", resolved->cores.toRangeString()}, {"lnc", resolved->lnc});
  return answerOf(*resolved);
}

Result<void> ClaimPreparer::unprepare(const ClaimRef& ref) {
  std::lock_guard lock(mutex_);
  const auto found = prepared_.find(ref.uid);
  if (found == prepared_.end()) return okResult();  // never prepared here, or already undone
  const ResolvedClaim claim = found->second;
  // A reset wipes a whole chip: never under another claim's cores.
  const Result<void> reset = node_.prepareCores(claim.cores, heldCoresExcept(ref.uid));
  metrics::processCounters().add(metrics::names::kReleaseResetsTotal,
                                 {{"result", reset ? "ok" : "failed"}});
  if (!reset) {
    // The chip's health reports a failed reset (and taints it); the claim is released anyway,
    // or kubelet would retry an unprepare that can never succeed.
    TORUS_LOG(Error, Dra, "reset after the claim failed", {"claim", ref.nameSpace + "/" + ref.name},
              {"error", reset.error().message});
  }
  TORUS_RETURN_IF_ERROR(removeCdiSpec(options_.cdiRoot, ref.uid),
                        "claim " + ref.nameSpace + "/" + ref.name);
  prepared_.erase(found);
  if (auto saved = saveCheckpoint(options_.checkpointFile, prepared_); !saved) {
    prepared_.emplace(ref.uid, claim);
    return std::move(saved).error().withContext("claim " + ref.nameSpace + "/" + ref.name +
                                                ": recording the release in the checkpoint");
  }
  TORUS_LOG(Info, Dra, "claim unprepared", {"claim", ref.nameSpace + "/" + ref.name},
            {"uid", ref.uid}, {"chips", claim.chips.toRangeString()});
  return okResult();
}

PreparedClaims ClaimPreparer::prepared() const {
  std::lock_guard lock(mutex_);
  return prepared_;
}

topology::CoreSet ClaimPreparer::heldCores() const {
  std::lock_guard lock(mutex_);
  return heldCoresExcept("");
}

}  // namespace torus::dra
