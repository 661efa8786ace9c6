// The driver's memory of prepared claims, on disk: a restarted driver (new pod, crash, upgrade)
// reads it back and knows every claim kubelet believes prepared, so it neither prepares a claim
// twice nor hands a chip another claim holds. One JSON file, replaced atomically on each change.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "common/base/result.h"
#include "dra-driver/claim_allocation.h"

namespace torus::dra {

using PreparedClaims = std::map<std::string, ResolvedClaim>;  // by claim UID

// A missing file is an empty set (first start). A file that does not parse is an error naming it
// and what is wrong: starting with an empty set would forget held chips.
Result<PreparedClaims> loadCheckpoint(const std::filesystem::path& path);
// The file's text (what loadCheckpoint reads); `where` names it in errors.
Result<PreparedClaims> parseCheckpoint(std::string_view text, const std::string& where);
Result<void> saveCheckpoint(const std::filesystem::path& path, const PreparedClaims& claims);

}  // namespace torus::dra
