#include "common/base/check.h"

#include <cstdio>
#include <cstdlib>

namespace torus::detail {

void checkFailed(const char* file, int line, const char* condition, std::string_view message) {
  std::fprintf(stderr, "FATAL %s:%d: check failed: %s: %.*s\n", file, line, condition,
               static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
  std::abort();
}

}  // namespace torus::detail
