// One libfabric endpoint's whole life once a provider is found (ofi_provider.h): opening fabric,
// domain, CQ, AV and endpoint, memory registration, posting and progress, kept in one file on
// purpose: every call into an open endpoint follows the same lock and progress rules
// (progressLocked), and splitting them would put those rules in two places.
#include "node-runtime/collectives/ofi/ofi_endpoint.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "common/base/log.h"
#include "node-runtime/collectives/ofi/fabric_library.h"
#include "node-runtime/collectives/ofi/ofi_provider.h"

namespace torus::coll {
namespace {

static_assert(sizeof(NetOp::providerContext) >= sizeof(fi_context2));
static_assert(offsetof(NetOp, providerContext) == 0);

// Every fid closes the same way; fi_close on the embedded fid releases it.
template <typename T>
struct FidCloser {
  void operator()(T* object) const {
    if (object != nullptr) ::fi_close(&object->fid);
  }
};
template <typename T>
using FidPtr = std::unique_ptr<T, FidCloser<T>>;

Error ofiError(std::string_view what, long rc) {
  return makeError(ErrorCode::kUnavailable,
                   std::string(what) + ": " + libfabric().strerror(static_cast<int>(-rc)));
}

}  // namespace

struct OfiEndpoint::Fids {
  InfoPtr info;
  FidPtr<fid_fabric> fabric;
  FidPtr<fid_domain> domain;
  FidPtr<fid_cq> cq;
  FidPtr<fid_av> av;
  FidPtr<fid_ep> ep;  // last: closed first
};

// Registered regions by base address. Handles reach it through a weak_ptr, so a tensor freed
// after its communicator is harmless; the endpoint empties it before closing the domain.
struct OfiEndpoint::RegionTable {
  struct Region {
    std::uintptr_t end = 0;
    std::shared_ptr<void> registration;
  };
  std::mutex mutex;
  std::map<std::uintptr_t, Region> byBase;
};

OfiEndpoint::OfiEndpoint()
    : fids_(std::make_unique<Fids>()), regions_(std::make_shared<RegionTable>()) {}

OfiEndpoint::~OfiEndpoint() {
  {
    std::lock_guard lock(regions_->mutex);
    regions_->byBase.clear();  // registrations close before the domain they belong to
  }
  // Close the endpoint before the queues and the domain it is bound to.
  fids_->ep.reset();
  fids_->av.reset();
  fids_->cq.reset();
  fids_->domain.reset();
  fids_->fabric.reset();
}

Result<std::unique_ptr<OfiEndpoint>> OfiEndpoint::open(const OfiOptions& options) {
  std::unique_ptr<OfiEndpoint> endpoint(new OfiEndpoint());  // private constructor
  Fids& f = *endpoint->fids_;
  auto info = findProvider(options.provider);
  if (!info) return std::move(info).error();
  f.info = std::move(*info);
  endpoint->provider_ =
      f.info->fabric_attr->prov_name != nullptr ? f.info->fabric_attr->prov_name : "unknown";
  endpoint->maxMessageBytes_ = f.info->ep_attr->max_msg_size;
  endpoint->needsRegistration_ =
      options.registerAlways || (f.info->domain_attr->mr_mode & FI_MR_LOCAL) != 0;
  endpoint->rxmProtocol_ = f.info->ep_attr->protocol == FI_PROTO_RXM;
  const std::string context = "opening a libfabric endpoint (" + endpoint->provider_ + ")";

  fid_fabric* fabric = nullptr;
  if (int rc = libfabric().fabric(f.info->fabric_attr, &fabric, nullptr); rc != 0) {
    return ofiError(context + ": fi_fabric", rc);
  }
  f.fabric.reset(fabric);
  fid_domain* domain = nullptr;
  if (int rc = ::fi_domain(fabric, f.info.get(), &domain, nullptr); rc != 0) {
    return ofiError(context + ": fi_domain", rc);
  }
  f.domain.reset(domain);
  fi_cq_attr cqAttr{};
  cqAttr.format = FI_CQ_FORMAT_TAGGED;
  cqAttr.wait_obj = FI_WAIT_NONE;
  cqAttr.size = 4096;
  fid_cq* cq = nullptr;
  if (int rc = ::fi_cq_open(domain, &cqAttr, &cq, nullptr); rc != 0) {
    return ofiError(context + ": fi_cq_open", rc);
  }
  f.cq.reset(cq);
  fi_av_attr avAttr{};
  avAttr.type = FI_AV_TABLE;
  fid_av* av = nullptr;
  if (int rc = ::fi_av_open(domain, &avAttr, &av, nullptr); rc != 0) {
    return ofiError(context + ": fi_av_open", rc);
  }
  f.av.reset(av);
  fid_ep* ep = nullptr;
  if (int rc = ::fi_endpoint(domain, f.info.get(), &ep, nullptr); rc != 0) {
    return ofiError(context + ": fi_endpoint", rc);
  }
  f.ep.reset(ep);
  if (int rc = ::fi_ep_bind(ep, &av->fid, 0); rc != 0) return ofiError(context + ": bind av", rc);
  if (int rc = ::fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV); rc != 0) {
    return ofiError(context + ": bind cq", rc);
  }
  if (int rc = ::fi_enable(ep); rc != 0) return ofiError(context + ": fi_enable", rc);

  std::string name(256, '\0');
  std::size_t length = name.size();
  if (int rc = ::fi_getname(&ep->fid, name.data(), &length); rc != 0) {
    return ofiError(context + ": fi_getname", rc);
  }
  name.resize(length);
  endpoint->address_ = std::move(name);
  TORUS_LOG(Debug, Ofi, "endpoint open", {"provider", endpoint->provider_},
            {"domain", f.info->domain_attr->name != nullptr ? f.info->domain_attr->name : "?"},
            {"register_buffers", endpoint->needsRegistration_},
            {"rxm_own_protocol", endpoint->rxmProtocol_});
  return endpoint;
}

Result<void> OfiEndpoint::setPeers(const std::vector<std::string>& addresses) {
  std::lock_guard lock(mutex_);
  peers_.assign(addresses.size(), FI_ADDR_NOTAVAIL);
  for (std::size_t r = 0; r < addresses.size(); ++r) {
    fi_addr_t inserted = FI_ADDR_NOTAVAIL;
    const int count =
        ::fi_av_insert(fids_->av.get(), addresses[r].data(), 1, &inserted, 0, nullptr);
    if (count != 1) {
      return makeError(ErrorCode::kInvalidArgument,
                       "rank " + std::to_string(r) + "'s libfabric address (" +
                           std::to_string(addresses[r].size()) + " bytes) was not accepted by " +
                           provider_ + ": " + libfabric().strerror(count < 0 ? -count : FI_EINVAL));
    }
    peers_[r] = inserted;
  }
  return okResult();
}

Result<std::shared_ptr<void>> OfiEndpoint::registerBuffer(const void* data, std::size_t bytes,
                                                          bool forBoth, bool isSend) {
  if (!needsRegistration_ || bytes == 0) return std::shared_ptr<void>();
  fid_mr* mr = nullptr;
  const std::uint64_t access = forBoth ? (FI_SEND | FI_RECV) : isSend ? FI_SEND : FI_RECV;
  // Keys must differ between live registrations unless the provider picks them (FI_MR_PROV_KEY,
  // when it ignores ours): a constant key made every second registration fail with ENOKEY.
  if (int rc =
          ::fi_mr_reg(fids_->domain.get(), data, bytes, access, 0, nextKey_++, 0, &mr, nullptr);
      rc != 0) {
    return ofiError("registering a " + std::to_string(bytes) + "-byte buffer", rc);
  }
  return std::shared_ptr<void>(mr, [](void* p) { ::fi_close(&static_cast<fid_mr*>(p)->fid); });
}

template <typename Post>
Result<void> OfiEndpoint::post(NetOp& op, std::string_view what, Post postOnce) {
  op.state.store(NetOp::State::kPending, std::memory_order_relaxed);
  op.error.clear();
  // A full queue drains as completions are read: make progress and try a few times; after
  // that the caller retries within its deadline (kResourceExhausted).
  for (int attempt = 0; attempt < 16; ++attempt) {
    const ssize_t rc = postOnce();
    if (rc == 0) return okResult();
    if (rc != -FI_EAGAIN) {
      op.state.store(NetOp::State::kFailed, std::memory_order_release);
      return ofiError(std::string(what) + " rank " + std::to_string(op.peer), rc);
    }
    TORUS_RETURN_IF_ERROR(progressLocked(), what);
  }
  op.state.store(NetOp::State::kIdle, std::memory_order_relaxed);
  return makeError(ErrorCode::kResourceExhausted,
                   std::string(what) + " rank " + std::to_string(op.peer) + ": queue full");
}

Result<std::shared_ptr<void>> OfiEndpoint::registerRegion(const void* base, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  auto registration = registerBuffer(base, bytes, true, true);
  if (!registration || !*registration) return registration;
  const auto begin = reinterpret_cast<std::uintptr_t>(base);
  {
    std::lock_guard tableLock(regions_->mutex);
    regions_->byBase[begin] = {begin + bytes, *registration};
  }
  ++counts_.regions;
  std::weak_ptr<RegionTable> table = regions_;
  return std::shared_ptr<void>(const_cast<void*>(base), [table, begin](void*) {
    if (auto regions = table.lock()) {
      std::lock_guard tableLock(regions->mutex);
      regions->byBase.erase(begin);
    }
  });
}

RegistrationCounts OfiEndpoint::registrationCounts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

Result<void*> OfiEndpoint::prepare(NetOp& op, int peer, const void* data, std::size_t bytes,
                                   bool isSend) {
  op.peer = peer;
  op.isSend = isSend;
  op.bytes = bytes;
  op.registration.reset();
  if (!needsRegistration_ || bytes == 0) return static_cast<void*>(nullptr);
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  {
    std::lock_guard tableLock(regions_->mutex);
    auto it = regions_->byBase.upper_bound(begin);
    if (it != regions_->byBase.begin() && begin + bytes <= (--it)->second.end) {
      op.registration = it->second.registration;
    }
  }
  if (op.registration) {
    ++counts_.regionHits;
    return ::fi_mr_desc(static_cast<fid_mr*>(op.registration.get()));
  }
  ++counts_.perTransfer;
  auto registration = registerBuffer(data, bytes, false, isSend);
  if (!registration) return std::move(registration).error();
  op.registration = std::move(*registration);
  return op.registration ? ::fi_mr_desc(static_cast<fid_mr*>(op.registration.get())) : nullptr;
}

Result<void> OfiEndpoint::postSend(int peer, const void* data, std::size_t bytes, std::uint64_t tag,
                                   NetOp& op) {
  std::lock_guard lock(mutex_);
  auto desc = prepare(op, peer, data, bytes, true);
  if (!desc) return std::move(desc).error();
  const fi_addr_t dest = peers_.at(static_cast<std::size_t>(peer));
  return post(op, "sending to", [&] {
    return ::fi_tsend(fids_->ep.get(), data, bytes, *desc, dest, tag, op.providerContext);
  });
}

Result<void> OfiEndpoint::postRecv(int peer, void* data, std::size_t bytes, std::uint64_t tag,
                                   NetOp& op) {
  std::lock_guard lock(mutex_);
  auto desc = prepare(op, peer, data, bytes, false);
  if (!desc) return std::move(desc).error();
  // The tag names the sender, so any source may match: no FI_DIRECTED_RECV needed.
  return post(op, "receiving from", [&] {
    return ::fi_trecv(fids_->ep.get(), data, bytes, *desc, FI_ADDR_UNSPEC, tag, 0,
                      op.providerContext);
  });
}

// rxm's own protocol (when its pass-through is off) sets up its pool for messages that arrive
// before their receive is posted the first time that happens: about 17 MB touched at once,
// 50-65 ms of page faults on a VM, which used to stall some early collective (both ranks, since
// the other waits). A message to ourselves, received only after it has arrived, pays for it
// here, before the first collective. Other protocols skip it: it would cost them a connection.
Result<void> OfiEndpoint::warmUp(int self, std::chrono::steady_clock::time_point deadline) {
  if (!rxmProtocol_) return okResult();
  constexpr std::uint64_t kWarmUpTag = std::uint64_t{1} << 63;
  const auto waitFor = [&](NetOp& op, std::string_view what) -> Result<void> {
    while (op.current() == NetOp::State::kPending) {
      TORUS_RETURN_IF_ERROR(progress(), what);
      if (std::chrono::steady_clock::now() >= deadline) {
        return makeError(ErrorCode::kDeadlineExceeded,
                         std::string(what) + ": the provider did not finish it in time");
      }
    }
    if (op.current() == NetOp::State::kFailed) {
      return makeError(ErrorCode::kUnavailable, std::string(what) + ": " + op.error);
    }
    return okResult();
  };
  const std::string what = "warming up the endpoint (a message to itself)";
  std::uint64_t outgoing = 0x746f727573ULL;
  std::uint64_t incoming = 0;
  NetOp send;
  NetOp recv;
  TORUS_RETURN_IF_ERROR(postSend(self, &outgoing, sizeof(outgoing), kWarmUpTag, send), what);
  if (auto sent = waitFor(send, what); !sent) return sent;
  // The bytes are in our own socket now: a few progress calls read them, unexpected.
  for (int i = 0; i < 64; ++i)
    TORUS_RETURN_IF_ERROR(progress(), what);
  TORUS_RETURN_IF_ERROR(postRecv(self, &incoming, sizeof(incoming), kWarmUpTag, recv), what);
  if (auto received = waitFor(recv, what); !received) return received;
  if (incoming != outgoing) {
    return makeError(ErrorCode::kInternal, what + ": it arrived changed (" + provider_ + ")");
  }
  return okResult();
}

Result<void> OfiEndpoint::progress() {
  std::lock_guard lock(mutex_);
  return progressLocked();
}

Result<void> OfiEndpoint::progressLocked() {
  fi_cq_tagged_entry entries[32];
  while (true) {
    const ssize_t n = ::fi_cq_read(fids_->cq.get(), entries, std::size(entries));
    if (n == -FI_EAGAIN) return okResult();
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry failure{};
      if (::fi_cq_readerr(fids_->cq.get(), &failure, 0) < 0) continue;
      auto* op = static_cast<NetOp*>(failure.op_context);
      if (op == nullptr) continue;
      char detail[256] = {};
      const char* text = ::fi_cq_strerror(fids_->cq.get(), failure.prov_errno, failure.err_data,
                                          detail, sizeof(detail));
      op->error = std::string(libfabric().strerror(failure.err)) +
                  (text != nullptr && *text != '\0' ? std::string(" (") + text + ")" : "");
      if (failure.err == FI_ETRUNC) {
        op->error = "message longer than the " + std::to_string(op->bytes) + " bytes expected";
      }
      op->registration.reset();
      op->state.store(NetOp::State::kFailed, std::memory_order_release);
      continue;
    }
    if (n < 0) return ofiError("reading the completion queue", n);
    for (ssize_t i = 0; i < n; ++i) {
      auto* op = static_cast<NetOp*>(entries[i].op_context);
      if (op == nullptr) continue;
      op->registration.reset();
      if (!op->isSend && entries[i].len != op->bytes) {
        op->error = "received " + std::to_string(entries[i].len) + " bytes, expected " +
                    std::to_string(op->bytes);
        op->state.store(NetOp::State::kFailed, std::memory_order_release);
        continue;
      }
      op->state.store(NetOp::State::kDone, std::memory_order_release);
    }
    if (static_cast<std::size_t>(n) < std::size(entries)) return okResult();
  }
}

}  // namespace torus::coll
