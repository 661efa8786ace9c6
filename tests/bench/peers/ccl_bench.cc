// One oneCCL collective (float32 sum), timed like nccl-tests; rank 0 prints one JSON line.
//
//   ccl_bench OP BYTES ITERS WARMUP RANKS                       # forks RANKS ranks itself
//   CCL_BENCH_KVS_FILE=F mpiexec -n RANKS ccl_bench OP BYTES ITERS WARMUP RANKS
//
// OP is allreduce, allgather or reducescatter; BYTES is nccl-tests' S (the per-rank buffer for
// AllReduce, the total of all ranks' blocks for AllGather and ReduceScatter). Rank 0 makes
// oneCCL's main key-value store (KVS) and hands its address to the other ranks, which build
// their communicators from it. Two ways to start the ranks:
// - alone, the program forks RANKS processes before oneCCL is touched (no launcher, no PMI) and
//   rank 0 writes the KVS address into one pipe per rank;
// - under a PMI launcher (Intel MPI's mpiexec sets PMI_RANK and PMI_SIZE), rank 0 writes the
//   address to the file CCL_BENCH_KVS_FILE (atomically, by rename) and the others poll for it.
// Which transport oneCCL uses is the environment's business (CCL_ATL_TRANSPORT, CCL_ATL_SHM,
// FI_PROVIDER, FI_TCP_IFACE, CCL_KVS_IFACE): the calling script sets it. Time is the mean over
// ITERS iterations and over ranks; every rank checks its whole result after the timed loop.
// Exit status 0 only if every rank ran to the end.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <oneapi/ccl.hpp>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

struct Case {
  std::string op;
  long long bytes = 0;
  int iters = 0;
  int warmup = 0;
  int ranks = 0;
};

// Sizes in elements, and S and the busbw factor as nccl-tests define them.
struct Shape {
  size_t count = 0;  // the count argument of the call
  size_t inCount = 0;
  size_t outCount = 0;
  double bytes = 0;
  double factor = 0;
};

Shape shapeOf(const Case& c) {
  Shape s;
  const size_t n = static_cast<size_t>(c.ranks);
  if (c.op == "allreduce") {
    s.count = s.inCount = s.outCount = static_cast<size_t>(c.bytes) / 4;
    s.bytes = s.count * 4.0;
    s.factor = 2.0 * (c.ranks - 1) / c.ranks;
  } else if (c.op == "allgather") {
    s.count = static_cast<size_t>(c.bytes) / 4 / n;
    s.inCount = s.count;
    s.outCount = s.count * n;
    s.bytes = s.outCount * 4.0;
    s.factor = static_cast<double>(c.ranks - 1) / c.ranks;
  } else {  // reducescatter
    s.count = static_cast<size_t>(c.bytes) / 4 / n;
    s.inCount = s.count * n;
    s.outCount = s.count;
    s.bytes = s.inCount * 4.0;
    s.factor = static_cast<double>(c.ranks - 1) / c.ranks;
  }
  return s;
}

ccl::event run(const Case& c, const Shape& s, const float* in, float* out,
               const ccl::communicator& comm) {
  if (c.op == "allreduce") return ccl::allreduce(in, out, s.count, ccl::reduction::sum, comm);
  if (c.op == "allgather") return ccl::allgather(in, out, s.count, ccl::datatype::float32, comm);
  return ccl::reduce_scatter(in, out, s.count, ccl::datatype::float32, ccl::reduction::sum, comm);
}

// Where the KVS address goes: pipes (forked ranks) or a file (ranks from a PMI launcher).
struct Exchange {
  int readFd = -1;            // this rank's pipe from rank 0
  std::vector<int> writeFds;  // rank 0: one pipe per other rank
  std::string file;           // launcher mode: the address file
};

bool publish(const Exchange& x, const ccl::kvs::address_type& address) {
  if (!x.file.empty()) {
    const std::string partial = x.file + ".partial";
    std::ofstream(partial, std::ios::binary)
        .write(address.data(), static_cast<std::streamsize>(address.size()));
    return std::rename(partial.c_str(), x.file.c_str()) == 0;
  }
  for (int fd : x.writeFds)
    if (write(fd, address.data(), address.size()) != static_cast<ssize_t>(address.size()))
      return false;
  return true;
}

bool fetch(const Exchange& x, ccl::kvs::address_type& address) {
  if (!x.file.empty()) {
    // Bounded: the calling script's timeout ends a run whose rank 0 never publishes.
    for (;;) {
      std::ifstream in(x.file, std::ios::binary);
      if (in && in.read(address.data(), static_cast<std::streamsize>(address.size()))) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  size_t got = 0;
  while (got < address.size()) {
    ssize_t n = read(x.readFd, address.data() + got, address.size() - got);
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

int runRank(const Case& c, int rank, const Exchange& x) {
  ccl::init();
  ccl::shared_ptr_class<ccl::kvs> kvs;
  ccl::kvs::address_type address{};
  if (rank == 0) {
    kvs = ccl::create_main_kvs();
    address = kvs->get_address();
    if (!publish(x, address)) {
      std::perror("ccl_bench: handing the kvs address to the other ranks");
      return 1;
    }
  } else {
    if (!fetch(x, address)) {
      std::fprintf(stderr, "ccl_bench: rank %d: no kvs address from rank 0\n", rank);
      return 1;
    }
    kvs = ccl::create_kvs(address);
  }
  auto comm = ccl::create_communicator(c.ranks, rank, kvs);

  const Shape s = shapeOf(c);
  std::vector<float> in(s.inCount + 1, static_cast<float>(rank + 1));
  std::vector<float> out(s.outCount + 1, 0.0f);
  std::chrono::steady_clock::time_point start;
  for (int it = 0; it < c.warmup + c.iters; ++it) {
    if (it == c.warmup) {
      ccl::barrier(comm).wait();
      start = std::chrono::steady_clock::now();
    }
    run(c, s, in.data(), out.data(), comm).wait();
  }
  const double local =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      c.iters;

  // AllGather: block r holds r + 1; the reductions sum 1..n everywhere.
  bool ok = true;
  for (size_t i = 0; i < s.outCount && ok; ++i) {
    const float want =
        c.op == "allgather" ? static_cast<float>(i / s.count + 1) : c.ranks * (c.ranks + 1) / 2.0f;
    ok = out[i] == want;
  }
  std::vector<double> mine{local, ok ? 0.0 : 1.0}, all(2, 0.0);
  ccl::allreduce(mine.data(), all.data(), 2, ccl::reduction::sum, comm).wait();
  if (rank == 0) {
    const double t = all[0] / c.ranks;
    std::printf(
        "{\"op\":\"%s\",\"ranks\":%d,\"bytes\":%.0f,\"time_us\":%.3f,\"algbw_GBps\":%.4f,"
        "\"busbw_GBps\":%.4f,\"check\":\"%s\"}\n",
        c.op.c_str(), c.ranks, s.bytes, t, s.bytes / t / 1e3, s.bytes / t / 1e3 * s.factor,
        all[1] == 0.0 ? "ok" : "fail");
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr,
                 "usage: ccl_bench allreduce|allgather|reducescatter BYTES ITERS WARMUP RANKS\n");
    return 2;
  }
  Case c{argv[1], std::atoll(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5])};
  if ((c.op != "allreduce" && c.op != "allgather" && c.op != "reducescatter") || c.iters < 1 ||
      c.warmup < 0 || c.ranks < 1 || c.bytes < (c.op == "allreduce" ? 4 : 4 * c.ranks)) {
    std::fprintf(stderr, "ccl_bench: bad arguments\n");
    return 2;
  }
  if (const char* pmiRank = std::getenv("PMI_RANK")) {
    const char* file = std::getenv("CCL_BENCH_KVS_FILE");
    const char* pmiSize = std::getenv("PMI_SIZE");
    if (!file || !*file || (pmiSize && std::atoi(pmiSize) != c.ranks)) {
      std::fprintf(stderr, "ccl_bench: under a launcher, set CCL_BENCH_KVS_FILE and -n RANKS\n");
      return 2;
    }
    Exchange x;
    x.file = file;
    try {
      return runRank(c, std::atoi(pmiRank), x);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ccl_bench: rank %s: %s\n", pmiRank, e.what());
      return 1;
    }
  }
  // One pipe per rank > 0: rank 0 writes the main kvs address into each.
  std::vector<int> readFds(c.ranks, -1), writeFds;
  for (int r = 1; r < c.ranks; ++r) {
    int fds[2];
    if (pipe(fds) != 0) {
      perror("ccl_bench: pipe");
      return 1;
    }
    readFds[r] = fds[0];
    writeFds.push_back(fds[1]);
  }
  const pid_t parent = getpid();
  std::vector<pid_t> children;
  for (int r = 0; r < c.ranks; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("ccl_bench: fork");
      return 1;
    }
    if (pid == 0) {
      // A rank must not outlive its launcher, whoever kills the launcher.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      int status = 1;
      try {
        Exchange x;
        x.readFd = readFds[r];
        if (r == 0) x.writeFds = writeFds;
        status = runRank(c, r, x);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "ccl_bench: rank %d: %s\n", r, e.what());
      }
      std::fflush(stdout);
      _exit(status);
    }
    children.push_back(pid);
  }
  // Wait for every rank; if one fails, the others would wait for it forever: kill them.
  int failed = 0;
  for (size_t done = 0; done < children.size(); ++done) {
    int status = 0;
    pid_t pid = wait(&status);
    if (pid < 0) break;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (!failed)
        for (pid_t other : children)
          if (other != pid) kill(other, SIGKILL);
      failed = 1;
    }
  }
  return failed;
}
