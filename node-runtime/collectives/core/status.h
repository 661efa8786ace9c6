// Status query: what every live communicator of this process is doing and whom it waits for,
// answered on demand (NCCL's RAS answers the same question; without it a hang has no culprit).
//
//   installStatusSignal(SIGUSR1);   // then: kill -USR1 <pid>  -> report on stderr
//   std::string text = statusReport();
//
// Owns: the process-wide board of communicators and the signal-reporting thread. Does not own
// the communicators: each registers a CommStatus at creation and drops it when destroyed, and
// updates it as it goes (two relaxed stores per collective; the waited-for ranks are written
// only by the slow path of a wait, once a millisecond).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "node-runtime/collectives/core/coll_types.h"

namespace torus::coll {

struct CommStatus {
  std::string name;
  int rank = 0;
  int size = 1;
  std::vector<int> pids;  // by rank

  // Written by the communicator's thread, read by reporters.
  std::atomic<std::uint32_t> op{0};        // OpKind of the collective in flight; 0 = idle
  std::atomic<std::uint64_t> sequence{0};  // of the collective in flight or the last one
  std::atomic<std::int64_t> startedNs{0};  // steady clock, when the collective started
  mutable std::mutex mutex;                // guards waitingFor and brokenBy
  std::vector<int> waitingFor;             // ranks not arrived yet (slow path of a wait)
  std::optional<std::string> brokenBy;
};

// Registers `status` on the board until the returned handle is destroyed.
class StatusRegistration {
 public:
  explicit StatusRegistration(std::shared_ptr<CommStatus> status);
  StatusRegistration(StatusRegistration&&) noexcept = default;
  StatusRegistration& operator=(StatusRegistration&&) noexcept = default;
  ~StatusRegistration();

 private:
  std::shared_ptr<CommStatus> status_;
};

// Marks a collective as in flight on `status` (nullptr: no board) for its lifetime; clears the
// waited-for ranks when a slow wait published any (`waitPublished`).
class InFlightMark {
 public:
  InFlightMark(CommStatus* status, bool& waitPublished, OpKind op, std::uint64_t sequence);
  InFlightMark(const InFlightMark&) = delete;
  InFlightMark& operator=(const InFlightMark&) = delete;
  ~InFlightMark();

 private:
  CommStatus* status_;
  bool& waitPublished_;
};

// One line per communicator, e.g.
//   comm=test-comm rank=0/4 allReduce seq=7 running 1234 ms, waiting for rank 2 (pid 4242)
std::string statusReport();

// On `signal`, write statusReport() to `fd` (stderr by default) from a background thread; the
// handler itself only writes one byte to a pipe. Once per process; later calls are no-ops.
Result<void> installStatusSignal(int signal, int fd = 2);

}  // namespace torus::coll
