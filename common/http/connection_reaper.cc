#include "common/http/connection_reaper.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <linux/tcp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "common/base/log.h"
#include "common/base/unique_fd.h"
#include "common/metrics/event_counters.h"

namespace torus::http {
namespace {

std::string peerKey(const std::string& address, int port) {
  return address + " " + std::to_string(port);
}

int portOf(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  }
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
  }
  return -1;
}

// Ends a connection under the worker that serves it. shutdown() alone is not enough: bytes the
// kernel has already queued stay readable after SHUT_RD, so a worker fed endless headers would
// keep parsing them. connect(AF_UNSPEC) disconnects the socket (RFC 793 abort: the queues are
// dropped, the peer gets a reset) and wakes any waiter with an error; the worker then closes it.
void abort(int fd) {
  ::shutdown(fd, SHUT_RDWR);
  sockaddr unspecified{};
  unspecified.sa_family = AF_UNSPEC;
  ::connect(fd, &unspecified, sizeof(unspecified));
}

// One of the server's connections, held through a dup of its descriptor, so acting on it can
// never reach a socket that took the same descriptor number after the server closed this one.
struct Socket {
  UniqueFd fd;
  unsigned long inode = 0;
  std::string peer;
  std::uint64_t bytesReceived = 0;
};

// The server's connections among this process's descriptors: TCP sockets bound to `localPort`
// that have a peer (the listening socket has none).
std::vector<Socket> findConnections(int localPort) {
  std::vector<Socket> found;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return found;
  std::vector<int> numbers;
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long number = std::strtol(entry->d_name, &end, 10);
    if (end != entry->d_name && *end == '\0' && number != ::dirfd(dir)) {
      numbers.push_back(static_cast<int>(number));
    }
  }
  ::closedir(dir);
  for (const int number : numbers) {
    UniqueFd fd(::fcntl(number, F_DUPFD_CLOEXEC, 0));
    if (!fd) continue;  // closed since the listing
    struct stat status {};
    if (::fstat(fd.get(), &status) != 0 || !S_ISSOCK(status.st_mode)) continue;
    sockaddr_storage local{};
    socklen_t length = sizeof(local);
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &length) != 0 ||
        portOf(local) != localPort) {
      continue;
    }
    sockaddr_storage peer{};
    length = sizeof(peer);
    if (::getpeername(fd.get(), reinterpret_cast<sockaddr*>(&peer), &length) != 0) continue;
    char host[NI_MAXHOST] = {};
    if (::getnameinfo(reinterpret_cast<const sockaddr*>(&peer), length, host, sizeof(host), nullptr,
                      0, NI_NUMERICHOST) != 0) {
      continue;
    }
    tcp_info info{};
    socklen_t infoLength = sizeof(info);
    std::uint64_t bytes = 0;
    if (::getsockopt(fd.get(), IPPROTO_TCP, TCP_INFO, &info, &infoLength) == 0 &&
        infoLength >= offsetof(tcp_info, tcpi_bytes_received) + sizeof(info.tcpi_bytes_received)) {
      bytes = info.tcpi_bytes_received;
    }
    Socket& socket = found.emplace_back();
    socket.fd = std::move(fd);
    socket.inode = static_cast<unsigned long>(status.st_ino);
    socket.peer = peerKey(host, portOf(peer));
    socket.bytesReceived = bytes;
  }
  return found;
}

}  // namespace

ConnectionReaper::ConnectionReaper(int localPort, Limits limits)
    : localPort_(localPort), limits_(limits) {}

ConnectionReaper::~ConnectionReaper() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ConnectionReaper::start() {
  thread_ = std::thread([this] {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      lock.unlock();
      sweep(Clock::now());
      lock.lock();
      wake_.wait_for(lock, limits_.sweepEvery, [this] { return stopping_; });
    }
  });
}

void ConnectionReaper::sweep(Clock::time_point now) {
  std::vector<Socket> sockets = findConnections(localPort_);
  std::vector<std::pair<const Socket*, const char*>> toShut;  // and why
  std::vector<std::pair<Clock::time_point, const Socket*>> idle;
  {
    std::lock_guard lock(mutex_);
    std::map<unsigned long, Connection> live;
    std::set<std::string> peers;
    for (const Socket& socket : sockets) {
      peers.insert(socket.peer);
      const Handling handling = [&] {
        const auto it = handling_.find(socket.peer);
        return it == handling_.end() ? Handling{} : it->second;
      }();
      Connection connection;
      if (const auto known = connections_.find(socket.inode);
          known != connections_.end() && known->second.peer == socket.peer) {
        connection = known->second;
      } else {
        // Counted from the accept: the kernel's count starts there.
        connection = {socket.peer, now, 0, handling.finished};
      }
      if (handling.active > 0 || handling.finished != connection.finishedAtProgress) {
        // Answering now, or answered since the last sweep: the next request starts afresh.
        connection.lastProgress = now;
        connection.bytesAtProgress = socket.bytesReceived;
        connection.finishedAtProgress = handling.finished;
      }
      live[socket.inode] = connection;
      if (handling.active > 0) continue;
      if (now - connection.lastProgress > limits_.requestDeadline) {
        toShut.emplace_back(&socket, "deadline");
      } else if (limits_.requestBytes > 0 &&
                 socket.bytesReceived - connection.bytesAtProgress > limits_.requestBytes) {
        toShut.emplace_back(&socket, "bytes");
      } else {
        idle.emplace_back(connection.lastProgress, &socket);
      }
    }
    const std::size_t remaining = sockets.size() - toShut.size();
    if (remaining > limits_.maxConnections) {
      // Over the cap: the connections that have waited longest for a request go first; the ones
      // inside a handler are never cut.
      std::sort(idle.begin(), idle.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      const std::size_t excess = std::min(remaining - limits_.maxConnections, idle.size());
      for (std::size_t i = 0; i < excess; ++i) {
        toShut.emplace_back(idle[i].second, "cap");
      }
    }
    connections_ = std::move(live);
    std::erase_if(handling_, [&](const auto& entry) {
      return entry.second.active == 0 && !peers.contains(entry.first);
    });
  }
  for (const auto& [socket, reason] : toShut) {
    TORUS_LOG(Debug, Http, "cutting a connection that is too slow, too large or one too many",
              {"peer", socket->peer}, {"reason", reason});
    metrics::processCounters().add(metrics::names::kHttpConnectionsCutTotal, {{"reason", reason}});
    abort(socket->fd.get());
  }
}

void ConnectionReaper::shutdownAll() {
  for (const Socket& socket : findConnections(localPort_))
    abort(socket.fd.get());
}

void ConnectionReaper::handlerEntered(const std::string& peerAddress, int peerPort) {
  std::lock_guard lock(mutex_);
  ++handling_[peerKey(peerAddress, peerPort)].active;
}

void ConnectionReaper::handlerLeft(const std::string& peerAddress, int peerPort) {
  std::lock_guard lock(mutex_);
  Handling& handling = handling_[peerKey(peerAddress, peerPort)];
  if (handling.active > 0) --handling.active;
  ++handling.finished;  // the answer is being written: progress, even before the logger says so
}

void ConnectionReaper::requestAnswered(const std::string& peerAddress, int peerPort) {
  std::lock_guard lock(mutex_);
  ++handling_[peerKey(peerAddress, peerPort)].finished;
}

}  // namespace torus::http
