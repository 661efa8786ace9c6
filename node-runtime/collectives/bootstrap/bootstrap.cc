#include "node-runtime/collectives/bootstrap/bootstrap.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/base/parse.h"
#include "common/base/strings.h"

namespace torus::coll {
namespace {

// A rank says hello right after it connects; a connection that says nothing for this long is
// not one of ours (or is stuck) and is dropped, so it cannot hold the others up.
constexpr auto kHelloDeadline = std::chrono::seconds(5);
constexpr std::size_t kMaxPendingHellos = 256;
constexpr std::string_view kRefusedPrefix = "refused this rank: ";
Error sysError(std::string_view what, int err) {
  return makeError(ErrorCode::kUnavailable, std::string(what) + ": " + std::strerror(err));
}

std::string readFirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return std::string(trim(line));
}

std::string describeMissing(const std::vector<bool>& present) {
  std::string out;
  int count = 0;
  for (std::size_t r = 0; r < present.size(); ++r) {
    if (present[r]) continue;
    if (count++ > 0) out += ", ";
    out += std::to_string(r);
  }
  return (count == 1 ? "rank " : "ranks ") + out;
}

// Root's pid in the high half, random bits in the low half: unique on the host, and the
// shared-memory names (torus-<session hex>-...) say which process tree made them.
std::uint64_t newSessionId() {
  std::random_device device;
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(::getpid())) << 32) |
         (device() | 1U);
}

Result<BootstrapResult> runRoot(BootstrapRequest& request) {
  UniqueFd listener = std::move(request.rootListener);
  // The port may still be held for a moment (a previous job's root, a launcher's copy of
  // the socket): retry until the deadline instead of failing at once.
  auto backoff = std::chrono::milliseconds(5);
  while (!listener) {
    auto bound = listenOn(request.rootAddress);
    if (bound) {
      listener = std::move(*bound);
    } else if (bound.error().code != ErrorCode::kAlreadyExists ||
               Clock::now() + backoff >= request.deadline) {
      return std::move(bound).error();
    } else {
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
    }
  }
  BootstrapResult result;
  result.ranks.resize(static_cast<std::size_t>(request.size));
  result.ranks[0] = RankInfo{static_cast<int>(::getpid()), request.hostId, localMachineId()};
  std::vector<bool> present(static_cast<std::size_t>(request.size), false);
  present[0] = true;
  std::vector<LineSocket> connections(static_cast<std::size_t>(request.size));
  int arrived = 1;
  // The root gives up a little before the others would, so it can still tell them who is
  // missing and every rank's error names the culprit, not just "timed out".
  const auto now = Clock::now();
  const auto gatherDeadline = now + (request.deadline - now) * 9 / 10;
  const auto tellOthers = [&](const Error& error) {
    for (LineSocket& conn : connections) {
      if (conn) (void)conn.send("ERR " + error.message + "\n", request.deadline);
    }
    return error;
  };
  // Connections that have not said hello yet, each with its own short deadline.
  struct Pending {
    LineSocket socket;
    Deadline helloBy;
  };
  std::vector<Pending> pending;
  while (arrived < request.size) {
    const auto looked = Clock::now();
    std::erase_if(pending, [&](const Pending& conn) {
      if (looked < conn.helloBy) return false;
      TORUS_LOG(Warn, Coll, "bootstrap: dropped a connection that sent no hello in time",
                {"comm", request.commName});
      return true;
    });
    Deadline wakeBy = gatherDeadline;
    std::vector<pollfd> fds{{listener.get(), POLLIN, 0}};
    for (const Pending& conn : pending) {
      fds.push_back({conn.socket.fd(), POLLIN, 0});
      wakeBy = std::min(wakeBy, conn.helloBy);
    }
    const int ready = ::poll(fds.data(), fds.size(), millisLeft(wakeBy));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return tellOthers(sysError("bootstrap poll", errno));
    if (ready == 0 && Clock::now() >= gatherDeadline) {
      return tellOthers(makeError(ErrorCode::kDeadlineExceeded,
                                  describeMissing(present) + " never connected to root " +
                                      request.rootAddress + " (" + std::to_string(arrived) +
                                      " of " + std::to_string(request.size) +
                                      " ranks checked in)"));
    }
    // Hellos first (their fds follow the listener's), then new connections.
    std::vector<Pending> stillPending;
    for (std::size_t i = 0; i < pending.size(); ++i) {
      Pending& conn = pending[i];
      if (fds[i + 1].revents == 0) {
        stillPending.push_back(std::move(conn));
        continue;
      }
      auto line = conn.socket.pollLine("reading a rank's hello");
      if (line && !*line) {
        stillPending.push_back(std::move(conn));
        continue;
      }
      if (!line) {
        TORUS_LOG(Warn, Coll, "bootstrap: dropped a connection", {"comm", request.commName},
                  {"error", line.error().message});
        continue;
      }
      auto hello = parseHello(**line, request.jobSecret);
      if (!hello) {
        // Not one of this job's ranks: it does not get to fail the job. A rank of ours with the
        // wrong secret learns why at once instead of retrying until the deadline.
        TORUS_LOG(Warn, Coll, "bootstrap: ignored a connection that is not one of our ranks",
                  {"comm", request.commName}, {"error", hello.error().message});
        (void)conn.socket.send(
            "ERR " + std::string(kRefusedPrefix) + hello.error().message + "\n",
            std::min(Clock::now() + std::chrono::milliseconds(100), request.deadline));
        continue;
      }
      if (hello->size != request.size) {
        return tellOthers(makeError(ErrorCode::kInvalidArgument,
                                    "rank " + std::to_string(hello->rank) +
                                        " says the world size is " + std::to_string(hello->size) +
                                        ", root says " + std::to_string(request.size)));
      }
      if (hello->rank == 0 || hello->rank >= request.size ||
          present[static_cast<std::size_t>(hello->rank)]) {
        return tellOthers(makeError(ErrorCode::kInvalidArgument,
                                    "a process (pid " + std::to_string(hello->info.pid) +
                                        ") claims rank " + std::to_string(hello->rank) +
                                        ", which is out of range or taken"));
      }
      const auto index = static_cast<std::size_t>(hello->rank);
      present[index] = true;
      result.ranks[index] = hello->info;
      connections[index] = std::move(conn.socket);
      ++arrived;
    }
    pending = std::move(stillPending);
    if (fds[0].revents != 0) {
      LineSocket conn(UniqueFd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC)));
      if (conn) {
        if (pending.size() >= kMaxPendingHellos) {
          TORUS_LOG(Warn, Coll, "bootstrap: too many connections without a hello; dropped one",
                    {"comm", request.commName});
          pending.erase(pending.begin());
        }
        pending.push_back(
            {std::move(conn), std::min(Clock::now() + kHelloDeadline, gatherDeadline)});
      }
    }
  }
  result.session = newSessionId();
  if (request.onSessionReady) {
    TORUS_RETURN_IF_ERROR(request.onSessionReady(result.session), "preparing the session");
  }
  const std::string reply =
      sessionReply(SessionTable{result.session, result.ranks}, request.jobSecret);
  for (int r = 1; r < request.size; ++r) {
    TORUS_RETURN_IF_ERROR(connections[static_cast<std::size_t>(r)].send(reply, request.deadline),
                          "telling rank " + std::to_string(r) + " the session");
  }
  result.link = std::make_shared<BootstrapLink>(0, request.size, std::move(connections));
  return result;
}

// One attempt: connect, say hello, wait for the answer. kUnavailable = the connection went away
// before the root answered (a socket that was closed before the root took over the port).
Result<BootstrapResult> tryPeer(const BootstrapRequest& request, Clock::duration grace) {
  auto fd = connectToRoot(request.rootAddress, request.deadline);
  if (!fd) return std::move(fd).error();
  LineSocket socket(std::move(*fd));
  const std::string hello =
      helloLine(Hello{request.rank, request.size,
                      RankInfo{static_cast<int>(::getpid()), request.hostId, localMachineId()}},
                request.jobSecret);
  if (auto sent = socket.send(hello, request.deadline); !sent) {
    return Error{ErrorCode::kUnavailable, "greeting root: " + sent.error().message};
  }
  // The root answers only when every rank checked in: a timeout here means someone is missing,
  // and only the root knows who; its own error names them.
  // The root gives up at 90 % of the timeout and says who is missing; wait a little past our
  // own deadline for that answer so a slow scheduler does not turn it into a bare "timed out".
  auto first =
      socket.readLine(request.deadline + grace, "waiting for root rank 0 to gather all ranks");
  if (!first) {
    if (first.error().code == ErrorCode::kDeadlineExceeded) return std::move(first).error();
    return Error{ErrorCode::kUnavailable, first.error().message};
  }
  auto head = parseReplyHead(*first);
  if (!head) return std::move(head).error();
  if (head->gaveUp) {
    if (head->why.starts_with(kRefusedPrefix)) {
      return makeError(ErrorCode::kPermissionDenied, "root rank 0 " + head->why);
    }
    return makeError(ErrorCode::kDeadlineExceeded, "root rank 0 gave up: " + head->why);
  }
  SessionTable table{head->session, {}};
  for (int r = 0; r < request.size; ++r) {
    auto line = socket.readLine(request.deadline, "reading the rank table");
    if (!line) return std::move(line).error();
    auto row = parseRankRow(*line);
    if (!row)
      return std::move(row).error().withContext("rank table from root, rank " + std::to_string(r));
    table.ranks.push_back(std::move(*row));
  }
  if (auto verified = verifyReply(table, head->proof, request.jobSecret); !verified) {
    return std::move(verified).error();
  }
  BootstrapResult result;
  result.session = table.session;
  result.ranks = std::move(table.ranks);
  std::vector<LineSocket> toRoot;
  toRoot.push_back(std::move(socket));
  result.link = std::make_shared<BootstrapLink>(request.rank, request.size, std::move(toRoot));
  return result;
}

Result<BootstrapResult> runPeer(const BootstrapRequest& request) {
  const Clock::duration grace = (request.deadline - Clock::now()) / 5;
  auto backoff = std::chrono::milliseconds(5);
  while (true) {
    auto result = tryPeer(request, grace);
    if (result || result.error().code != ErrorCode::kUnavailable ||
        Clock::now() + backoff >= request.deadline) {
      return result;
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
}

}  // namespace

std::string localMachineId() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::string id = host[0] != '\0' ? host : "unknown";
  id += '/';
  id += readFirstLine("/proc/sys/kernel/random/boot_id");
  for (char& c : id) {
    if (c == ' ' || c == '\n' || c == '\t') c = '_';
  }
  return id;
}

std::string localHostId() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::string id = host[0] != '\0' ? host : "unknown";
  id += '/';  // appended separately: GCC 12 -O3 warns (-Wrestrict) on "/" + std::string&&
  id += readFirstLine("/proc/sys/kernel/random/boot_id");
  // Shared memory is shared within an IPC namespace: a pod's containers share one, two pods on
  // the same machine do not.
  std::error_code ec;
  const auto ipc = std::filesystem::read_symlink("/proc/self/ns/ipc", ec);
  if (!ec) {
    id += '/';
    id += ipc.string();
  }
  for (char& c : id) {
    if (c == ' ' || c == '\n' || c == '\t') c = '_';
  }
  return id;
}

Result<BootstrapResult> bootstrap(BootstrapRequest request) {
  if (request.hostId.empty()) request.hostId = localHostId();
  if (request.size < 1 || request.rank < 0 || request.rank >= request.size) {
    return makeError(ErrorCode::kInvalidArgument, "rank " + std::to_string(request.rank) +
                                                      " is not in a world of size " +
                                                      std::to_string(request.size));
  }
  if (request.size == 1) {
    BootstrapResult result{
        newSessionId(),
        {RankInfo{static_cast<int>(::getpid()), request.hostId, localMachineId()}},
        nullptr};
    if (request.onSessionReady) {
      TORUS_RETURN_IF_ERROR(request.onSessionReady(result.session), "preparing the session");
    }
    return result;
  }
  auto result = request.rank == 0 ? runRoot(request) : runPeer(request);
  if (!result) {
    return std::move(result).error().withContext("bootstrap of " + request.commName + " (rank " +
                                                 std::to_string(request.rank) + " of " +
                                                 std::to_string(request.size) + ")");
  }
  return result;
}

}  // namespace torus::coll
