#include "node-runtime/collectives/ofi/fabric_library.h"

#include <cstdlib>
#include <string>

#include <dlfcn.h>

#include "common/base/log.h"

namespace torus::coll {
namespace {

constexpr const char* kDefaultLibrary = "libfabric.so.1";

// dlsym gives each name's default version (fi_getinfo@@FABRIC_1.3, ...), the one the linker
// would have bound for code compiled against these headers.
template <typename Function>
void resolve(void* handle, const char* name, Function& out, std::string& missing) {
  out = reinterpret_cast<Function>(::dlsym(handle, name));
  if (out == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(name);
}

Result<const FabricLibrary*> load() {
  const char* fromEnv = std::getenv("TORUS_COLL_LIBFABRIC");
  const std::string path = fromEnv != nullptr && *fromEnv != '\0' ? fromEnv : kDefaultLibrary;
  // Never closed: providers keep threads, registrations and atexit handlers inside it.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return makeError(ErrorCode::kFailedPrecondition,
                     "cannot load libfabric (" + path + "): " + (why != nullptr ? why : "?") +
                         "; install libfabric1, point TORUS_COLL_LIBFABRIC at the library (on "
                         "AWS: /opt/amazon/efa/lib/libfabric.so.1), or use the shm transport");
  }
  static FabricLibrary library;
  std::string missing;
  resolve(handle, "fi_getinfo", library.getinfo, missing);
  resolve(handle, "fi_freeinfo", library.freeinfo, missing);
  resolve(handle, "fi_dupinfo", library.dupinfo, missing);
  resolve(handle, "fi_fabric", library.fabric, missing);
  resolve(handle, "fi_strerror", library.strerror, missing);
  if (!missing.empty()) {
    return makeError(ErrorCode::kFailedPrecondition,
                     path + " is not a usable libfabric: it lacks " + missing);
  }
  TORUS_LOG(Debug, Ofi, "libfabric loaded", {"library", path});
  return &library;
}

}  // namespace

Result<const FabricLibrary*> fabricLibrary() {
  static const Result<const FabricLibrary*> loaded = load();
  return loaded;
}

}  // namespace torus::coll
