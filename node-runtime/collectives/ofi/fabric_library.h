// libfabric's few real functions, loaded the first time an endpoint opens rather than when a
// program starts. Debian's libfabric pulls in PSM's libraries, whose load-time constructors sleep
// about 0.2 s calibrating a clock: linked directly, every binary with the collectives inside (the
// node agent, most test processes) paid that at each start, network or not. Everything else in
// the libfabric API is inline calls through the objects' operation tables and needs no symbol.
#pragma once

#include <rdma/fabric.h>

#include "common/base/result.h"

namespace torus::coll {

struct FabricLibrary {
  decltype(&::fi_getinfo) getinfo = nullptr;
  decltype(&::fi_freeinfo) freeinfo = nullptr;
  decltype(&::fi_dupinfo) dupinfo = nullptr;
  decltype(&::fi_fabric) fabric = nullptr;
  decltype(&::fi_strerror) strerror = nullptr;
  decltype(&::fi_version) version = nullptr;
};

// Opens TORUS_COLL_LIBFABRIC (default "libfabric.so.1", searched like any shared library) once
// per process and keeps it loaded; later calls return the first outcome, error included.
Result<const FabricLibrary*> fabricLibrary();

}  // namespace torus::coll
