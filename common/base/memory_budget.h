// MemoryBudget: bytes that concurrent work may hold at once. Each piece of work reserves what it
// expects to peak at and waits (bounded) for room; a reservation larger than the whole budget is
// granted only when nothing else holds any, so it runs alone rather than never.
//
// Why: parsing a JSON body peaks at about 20× its size, so eight concurrent 10 MiB filters took
// the extender to 2.1 GB, four times the chart's limit. Reserving makes them take
// turns. glibc keeps freed memory in its arenas, so the release of a large reservation hands it
// back to the system (malloc_trim), or the peak would stay as the process's size.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>

namespace torus {

class MemoryBudget {
 public:
  class Lease {
   public:
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();

   private:
    friend class MemoryBudget;
    Lease(MemoryBudget* budget, std::size_t bytes) : budget_(budget), bytes_(bytes) {}
    MemoryBudget* budget_;
    std::size_t bytes_;
  };

  // `trimAbove`: releasing a lease at least this large returns free memory to the system.
  MemoryBudget(std::size_t totalBytes, std::size_t trimAbove);

  // A lease of `bytes`, or nothing when no room came within `wait`.
  std::optional<Lease> reserve(std::size_t bytes, std::chrono::milliseconds wait);
  std::size_t inUse() const;
  std::size_t total() const { return total_; }

 private:
  void release(std::size_t bytes);

  const std::size_t total_;
  const std::size_t trimAbove_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::size_t inUse_ = 0;
};

}  // namespace torus
