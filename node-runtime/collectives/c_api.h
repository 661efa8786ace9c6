/* C API of the Torus collectives, for other languages (Python ctypes, Rust, Go cgo).
 *
 * A thin shell over torus::coll::Communicator (communicator.h): same semantics, same bounded
 * waits and errors. Every call returns TORUS_OK or an error status; torus_last_error() gives the
 * message of the last failure in the calling thread (it names the missing rank, the
 * communicator and the sequence number, as the C++ errors do). Not thread-safe per
 * communicator: one thread at a time per torus_comm. */
#ifndef TORUS_COLLECTIVES_C_API_H_
#define TORUS_COLLECTIVES_C_API_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct torus_comm torus_comm;

typedef enum {
  TORUS_F32 = 0,
  TORUS_F64 = 1,
  TORUS_F16 = 2,
  TORUS_BF16 = 3,
  TORUS_I8 = 4,
  TORUS_U8 = 5,
  TORUS_I32 = 6,
  TORUS_I64 = 7
} torus_dtype;

typedef enum { TORUS_SUM = 0, TORUS_PROD = 1, TORUS_MAX = 2, TORUS_MIN = 3 } torus_redop;

typedef enum {
  TORUS_OK = 0,
  TORUS_ERR_INVALID_ARGUMENT = 1,
  TORUS_ERR_NOT_FOUND = 2,
  TORUS_ERR_ALREADY_EXISTS = 3,
  TORUS_ERR_FAILED_PRECONDITION = 4,
  TORUS_ERR_RESOURCE_EXHAUSTED = 5,
  TORUS_ERR_UNAVAILABLE = 6,       /* a peer exited */
  TORUS_ERR_DEADLINE_EXCEEDED = 7, /* a peer did not show up within the timeout */
  TORUS_ERR_ABORTED = 8,           /* a peer gave up first */
  TORUS_ERR_PERMISSION_DENIED = 9,
  TORUS_ERR_INTERNAL = 10
} torus_status;

/* Message of the last failed call in this thread ("" when none). Valid until the next call. */
const char* torus_last_error(void);

/* root_address: "host:port" of rank 0 (NULL: NEURON_RT_ROOT_COMM_ID); timeout_ms <= 0: the
 * TORUS_COLL_TIMEOUT_MS environment variable, else 5 minutes. */
torus_status torus_comm_create(int rank, int size, const char* root_address, long long timeout_ms,
                               torus_comm** out);
/* Collective; *out is NULL for a negative color. */
torus_status torus_comm_split(torus_comm* comm, int color, int key, torus_comm** out);
void torus_comm_destroy(torus_comm* comm);
int torus_comm_rank(const torus_comm* comm);
int torus_comm_size(const torus_comm* comm);

/* Runtime-owned tensor in shared memory: collectives on it need no staging copy. NULL on
 * failure. Free with torus_comm_free on the same communicator. */
void* torus_comm_alloc(torus_comm* comm, size_t bytes);
void torus_comm_free(torus_comm* comm, void* data);

torus_status torus_allreduce(torus_comm* comm, const void* send, void* recv, size_t count,
                             torus_dtype type, torus_redop op);
torus_status torus_allgather(torus_comm* comm, const void* send, void* recv, size_t send_count,
                             torus_dtype type);
torus_status torus_reducescatter(torus_comm* comm, const void* send, void* recv, size_t recv_count,
                                 torus_dtype type, torus_redop op);
torus_status torus_alltoall(torus_comm* comm, const void* send, void* recv, size_t count_per_rank,
                            torus_dtype type);
torus_status torus_broadcast(torus_comm* comm, const void* send, void* recv, size_t count,
                             torus_dtype type, int root);
torus_status torus_reduce(torus_comm* comm, const void* send, void* recv, size_t count,
                          torus_dtype type, torus_redop op, int root);
torus_status torus_send(torus_comm* comm, const void* data, size_t count, torus_dtype type,
                        int peer);
torus_status torus_recv(torus_comm* comm, void* data, size_t count, torus_dtype type, int peer);
torus_status torus_barrier(torus_comm* comm);

#ifdef __cplusplus
}
#endif

#endif /* TORUS_COLLECTIVES_C_API_H_ */
