#include "common/base/version.h"

#ifndef TORUS_VERSION
#error "TORUS_VERSION must be defined by the build"
#endif
#ifndef TORUS_GIT_COMMIT
#define TORUS_GIT_COMMIT "unknown"
#endif

namespace torus {
std::string_view versionString() {
  return TORUS_VERSION " (" TORUS_GIT_COMMIT ")";
}
}  // namespace torus
