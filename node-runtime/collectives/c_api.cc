#include "node-runtime/collectives/c_api.h"

#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "node-runtime/collectives/communicator.h"

struct torus_comm {
  std::unique_ptr<torus::coll::Communicator> comm;
  std::map<void*, torus::coll::Buffer> buffers;  // torus_comm_alloc'ed tensors by address
};

namespace {

using torus::Error;
using torus::Result;
using torus::coll::DataType;
using torus::coll::ReduceOp;

thread_local std::string lastError;

// torus_status is ErrorCode + 1, so TORUS_OK can be 0.
static_assert(static_cast<int>(torus::ErrorCode::kInvalidArgument) + 1 ==
              TORUS_ERR_INVALID_ARGUMENT);
static_assert(static_cast<int>(torus::ErrorCode::kDeadlineExceeded) + 1 ==
              TORUS_ERR_DEADLINE_EXCEEDED);
static_assert(static_cast<int>(torus::ErrorCode::kInternal) + 1 == TORUS_ERR_INTERNAL);

torus_status statusOf(const Error& error) {
  lastError = error.message;
  return static_cast<torus_status>(static_cast<int>(error.code) + 1);
}

torus_status finish(const Result<void>& result) {
  if (result.ok()) return TORUS_OK;
  return statusOf(result.error());
}

torus_status invalid(const std::string& message) {
  lastError = message;
  return TORUS_ERR_INVALID_ARGUMENT;
}

// A C caller can pass any int where the header says torus_dtype or torus_redop, and reading a value
// outside the enumerators' range as the enum is undefined in C++: the checks read the argument's
// bytes as an int instead (hence the references) and convert only what they accepted.
template <typename CEnum>
int rawValue(const CEnum& value) {
  static_assert(sizeof(CEnum) == sizeof(int));
  int raw = 0;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}
bool validType(const torus_dtype& type) {
  const int raw = rawValue(type);
  return raw >= TORUS_F32 && raw <= TORUS_I64;
}
bool validOp(const torus_redop& op) {
  const int raw = rawValue(op);
  return raw >= TORUS_SUM && raw <= TORUS_MIN;
}
// The enums follow kAllDataTypes / kAllReduceOps order.
DataType toType(torus_dtype type) {
  return torus::coll::kAllDataTypes[type];
}
ReduceOp toOp(torus_redop op) {
  return torus::coll::kAllReduceOps[op];
}

}  // namespace

extern "C" {

const char* torus_last_error(void) {
  return lastError.c_str();
}

torus_status torus_comm_create(int rank, int size, const char* root_address, long long timeout_ms,
                               torus_comm** out) {
  if (out == nullptr) return invalid("torus_comm_create: out is NULL");
  *out = nullptr;
  torus::coll::CommOptions options;
  options.rank = rank;
  options.size = size;
  if (auto env = torus::coll::applyEnvironment(options); !env.ok()) return statusOf(env.error());
  if (root_address != nullptr) options.rootAddress = root_address;
  if (timeout_ms > 0) options.timeout = std::chrono::milliseconds(timeout_ms);
  auto comm = torus::coll::Communicator::create(std::move(options));
  if (!comm.ok()) return statusOf(comm.error());
  // Ownership crosses into C here and comes back in torus_comm_destroy.
  *out = std::make_unique<torus_comm>(torus_comm{std::move(*comm), {}}).release();
  return TORUS_OK;
}

torus_status torus_comm_split(torus_comm* comm, int color, int key, torus_comm** out) {
  if (comm == nullptr || out == nullptr) return invalid("torus_comm_split: NULL argument");
  *out = nullptr;
  auto child = comm->comm->split(color, key);
  if (!child.ok()) return statusOf(child.error());
  if (*child) *out = std::make_unique<torus_comm>(torus_comm{std::move(*child), {}}).release();
  return TORUS_OK;
}

void torus_comm_destroy(torus_comm* comm) {
  std::unique_ptr<torus_comm> owned(comm);
}

int torus_comm_rank(const torus_comm* comm) {
  return comm == nullptr ? -1 : comm->comm->rank();
}
int torus_comm_size(const torus_comm* comm) {
  return comm == nullptr ? -1 : comm->comm->size();
}

void* torus_comm_alloc(torus_comm* comm, size_t bytes) {
  if (comm == nullptr) {
    lastError = "torus_comm_alloc: comm is NULL";
    return nullptr;
  }
  auto buffer = comm->comm->allocate(bytes);
  if (!buffer.ok()) {
    statusOf(buffer.error());
    return nullptr;
  }
  void* data = buffer->data();
  comm->buffers.emplace(data, std::move(*buffer));
  return data;
}

void torus_comm_free(torus_comm* comm, void* data) {
  if (comm != nullptr) comm->buffers.erase(data);
}

torus_status torus_allreduce(torus_comm* comm, const void* send, void* recv, size_t count,
                             torus_dtype type, torus_redop op) {
  if (comm == nullptr || !validType(type) || !validOp(op)) {
    return invalid("torus_allreduce: bad communicator, type or op");
  }
  return finish(comm->comm->allReduce(send, recv, count, toType(type), toOp(op)));
}

torus_status torus_allgather(torus_comm* comm, const void* send, void* recv, size_t send_count,
                             torus_dtype type) {
  if (comm == nullptr || !validType(type)) return invalid("torus_allgather: bad argument");
  return finish(comm->comm->allGather(send, recv, send_count, toType(type)));
}

torus_status torus_reducescatter(torus_comm* comm, const void* send, void* recv, size_t recv_count,
                                 torus_dtype type, torus_redop op) {
  if (comm == nullptr || !validType(type) || !validOp(op)) {
    return invalid("torus_reducescatter: bad argument");
  }
  return finish(comm->comm->reduceScatter(send, recv, recv_count, toType(type), toOp(op)));
}

torus_status torus_alltoall(torus_comm* comm, const void* send, void* recv, size_t count_per_rank,
                            torus_dtype type) {
  if (comm == nullptr || !validType(type)) return invalid("torus_alltoall: bad argument");
  return finish(comm->comm->allToAll(send, recv, count_per_rank, toType(type)));
}

torus_status torus_broadcast(torus_comm* comm, const void* send, void* recv, size_t count,
                             torus_dtype type, int root) {
  if (comm == nullptr || !validType(type)) return invalid("torus_broadcast: bad argument");
  return finish(comm->comm->broadcast(send, recv, count, toType(type), root));
}

torus_status torus_reduce(torus_comm* comm, const void* send, void* recv, size_t count,
                          torus_dtype type, torus_redop op, int root) {
  if (comm == nullptr || !validType(type) || !validOp(op)) {
    return invalid("torus_reduce: bad argument");
  }
  return finish(comm->comm->reduce(send, recv, count, toType(type), toOp(op), root));
}

torus_status torus_send(torus_comm* comm, const void* data, size_t count, torus_dtype type,
                        int peer) {
  if (comm == nullptr || !validType(type)) return invalid("torus_send: bad argument");
  return finish(comm->comm->send(data, count, toType(type), peer));
}

torus_status torus_recv(torus_comm* comm, void* data, size_t count, torus_dtype type, int peer) {
  if (comm == nullptr || !validType(type)) return invalid("torus_recv: bad argument");
  return finish(comm->comm->recv(data, count, toType(type), peer));
}

torus_status torus_barrier(torus_comm* comm) {
  if (comm == nullptr) return invalid("torus_barrier: comm is NULL");
  return finish(comm->comm->barrier());
}

}  // extern "C"
