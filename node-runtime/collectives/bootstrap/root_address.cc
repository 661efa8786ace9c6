#include "node-runtime/collectives/bootstrap/root_address.h"

#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "common/base/parse.h"

namespace torus::coll {
namespace {

Error sysError(std::string_view what, int err) {
  return makeError(ErrorCode::kUnavailable, std::string(what) + ": " + std::strerror(err));
}

struct HostPort {
  std::string host;
  std::string port;
};

Result<HostPort> splitAddress(std::string_view address) {
  std::string_view host;
  std::string_view port;
  if (!address.empty() && address.front() == '[') {
    const auto close = address.find(']');
    if (close == std::string_view::npos || close + 1 >= address.size() ||
        address[close + 1] != ':') {
      return makeError(ErrorCode::kInvalidArgument,
                       "root address \"" + std::string(address) + "\": expected [v6addr]:port");
    }
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    const auto colon = address.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
      return makeError(ErrorCode::kInvalidArgument,
                       "root address \"" + std::string(address) + "\": expected host:port");
    }
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  }
  if (auto parsed = parseInt(port, 0, 65535); !parsed) {
    return makeError(ErrorCode::kInvalidArgument, "root address \"" + std::string(address) +
                                                      "\": bad port \"" + std::string(port) + "\"");
  }
  return HostPort{std::string(host), std::string(port)};
}

struct AddrInfoDeleter {
  void operator()(addrinfo* info) const { ::freeaddrinfo(info); }
};
using AddrInfoPtr = std::unique_ptr<addrinfo, AddrInfoDeleter>;

Result<AddrInfoPtr> resolve(std::string_view address, bool passive) {
  auto hostPort = splitAddress(address);
  if (!hostPort) return std::move(hostPort).error();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* result = nullptr;
  if (int rc = ::getaddrinfo(hostPort->host.c_str(), hostPort->port.c_str(), &hints, &result);
      rc != 0) {
    return makeError(
        ErrorCode::kInvalidArgument,
        "resolving root address \"" + std::string(address) + "\": " + ::gai_strerror(rc));
  }
  return AddrInfoPtr(result);
}

}  // namespace

Result<UniqueFd> connectToRoot(const std::string& address, Deadline deadline) {
  auto info = resolve(address, false);
  if (!info) return std::move(info).error();
  int lastError = 0;
  auto backoff = std::chrono::milliseconds(5);
  while (true) {
    for (addrinfo* ai = info->get(); ai != nullptr; ai = ai->ai_next) {
      UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
      if (!fd) {
        lastError = errno;
        continue;
      }
      if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0) {
        const int one = 1;
        ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return fd;
      }
      lastError = errno;
    }
    if (Clock::now() + backoff >= deadline) break;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
  return makeError(
      ErrorCode::kDeadlineExceeded,
      "root rank 0 at " + address +
          " not reachable before the deadline (last error: " + std::strerror(lastError) + ")");
}

Result<UniqueFd> listenOn(std::string_view address) {
  auto info = resolve(address, true);
  if (!info) return std::move(info).error();
  int lastError = 0;
  for (addrinfo* ai = info->get(); ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd) {
      lastError = errno;
      continue;
    }
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd.get(), 256) == 0) {
      return fd;
    }
    lastError = errno;
  }
  return makeError(lastError == EADDRINUSE ? ErrorCode::kAlreadyExists : ErrorCode::kUnavailable,
                   "cannot listen on " + std::string(address) + ": " + std::strerror(lastError));
}

Result<int> boundPort(const UniqueFd& listener) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return sysError("getsockname", errno);
  }
  if (addr.ss_family == AF_INET6) {
    return static_cast<int>(ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port));
  }
  return static_cast<int>(ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port));
}

}  // namespace torus::coll
