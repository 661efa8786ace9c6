// neuron-cc-bench: measures the collectives the way nccl-tests does (size sweep, warm-up,
// time averaged over iterations and ranks, algbw and busbw with nccl-tests' factors, optional
// data check) with its ranks forked as processes on this host; more ranks of the same world may
// be started elsewhere (another host, another network namespace) with --first-rank.
// Exit status: 0 ok, 1 a rank failed or a check failed, 2 bad usage.
#include <array>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/base/parse.h"
#include "common/config/command_line.h"
#include "common/config/log_settings.h"
#include "common/config/settings.h"
#include "node-runtime/cli/neuron_cc_bench/bench_rank.h"
#include "node-runtime/collectives/bootstrap.h"
#include "node-runtime/collectives/communicator.h"
#include "node-runtime/collectives/status.h"

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

struct Options {
  torus::cli::BenchSettings bench;
  int ranks = 2;
  int worldSize = 0;  // 0: --ranks
  int firstRank = 0;
  int hosts = 1;
  std::string hostId;
  torus::coll::Transport transport = torus::coll::Transport::kAuto;
  bool ofiRegisterAlways = false;
  std::string rootAddress = "127.0.0.1:0";
  std::int64_t timeoutMs = 300000;
  std::string jobSecret;  // TORUS_COLL_JOB_SECRET, or one made up when we fork the whole world
  torus::coll::Algorithm algorithm = torus::coll::Algorithm::kAuto;
  torus::log::Settings log{torus::log::Level::kWarn, 0, torus::log::Format::kText};
};

// "4096", "64K", "64M", "1G" (powers of 1024).
torus::Result<std::size_t> parseBytes(std::string_view text) {
  std::uint64_t scale = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
      case 'k':
        scale = 1ULL << 10;
        break;
      case 'M':
      case 'm':
        scale = 1ULL << 20;
        break;
      case 'G':
      case 'g':
        scale = 1ULL << 30;
        break;
      default:
        break;
    }
    if (scale != 1) text.remove_suffix(1);
  }
  auto value = torus::parseInt64(text, 0, std::int64_t{1} << 40);
  if (!value) return std::move(value).error();
  return static_cast<std::size_t>(*value) * scale;
}

template <typename T, typename Parse>
torus::config::Setting choice(std::string flag, std::string valueName, std::string defaultText,
                              std::string help, T* target, Parse parse) {
  return {std::move(flag),
          "",
          "",
          std::move(valueName),
          std::move(defaultText),
          std::move(help),
          [target, parse](std::string_view value) -> torus::Result<void> {
            auto parsed = parse(value);
            if (!parsed) return std::move(parsed).error();
            *target = *parsed;
            return torus::okResult();
          }};
}

// The launcher passes SIGUSR1 on to its ranks, so `kill -USR1 <launcher>` reports every rank.
std::array<pid_t, 64> gChildren{};
std::atomic<int> gChildCount{0};

void forwardStatusSignal(int signal) {
  const int count = gChildCount.load(std::memory_order_relaxed);
  for (int i = 0; i < count; ++i)
    ::kill(gChildren[static_cast<std::size_t>(i)], signal);
}

int runRank(int rank, const Options& options, torus::UniqueFd listener,
            const std::string& rootAddress) {
  torus::coll::CommOptions comm;
  comm.rank = rank;
  comm.size = options.worldSize;
  comm.transport = options.transport;
  comm.ofiRegisterAlways = options.ofiRegisterAlways;
  comm.hostId = options.hostId;
  if (options.hosts > 1) {
    const int perHost = (options.ranks + options.hosts - 1) / options.hosts;
    comm.hostId = "neuron-cc-bench-host" + std::to_string((rank - options.firstRank) / perHost);
  }
  comm.rootAddress = rootAddress;
  comm.jobSecret = options.jobSecret;
  comm.timeout = std::chrono::milliseconds(options.timeoutMs);
  comm.name = "neuron-cc-bench";
  comm.algorithm = options.algorithm;
  if (rank == 0) comm.rootListener = std::move(listener);
  if (auto installed = torus::coll::installStatusSignal(SIGUSR1); !installed) {
    std::fprintf(stderr, "neuron-cc-bench: rank %d: %s\n", rank, installed.error().message.c_str());
  }
  auto communicator = torus::coll::Communicator::create(std::move(comm));
  if (!communicator) {
    std::fprintf(stderr, "neuron-cc-bench: rank %d: %s\n", rank,
                 communicator.error().message.c_str());
    return 1;
  }
  auto ok = torus::cli::runBenchRank(**communicator, options.bench, stdout);
  if (!ok) {
    std::fprintf(stderr, "neuron-cc-bench: rank %d: %s\n", rank, ok.error().message.c_str());
    return 1;
  }
  return *ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::string minBytes = "8";
  std::string maxBytes = "64M";
  std::string buffers = "runtime";
  torus::config::SettingTable table("neuron-cc-bench");
  table.add(choice("op", "OP", "allreduce",
                   "allreduce, allgather, reducescatter, alltoall, broadcast, reduce or sendrecv",
                   &options.bench.op, torus::cli::parseBenchOp));
  table.addInt("ranks", "", "", "N", "ranks to fork on this host", 1, 64, &options.ranks);
  table.addInt("world-size", "", "", "N", "ranks in the whole world (default: --ranks)", 1, 4096,
               &options.worldSize);
  table.addInt("first-rank", "", "", "R", "world rank of this run's first rank (0 binds the root)",
               0, 4095, &options.firstRank);
  table.addInt("hosts", "", "", "K", "split this run's ranks into K pretend hosts", 1, 64,
               &options.hosts);
  table.addString("host-id", "TORUS_COLL_HOST_ID", "", "ID",
                  "ranks with the same id share memory (default: machine and IPC namespace)",
                  &options.hostId);
  table.addString("min-bytes", "", "", "BYTES", "smallest size (suffix K, M, G allowed)",
                  &minBytes);
  table.addString("max-bytes", "", "", "BYTES", "largest size; sizes double up to it", &maxBytes);
  table.add(choice("dtype", "TYPE", "f32", "f32, f64, f16, bf16, i8, u8, i32 or i64",
                   &options.bench.type, torus::coll::parseDataType));
  table.add(choice("redop", "OP", "sum", "reduction: sum, prod, max or min",
                   &options.bench.reduceOp, torus::coll::parseReduceOp));
  table.addInt("iters", "", "", "K", "timed iterations per size", 1, 1000000, &options.bench.iters);
  table.addInt("warmup", "", "", "W", "untimed iterations per size", 0, 1000000,
               &options.bench.warmup);
  table.addSwitch("check", "", "", "verify the data of one extra run per size",
                  &options.bench.check);
  table.addString("buffers", "", "", "KIND",
                  "runtime (tensors the runtime owns, in shared memory: no staging copy) or user "
                  "(plain heap buffers, staged)",
                  &buffers);
  table.addSwitch("in-place", "", "", "run in place (output overwrites input)",
                  &options.bench.inPlace);
  table.addSwitch("json", "", "", "one JSON object per size instead of a table",
                  &options.bench.json);
  table.add(choice("transport", "NAME", "auto",
                   "auto (shared memory within a host, libfabric between), shm, or ofi (libfabric "
                   "for every rank; the provider follows FI_PROVIDER, FI_TCP_IFACE pins tcp)",
                   &options.transport, torus::coll::parseTransport));
  torus::config::Setting registration = choice(
      "ofi-register", "MODE", "auto",
      "auto (register buffers with libfabric when the provider asks) or always (as efa needs; "
      "tries that path on tcp)",
      &options.ofiRegisterAlways, torus::coll::parseOfiRegister);
  registration.env = "TORUS_COLL_OFI_REGISTER";
  table.add(std::move(registration));
  table.addString("root-address", "NEURON_RT_ROOT_COMM_ID", "", "HOST:PORT",
                  "bootstrap address of rank 0; port 0 picks a free one", &options.rootAddress);
  table.add(choice("algorithm", "MODE", "auto",
                   "auto, direct (no control slots), ring or doubling (libfabric AllReduce), "
                   "flat (no hierarchical AllReduce across hosts)",
                   &options.algorithm, torus::coll::parseAlgorithm));
  table.addDurationMillis("timeout", "TORUS_COLL_TIMEOUT_MS", "",
                          "bound on every wait (e.g. 30s, 5m)", &options.timeoutMs);
  torus::config::addLogSettings(table, &options.log);
  const torus::config::CommandInfo info{"neuron-cc-bench", kUsage, kDescription, ""};
  if (auto exitCode = torus::config::parseCommandLine(table, info, argc, argv)) return *exitCode;
  torus::log::configure(options.log);

  const auto fail = [](const std::string& message) {
    std::fprintf(stderr, "neuron-cc-bench: %s\n", message.c_str());
    return 2;
  };
  auto minParsed = parseBytes(minBytes);
  auto maxParsed = parseBytes(maxBytes);
  if (!minParsed) return fail("--min-bytes: " + minParsed.error().message);
  if (!maxParsed) return fail("--max-bytes: " + maxParsed.error().message);
  options.bench.minBytes = *minParsed;
  options.bench.maxBytes = *maxParsed;
  if (options.bench.minBytes > options.bench.maxBytes) {
    return fail("--min-bytes " + minBytes + " is larger than --max-bytes " + maxBytes);
  }
  if (buffers != "runtime" && buffers != "user") {
    return fail("--buffers: expected runtime or user, got \"" + buffers + "\"");
  }
  options.bench.runtimeBuffers = buffers == "runtime";
  if (options.worldSize == 0) options.worldSize = options.firstRank + options.ranks;
  if (options.firstRank + options.ranks > options.worldSize) {
    return fail("--first-rank " + std::to_string(options.firstRank) + " + --ranks " +
                std::to_string(options.ranks) + " is more than --world-size " +
                std::to_string(options.worldSize));
  }
  if (options.firstRank > 0 && options.rootAddress.ends_with(":0")) {
    return fail("--first-rank " + std::to_string(options.firstRank) +
                " joins an existing root: give its --root-address with the port");
  }
  // Every pretend host gets the same number of ranks; --hosts 3 --ranks 2 used to run 2 hosts.
  if (options.hosts > 1 && options.ranks % options.hosts != 0) {
    return fail("--hosts " + std::to_string(options.hosts) + " does not split --ranks " +
                std::to_string(options.ranks) + " into hosts of equal size");
  }
  if (options.bench.op == torus::cli::BenchOp::kSendRecv && options.worldSize < 2) {
    return fail("--op sendrecv needs --ranks 2 or more");
  }
  if (options.bench.op == torus::cli::BenchOp::kSendRecv && options.bench.inPlace) {
    // A rank that receives first would overwrite what it still has to send.
    return fail("--op sendrecv has no in-place form");
  }

  // The bootstrap proves each rank belongs to this run. Ranks started elsewhere (--first-rank)
  // must be given the secret: it comes from the environment, never the command line (ps shows
  // that to everyone).
  if (const char* secret = std::getenv("TORUS_COLL_JOB_SECRET"); secret != nullptr && *secret) {
    options.jobSecret = secret;
  } else if (options.firstRank == 0 && options.ranks == options.worldSize) {
    std::random_device random;
    char hex[33];
    std::snprintf(hex, sizeof(hex), "%08x%08x%08x%08x", random(), random(), random(), random());
    options.jobSecret = hex;
  }

  // Bind before forking: rank 0 inherits the socket, the others learn the port, no race. A run
  // that joins another's world connects to the root address as given.
  torus::Result<torus::UniqueFd> listener = torus::UniqueFd();
  std::string rootAddress = options.rootAddress;
  if (options.firstRank == 0) {
    listener = torus::coll::listenOn(options.rootAddress);
    if (!listener) return fail(listener.error().message);
    auto port = torus::coll::boundPort(*listener);
    if (!port) return fail(port.error().message);
    const std::string host = options.rootAddress.substr(0, options.rootAddress.rfind(':'));
    rootAddress = host + ":" + std::to_string(*port);
  }

  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> children;
  for (int local = 0; local < options.ranks; ++local) {
    const int rank = options.firstRank + local;
    const pid_t pid = ::fork();
    if (pid < 0) {
      for (pid_t child : children)
        ::kill(child, SIGKILL);
      return fail("fork failed");
    }
    if (pid == 0) {
      torus::UniqueFd mine = rank == 0 ? std::move(*listener) : torus::UniqueFd();
      listener->reset();
      const int code = runRank(rank, options, std::move(mine), rootAddress);
      std::fflush(stdout);
      ::_exit(code);
    }
    children.push_back(pid);
    gChildren[static_cast<std::size_t>(local)] = pid;
    gChildCount.store(local + 1);
  }
  struct sigaction forward {};
  forward.sa_handler = forwardStatusSignal;
  sigemptyset(&forward.sa_mask);
  forward.sa_flags = SA_RESTART;
  ::sigaction(SIGUSR1, &forward, nullptr);
  listener->reset();
  int exitCode = 0;
  for (std::size_t rank = 0; rank < children.size(); ++rank) {
    int status = 0;
    ::waitpid(children[rank], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (!WIFEXITED(status)) {
        std::fprintf(stderr, "neuron-cc-bench: rank %zu killed by signal %d\n", rank,
                     WTERMSIG(status));
      }
      exitCode = 1;
    }
  }
  return exitCode;
}
