// Busy-wait helpers: a pause that tells the CPU this core is spinning, and how many CPUs this
// process may run on (spinning pays only while every waiter has a CPU of its own).
#pragma once

#include <algorithm>

#include <sched.h>

namespace torus {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

inline int usableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace torus
