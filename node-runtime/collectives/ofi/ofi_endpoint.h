// One libfabric reliable-datagram endpoint (FI_EP_RDM) with tagged messages: what the
// collectives use between hosts, and between ranks of one host when TORUS_COLL_TRANSPORT=ofi.
//
// The provider comes from FI_PROVIDER when set (libfabric filters on it itself); otherwise efa is
// tried first (AWS), then tcp;ofi_rxm and tcp. Interfaces follow libfabric's own variables
// (FI_TCP_IFACE, FI_EFA_IFACE, ...), so tests pin FI_TCP_IFACE=lo.
//
// Progress is manual and explicit: nothing moves unless progress() is called, which every wait
// of the algorithms does. That keeps the threads we own to zero and makes rxm's manual progress
// and auto-progress providers behave the same.
//
// Owns: the fabric, domain, completion queue, address vector and endpoint (closed in reverse
// order), memory registrations when the provider asks for them (FI_MR_LOCAL): one per region
// of long-lived memory, else one per transfer.
// Does not own: the buffers or the NetOps (the caller keeps both alive until the op is done).
// Thread-safe: one mutex serialises every call into the provider (FI_THREAD_DOMAIN).
// Tags with the top bit set are the endpoint's own (warmUp); callers use the other 63 bits.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/base/result.h"

namespace torus::coll {

// A transfer posted to an endpoint. Its address is the provider's context, so it must stay put
// (and alive) from post until state() says it finished.
struct NetOp {
  enum class State : int { kIdle, kPending, kDone, kFailed };

  void* providerContext[8] = {};  // struct fi_context2; first member, libfabric hands it back
  int peer = -1;                  // endpoint rank of the other side
  bool isSend = false;
  std::size_t bytes = 0;
  std::atomic<State> state{State::kIdle};
  std::string error;                   // when kFailed
  std::shared_ptr<void> registration;  // the buffer's registration, when the provider needs one

  State current() const { return state.load(std::memory_order_acquire); }
};

struct OfiOptions {
  std::string provider;  // empty: FI_PROVIDER, else efa, tcp;ofi_rxm, tcp
  // Register buffers even when the provider does not ask for it, so tcp exercises the path
  // efa takes (tests, and reproducing registration problems off AWS).
  bool registerAlways = false;
};

// How transfers found their memory registration (only counted when registration is needed).
struct RegistrationCounts {
  std::uint64_t regions = 0;      // registerRegion() calls that registered memory
  std::uint64_t regionHits = 0;   // transfers that used a region's registration
  std::uint64_t perTransfer = 0;  // transfers registered (and released) on their own
};

class OfiEndpoint {
 public:
  static Result<std::unique_ptr<OfiEndpoint>> open(const OfiOptions& options);
  OfiEndpoint(const OfiEndpoint&) = delete;
  OfiEndpoint& operator=(const OfiEndpoint&) = delete;
  ~OfiEndpoint();

  // "tcp;ofi_rxm", "efa", ...
  const std::string& provider() const { return provider_; }
  // This endpoint's address, opaque bytes for the peers' setPeers().
  const std::string& address() const { return address_; }
  // Every rank's address (index = rank); mine is among them. Called once, before any transfer.
  Result<void> setPeers(const std::vector<std::string>& addresses);

  // Posts a tagged send / receive. kResourceExhausted: the provider's queue stayed full (retry
  // later); any other error: the provider refused it for good.
  Result<void> postSend(int peer, const void* data, std::size_t bytes, std::uint64_t tag,
                        NetOp& op);
  Result<void> postRecv(int peer, void* data, std::size_t bytes, std::uint64_t tag, NetOp& op);

  // Takes the provider's one-time costs now rather than in whichever collective first meets
  // them (see the .cc). Call after setPeers; `self` is this endpoint's rank.
  Result<void> warmUp(int self, std::chrono::steady_clock::time_point deadline);

  // Memory that outlives single transfers (runtime tensors, the groups' scratch), registered
  // once and used by every transfer that lies inside it, until the returned handle is dropped
  // (transfers in flight keep the registration alive). Null when the provider needs none.
  Result<std::shared_ptr<void>> registerRegion(const void* base, std::size_t bytes);
  RegistrationCounts registrationCounts() const;

  // Reads the completion queue and finishes the ops it names. An error here (not of one op, of
  // the queue itself) means the endpoint is unusable.
  Result<void> progress();

  // Largest message the provider takes in one transfer.
  std::size_t maxMessageBytes() const { return maxMessageBytes_; }

 private:
  struct Fids;
  struct RegionTable;
  OfiEndpoint();
  Result<std::shared_ptr<void>> registerBuffer(const void* data, std::size_t bytes, bool forBoth,
                                               bool isSend);
  // Fills op for a transfer and returns the buffer's descriptor (null when none is needed).
  Result<void*> prepare(NetOp& op, int peer, const void* data, std::size_t bytes, bool isSend);
  Result<void> progressLocked();
  template <typename Post>
  Result<void> post(NetOp& op, std::string_view what, Post postOnce);

  std::unique_ptr<Fids> fids_;
  std::shared_ptr<RegionTable> regions_;  // region handles outlive us safely through a weak_ptr
  RegistrationCounts counts_;
  std::uint64_t nextKey_ = 1;  // requested memory registration keys
  std::string provider_;
  std::string address_;
  std::vector<std::uint64_t> peers_;  // fi_addr_t per rank
  std::size_t maxMessageBytes_ = 0;
  bool needsRegistration_ = false;
  bool rxmProtocol_ = false;  // rxm's own eager/rendezvous protocol (not its pass-through)
  mutable std::mutex mutex_;
};

}  // namespace torus::coll
