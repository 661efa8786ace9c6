// Kubernetes quantities (resource.Quantity) as whole counts, for extended resources: "4", "+4",
// "2k", "1Ki", "4000m", "1e3". The API server canonicalises what it stores, but kube-scheduler and
// hand-written requests may send any form the grammar allows, and "2k" is a valid 2000.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/base/result.h"

namespace torus::kube {

// The quantity's value when it is a whole number within [min, max]. Errors say which of these it
// is not: not a quantity (names the grammar), not whole ("0.5"), or out of range.
Result<std::int64_t> wholeQuantity(std::string_view text, std::int64_t min, std::int64_t max);

}  // namespace torus::kube
