#include "node-runtime/collectives/ofi/ofi_provider.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace torus::coll {
namespace {

// What we ask of a provider: reliable datagrams with tags, our contexts, memory registration
// only if it insists (then we register each transfer's buffer).
InfoPtr makeHints(const std::string& providerName) {
  InfoPtr hints(libfabric().dupinfo(nullptr));  // what fi_allocinfo() expands to
  if (!hints) return hints;
  hints->caps = FI_TAGGED | FI_SEND | FI_RECV;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->ep_attr->type = FI_EP_RDM;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
  hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
  if (!providerName.empty()) hints->fabric_attr->prov_name = ::strdup(providerName.c_str());
  return hints;
}

// rxm's pass-through hands tagged messages straight to the tcp provider's own reliable
// endpoint instead of running rxm's eager/rendezvous protocols over it: measured here, 1 MiB
// AllReduce busbw 5.4 vs 1.6-2.6 GB/s and no worse at 8 B or 64 MiB. libfabric 1.17 leaves it
// off by default and reads the switch only from the environment, once, when it initialises; so,
// as aws-ofi-nccl does for its FI_EFA_* settings, set it before the first libfabric call unless
// the operator already chose (FI_OFI_RXM_ENABLE_PASSTHRU=0 turns it off). Only on libfabric 1.x:
// with 2.5.1 (MPICH's PyPI bundle) a rank dies in fi_cq_read in 2 of 3 runs with it on
// (tests/bench/collectives_vs_peers.sh), and 2.x's own tcp provider is reliable-datagram anyway.
void preferRxmPassThrough(std::uint32_t libraryVersion) {
  static std::once_flag once;
  if (FI_MAJOR(libraryVersion) >= 2) return;
  std::call_once(once, [] { ::setenv("FI_OFI_RXM_ENABLE_PASSTHRU", "1", /*overwrite=*/0); });
}

}  // namespace

const FabricLibrary& libfabric() {
  return *fabricLibrary().value();
}

Result<InfoPtr> findProvider(const std::string& requested) {
  if (auto loaded = fabricLibrary(); !loaded) return std::move(loaded).error();
  // After dlopen, before the first call that initialises the library and reads the environment.
  preferRxmPassThrough(libfabric().version());
  std::vector<std::string> candidates;
  const char* fromEnv = std::getenv("FI_PROVIDER");
  if (!requested.empty()) {
    candidates.push_back(requested);
  } else if (fromEnv != nullptr && *fromEnv != '\0') {
    candidates.emplace_back();  // libfabric applies FI_PROVIDER itself
  } else {
    candidates = {"efa", "tcp;ofi_rxm", "tcp"};
  }
  std::string tried;
  int lastRc = 0;
  for (const std::string& name : candidates) {
    InfoPtr hints = makeHints(name);
    if (!hints) return makeError(ErrorCode::kResourceExhausted, "fi_allocinfo failed");
    fi_info* found = nullptr;
    const int rc = libfabric().getinfo(FI_VERSION(1, 10), nullptr, nullptr, 0, hints.get(), &found);
    if (rc == 0 && found != nullptr) return InfoPtr(found);
    lastRc = rc;
    if (!tried.empty()) tried += ", ";
    tried += name.empty() ? std::string("FI_PROVIDER=") + fromEnv : name;
  }
  return makeError(ErrorCode::kUnavailable,
                   "no libfabric provider offers tagged reliable datagrams (FI_EP_RDM, FI_TAGGED); "
                   "tried " +
                       tried + ": " + libfabric().strerror(-lastRc) +
                       " (fi_info -t FI_EP_RDM -c FI_TAGGED lists what this host has)");
}

}  // namespace torus::coll
