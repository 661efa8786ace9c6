// The driver's memory of prepared claims and of chips awaiting their reset, on disk: a restarted
// driver (new pod, crash, upgrade) reads it back and knows every claim kubelet believes prepared,
// so it neither prepares a claim twice, nor hands a chip another claim holds, nor hands out a
// chip that was never reset. One JSON file, replaced atomically on each change.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "common/base/file_io.h"
#include "common/base/result.h"
#include "dra-driver/claim_allocation.h"

namespace torus::dra {

using PreparedClaims = std::map<std::string, ResolvedClaim>;  // by claim UID

struct DriverState {
  PreparedClaims claims;
  // Chips a claim gave back that are not reset yet: no claim may get one before its reset, and
  // a restarted driver resets them first.
  topology::DeviceSet pendingReset;
  // Cores a claim gave back while their chip still served another claim: a reset wipes a whole
  // chip, so none was done, and the next claim to get one of them is told so (log, metric).
  topology::CoreSet unresetCores;
};

// A missing file is an empty set (first start). A file that does not parse is an error naming it
// and what is wrong: starting with an empty set would forget held chips.
Result<DriverState> loadCheckpoint(const std::filesystem::path& path);
// The file's text (what loadCheckpoint reads); `where` names it in errors.
Result<DriverState> parseCheckpoint(std::string_view text, const std::string& where);
// kSynced for every change of claims; a finished reset may use kAtomicOnly (lost in a crash, it
// is only done once more).
Result<void> saveCheckpoint(const std::filesystem::path& path, const DriverState& state,
                            Durability durability = Durability::kSynced);

}  // namespace torus::dra
