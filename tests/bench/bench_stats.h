// Latency statistics for our benchmarks (min / p50 / p99 over collected samples) and their
// command-line flags.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace torus::bench {

struct LatencySummary {
  double minUs = 0;
  double p50Us = 0;
  double p99Us = 0;
};

inline LatencySummary summarize(std::vector<double> samplesUs) {
  std::sort(samplesUs.begin(), samplesUs.end());
  const auto at = [&](double quantile) {
    const auto index =
        static_cast<std::size_t>(quantile * static_cast<double>(samplesUs.size() - 1));
    return samplesUs[index];
  };
  return {samplesUs.front(), at(0.50), at(0.99)};
}

template <typename Call>
std::vector<double> timeCalls(int count, Call call) {
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    const auto start = std::chrono::steady_clock::now();
    call();
    samples.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
  }
  return samples;
}

// The header of printRow's table; `baselineColumn` names the baseline's p99 (e.g. "echo_p99_us").
inline void printHeader(const char* baselineColumn) {
  std::printf("%-26s %10s %10s %10s %12s %10s\n", "call", "min_us", "p50_us", "p99_us",
              baselineColumn, "ratio_p99");
}

inline void printRow(const char* name, const LatencySummary& s, const LatencySummary& baseline) {
  std::printf("%-26s %10.1f %10.1f %10.1f %12.1f %10.2f\n", name, s.minUs, s.p50Us, s.p99Us,
              baseline.p99Us, s.p99Us / baseline.p99Us);
}

// `--NAME=N` from the command line, else `fallback`.
inline int intFlag(int argc, char** argv, const char* name, int fallback) {
  const std::string prefix = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0)
      return std::atoi(argv[i] + prefix.size());
  }
  return fallback;
}

}  // namespace torus::bench
