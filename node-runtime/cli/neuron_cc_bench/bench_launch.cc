#include "node-runtime/cli/neuron_cc_bench/bench_launch.h"

#include <array>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "node-runtime/collectives/bootstrap/bootstrap.h"
#include "node-runtime/collectives/core/status.h"

namespace torus::cli {
namespace {

// The launcher passes SIGUSR1 on to its ranks, so `kill -USR1 <launcher>` reports every rank.
// Plain arrays and atomics: the handler may touch nothing else.
std::array<pid_t, 64> gChildren{};
std::atomic<int> gChildCount{0};

void forwardStatusSignal(int signal) {
  const int count = gChildCount.load(std::memory_order_relaxed);
  for (int i = 0; i < count; ++i)
    ::kill(gChildren[static_cast<std::size_t>(i)], signal);
}

int runRank(int rank, const BenchConfig& config, UniqueFd listener,
            const std::string& rootAddress) {
  coll::CommOptions comm;
  comm.rank = rank;
  comm.size = config.worldSize;
  comm.transport = config.transport;
  comm.ofiRegisterAlways = config.ofiRegisterAlways;
  comm.hostId = config.hostId;
  if (config.hosts > 1) {
    const int perHost = config.ranks / config.hosts;
    comm.hostId = "neuron-cc-bench-host" + std::to_string((rank - config.firstRank) / perHost);
  }
  comm.rootAddress = rootAddress;
  comm.jobSecret = config.jobSecret;
  comm.timeout = std::chrono::milliseconds(config.timeoutMs);
  comm.name = "neuron-cc-bench";
  comm.algorithm = config.algorithm;
  if (rank == 0) comm.rootListener = std::move(listener);
  if (auto installed = coll::installStatusSignal(SIGUSR1); !installed) {
    std::fprintf(stderr, "neuron-cc-bench: rank %d: %s\n", rank, installed.error().message.c_str());
  }
  auto communicator = coll::Communicator::create(std::move(comm));
  if (!communicator) {
    std::fprintf(stderr, "neuron-cc-bench: rank %d: %s\n", rank,
                 communicator.error().message.c_str());
    return 1;
  }
  auto ok = runBenchRank(**communicator, config.bench, stdout);
  if (!ok) {
    std::fprintf(stderr, "neuron-cc-bench: rank %d: %s\n", rank, ok.error().message.c_str());
    return 1;
  }
  return *ok ? 0 : 1;
}

}  // namespace

Result<int> launchRanks(const BenchConfig& config) {
  // Bind before forking: rank 0 inherits the socket, the others learn the port, no race. A run
  // that joins another's world connects to the root address as given.
  UniqueFd listener;
  std::string rootAddress = config.rootAddress;
  if (config.firstRank == 0) {
    auto bound = coll::listenOn(config.rootAddress);
    if (!bound) return std::move(bound).error();
    auto port = coll::boundPort(*bound);
    if (!port) return std::move(port).error();
    listener = std::move(*bound);
    rootAddress =
        config.rootAddress.substr(0, config.rootAddress.rfind(':')) + ":" + std::to_string(*port);
  }

  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> children;
  for (int local = 0; local < config.ranks; ++local) {
    const int rank = config.firstRank + local;
    const pid_t pid = ::fork();
    if (pid < 0) {
      for (pid_t child : children)
        ::kill(child, SIGKILL);
      for (pid_t child : children)
        ::waitpid(child, nullptr, 0);
      return makeError(ErrorCode::kInternal, "fork failed");
    }
    if (pid == 0) {
      UniqueFd mine = rank == 0 ? std::move(listener) : UniqueFd();
      listener.reset();
      const int code = runRank(rank, config, std::move(mine), rootAddress);
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
  listener.reset();
  int exitCode = 0;
  for (std::size_t rank = 0; rank < children.size(); ++rank) {
    int status = 0;
    ::waitpid(children[rank], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (!WIFEXITED(status)) {
        std::fprintf(stderr, "neuron-cc-bench: rank %zu killed by signal %d\n",
                     static_cast<std::size_t>(config.firstRank) + rank, WTERMSIG(status));
      }
      exitCode = 1;
    }
  }
  return exitCode;
}

}  // namespace torus::cli
