// A bound on how deeply a JSON text nests, checked before any parser sees it. nlohmann::json
// parses iteratively but copies and serialises recursively, so a 100 KB body of 50,000 nested
// brackets would overflow the extender's stack. Kubernetes objects nest about a dozen
// levels; nothing legitimate comes near the limit.
#pragma once

#include <string_view>

#include "common/base/result.h"

namespace torus {

inline constexpr int kMaxJsonNesting = 100;

// InvalidArgument naming the byte offset when arrays and objects nest deeper than `limit`.
// Brackets inside strings do not count; the text is not otherwise validated (the parser does that).
Result<void> checkJsonNesting(std::string_view text, int limit = kMaxJsonNesting);

}  // namespace torus
