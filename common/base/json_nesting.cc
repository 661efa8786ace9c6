#include "common/base/json_nesting.h"

#include <string>

namespace torus {

Result<void> checkJsonNesting(std::string_view text, int limit) {
  int depth = 0;
  bool inString = false;
  bool escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        inString = false;
      }
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) {
        return makeError(ErrorCode::kInvalidArgument, "nests deeper than " + std::to_string(limit) +
                                                          " levels (at byte " + std::to_string(i) +
                                                          ")");
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return okResult();
}

}  // namespace torus
