#include "node-runtime/collectives/ofi/fabric_library.h"

#include <cstdlib>
#include <string>

#include <dlfcn.h>

#include "common/base/log.h"

namespace torus::coll {
namespace {

constexpr const char* kDefaultLibrary = "libfabric.so.1";

// Each function at the symbol version these headers' structs belong to: what the linker binds
// against libfabric 1.17 (fi_getinfo@@FABRIC_1.3, fi_fabric@@FABRIC_1.1, ...). A newer library's
// default version (FABRIC_1.9 in 2.x) expects its own, larger fi_info; asking for the old version
// makes it convert, as it does for any program built against older headers.
static_assert(FI_MAJOR_VERSION == 1 && FI_MINOR_VERSION <= 17,
              "newer libfabric headers: check the symbol versions below against their defaults");
constexpr const char* kInfoAbi = "FABRIC_1.3";
constexpr const char* kFabricAbi = "FABRIC_1.1";
constexpr const char* kStrerrorAbi = "FABRIC_1.0";  // fi_strerror, fi_version

template <typename Function>
void resolve(void* handle, const char* name, const char* version, Function& out,
             std::string& missing) {
  out = reinterpret_cast<Function>(::dlvsym(handle, name, version));
  if (out == nullptr) {
    missing += (missing.empty() ? "" : ", ") + std::string(name) + "@" + version;
  }
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
  resolve(handle, "fi_getinfo", kInfoAbi, library.getinfo, missing);
  resolve(handle, "fi_freeinfo", kInfoAbi, library.freeinfo, missing);
  resolve(handle, "fi_dupinfo", kInfoAbi, library.dupinfo, missing);
  resolve(handle, "fi_fabric", kFabricAbi, library.fabric, missing);
  resolve(handle, "fi_strerror", kStrerrorAbi, library.strerror, missing);
  resolve(handle, "fi_version", kStrerrorAbi, library.version, missing);
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
