// BenchConfig: everything neuron-cc-bench can be told, the one table that declares it, and the
// checks that make it a runnable world (sizes, hosts, ranks, the job secret).
#pragma once

#include <cstdint>
#include <string>

#include "common/base/log.h"
#include "common/base/result.h"
#include "common/config/settings.h"
#include "node-runtime/cli/neuron_cc_bench/bench_rank.h"
#include "node-runtime/collectives/communicator.h"

namespace torus::cli {

struct BenchConfig {
  BenchSettings bench;
  int ranks = 2;
  int worldSize = 0;  // 0: firstRank + ranks
  int firstRank = 0;
  int hosts = 1;
  std::string hostId;
  coll::Transport transport = coll::Transport::kAuto;
  bool ofiRegisterAlways = false;
  std::string rootAddress = "127.0.0.1:0";
  std::int64_t timeoutMs = 300000;
  coll::Algorithm algorithm = coll::Algorithm::kAuto;
  // As typed; finishBenchConfig() reads them into `bench`.
  std::string minBytes = "8";
  std::string maxBytes = "64M";
  std::string buffers = "runtime";
  // TORUS_COLL_JOB_SECRET, or one made up when this run forks the whole world.
  std::string jobSecret;
  log::Settings log{log::Level::kWarn, 0, log::Format::kText};
};

void registerBenchSettings(config::SettingTable& table, BenchConfig* config);

// Reads the sizes and buffer kind, completes the world size and the job secret, and checks the
// flags against one another. Errors (InvalidArgument) name the flags.
Result<void> finishBenchConfig(BenchConfig& config);

// "4096", "64K", "64M", "1G" (powers of 1024).
Result<std::size_t> parseBytes(std::string_view text);

}  // namespace torus::cli
