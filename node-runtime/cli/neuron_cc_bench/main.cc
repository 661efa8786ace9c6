// neuron-cc-bench: measures the collectives the way nccl-tests does (size sweep, warm-up,
// time averaged over iterations and ranks, algbw and busbw with nccl-tests' factors, optional
// data check) with its ranks forked as processes on this host; more ranks of the same world may
// be started elsewhere (another host, another network namespace) with --first-rank.
// Settings: bench_config.h; forking and waiting: bench_launch.h; one rank's sweep: bench_rank.h.
// Exit status: 0 ok, 1 a rank failed or a check failed, 2 bad usage.
#include <cstdio>

#include "common/base/log.h"
#include "common/config/command_line.h"
#include "node-runtime/cli/neuron_cc_bench/bench_config.h"
#include "node-runtime/cli/neuron_cc_bench/bench_launch.h"

namespace {

constexpr const char* kUsage = "neuron-cc-bench [flags]";
constexpr const char* kDescription =
    "Benchmarks one collective over a size sweep (doubling from --min-bytes to --max-bytes),\n"
    "nccl-tests style: time is the mean over --iters iterations (after --warmup) and over\n"
    "ranks; algbw = bytes / time and busbw = algbw x factor (AllReduce 2(n-1)/n; AllGather,\n"
    "ReduceScatter, AllToAll (n-1)/n; Broadcast, Reduce, SendRecv 1), GB = 1e9 bytes.\n"
    "Bytes are nccl-tests' S: the per-rank buffer for AllReduce, Broadcast, Reduce and\n"
    "SendRecv; the total (all ranks' blocks) for AllGather, ReduceScatter and AllToAll.\n"
    "The ranks are forked processes on this host, joined over shared memory (--transport\n"
    "ofi: over libfabric, as if each were on its own host; --hosts K: split into K\n"
    "pretend hosts, shared memory inside each and libfabric between). A world larger than\n"
    "--ranks (--world-size) is completed by other neuron-cc-bench runs with --first-rank\n"
    "and the same --root-address, e.g. in another network namespace. Each rank\n"
    "answers SIGUSR1 with its communicator's status on stderr (collective in flight and\n"
    "the ranks it waits for); a SIGUSR1 to neuron-cc-bench itself is passed to every rank.\n\n"
    "Examples:\n"
    "  neuron-cc-bench --op allreduce --ranks 2 --min-bytes 8 --max-bytes 64M --check\n"
    "  neuron-cc-bench --op allgather --ranks 4 --buffers user --json\n"
    "  FI_TCP_IFACE=lo neuron-cc-bench --transport ofi --ranks 2 --max-bytes 64M\n"
    "  neuron-cc-bench --world-size 4 --ranks 2 --root-address 10.0.0.1:29500 &  # host A\n"
    "  neuron-cc-bench --world-size 4 --ranks 2 --first-rank 2 --root-address 10.0.0.1:29500";

}  // namespace

int main(int argc, char** argv) {
  torus::cli::BenchConfig config;
  torus::config::SettingTable table("neuron-cc-bench");
  torus::cli::registerBenchSettings(table, &config);
  const torus::config::CommandInfo info{"neuron-cc-bench", kUsage, kDescription, ""};
  if (auto exitCode = torus::config::parseCommandLine(table, info, argc, argv)) return *exitCode;
  torus::log::configure(config.log);
  if (auto finished = torus::cli::finishBenchConfig(config); !finished) {
    std::fprintf(stderr, "neuron-cc-bench: %s\n", finished.error().message.c_str());
    return 2;
  }
  auto exitCode = torus::cli::launchRanks(config);
  if (!exitCode) {
    std::fprintf(stderr, "neuron-cc-bench: %s\n", exitCode.error().message.c_str());
    return 2;
  }
  return *exitCode;
}
