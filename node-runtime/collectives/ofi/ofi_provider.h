// Finding a libfabric provider for the collectives: loading the library, what we ask of a
// provider (reliable datagrams with tags), the order providers are tried in, and the one
// environment switch set before libfabric first reads its environment. What the endpoint does
// with the provider it gets is ofi_endpoint.cc.
#pragma once

#include <memory>
#include <string>

#include <rdma/fabric.h>

#include "common/base/result.h"
#include "node-runtime/collectives/ofi/fabric_library.h"

namespace torus::coll {

// The loaded library; only reached once findProvider has loaded it: every fi_info comes from it.
const FabricLibrary& libfabric();

struct InfoDeleter {
  void operator()(fi_info* info) const { libfabric().freeinfo(info); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

// The first provider that offers tagged reliable datagrams: `requested` when set, else what
// FI_PROVIDER names, else efa, then tcp with rxm, then tcp. The error names every one tried.
Result<InfoPtr> findProvider(const std::string& requested);

}  // namespace torus::coll
