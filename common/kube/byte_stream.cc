#include "common/kube/byte_stream.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>

#include <arpa/inet.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include "common/base/strings.h"

namespace torus::kube {
namespace {

using Clock = ByteStream::Clock;

struct AddrInfoFree {
  void operator()(addrinfo* info) const { freeaddrinfo(info); }
};

}  // namespace

std::string opensslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no OpenSSL error queued";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

// SIGPIPE is thread-directed, so blocking it in this thread and discarding one we caused is
// enough (libpq does the same).
SigpipeBlock::SigpipeBlock() {
  sigemptyset(&pipe_);
  sigaddset(&pipe_, SIGPIPE);
  sigset_t pending;
  sigpending(&pending);
  wasPending_ = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
}

SigpipeBlock::~SigpipeBlock() {
  sigset_t pending;
  sigpending(&pending);
  if (!wasPending_ && sigismember(&pending, SIGPIPE) == 1) {
    const timespec now{0, 0};
    sigtimedwait(&pipe_, nullptr, &now);
  }
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

void ByteStream::SslCtxFree::operator()(SSL_CTX* context) const {
  SSL_CTX_free(context);
}
void ByteStream::SslFree::operator()(SSL* ssl) const {
  SSL_free(ssl);
}

Result<std::unique_ptr<ByteStream>> ByteStream::open(const ServerUrl& url, const TlsOptions& tls,
                                                     Clock::time_point deadline,
                                                     std::chrono::milliseconds timeout) {
  std::unique_ptr<ByteStream> stream(new ByteStream(deadline, timeout));
  if (auto connected = stream->connect(url, tls); !connected) return std::move(connected).error();
  return stream;
}

Result<void> ByteStream::connect(const ServerUrl& url, const TlsOptions& tls) {
  authority_ = url.authority;
  activity_ = "connecting to " + url.authority;
  if (auto connected = connectTcp(url); !connected || !url.tls) return connected;
  activity_ = "in the TLS handshake with " + url.authority;
  return startTls(url, tls);
}

Result<void> ByteStream::wait(short events, Clock::time_point until) {
  until = std::min(until, deadline_);
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0 && until == deadline_) {
      return makeError(
          ErrorCode::kDeadlineExceeded,
          "timed out after " + std::to_string(timeout_.count()) + " ms while " + activity_);
    }
    if (left.count() <= 0) {
      return makeError(ErrorCode::kDeadlineExceeded, "timed out while " + activity_ +
                                                         " (a shorter wait than the connection's " +
                                                         std::to_string(timeout_.count()) + " ms)");
    }
    pollfd entry{fd_.get(), events, 0};
    const int ready = ::poll(&entry, 1, int(std::min<std::int64_t>(left.count(), INT_MAX)));
    if (ready > 0) return okResult();  // errors and hang-ups show in the next read or write
    if (ready < 0 && errno != EINTR) {
      return makeError(ErrorCode::kUnavailable, std::string("poll: ") + std::strerror(errno));
    }
  }
}

Result<void> ByteStream::connectTcp(const ServerUrl& url) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  // Not bounded by the deadline: glibc has no portable asynchronous lookup. The API server is
  // nearly always an IP address or a name the node's resolver caches.
  if (const int failed = getaddrinfo(url.host.c_str(), url.port.c_str(), &hints, &found)) {
    return makeError(ErrorCode::kUnavailable,
                     "cannot resolve " + url.host + ": " + gai_strerror(failed));
  }
  const std::unique_ptr<addrinfo, AddrInfoFree> addresses(found);
  std::string failure = "no address";
  for (const addrinfo* address = found; address != nullptr; address = address->ai_next) {
    fd_.reset(::socket(address->ai_family, address->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                       address->ai_protocol));
    if (!fd_) {
      failure = std::string("socket: ") + std::strerror(errno);
      continue;
    }
    int error = ::connect(fd_.get(), address->ai_addr, address->ai_addrlen) == 0 ? 0 : errno;
    if (error == EINPROGRESS) {
      if (auto ready = wait(POLLOUT, deadline_); !ready) return ready;
      socklen_t size = sizeof error;
      if (::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &error, &size) != 0) error = errno;
    }
    if (error == 0) return okResult();
    failure = std::strerror(error);
  }
  fd_.reset();
  return makeError(ErrorCode::kUnavailable, "cannot connect to " + url.authority + ": " + failure);
}

Result<void> ByteStream::afterSsl(int result, const std::string& doing, Clock::time_point until) {
  const int error = SSL_get_error(ssl_.get(), result);
  if (error == SSL_ERROR_WANT_READ) return wait(POLLIN, until);
  if (error == SSL_ERROR_WANT_WRITE) return wait(POLLOUT, until);
  if (error == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
    return makeError(ErrorCode::kUnavailable,
                     doing + ": " + (errno != 0 ? std::strerror(errno) : "connection closed"));
  }
  return makeError(ErrorCode::kUnavailable, doing + ": " + opensslError());
}

Result<void> ByteStream::startTls(const ServerUrl& url, const TlsOptions& tls) {
  context_.reset(SSL_CTX_new(TLS_client_method()));
  if (!context_) return makeError(ErrorCode::kInternal, "SSL_CTX_new: " + opensslError());
  SSL_CTX* context = context_.get();
  SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
  // The caller's last message has arrived before the server closes, so a close without
  // close_notify truncates nothing it keeps; we read it as the end of the stream.
  SSL_CTX_set_options(context, SSL_OP_IGNORE_UNEXPECTED_EOF);
  if (!tls.insecureSkipVerify) {
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
    const int loaded = tls.caFile.empty()
                           ? SSL_CTX_set_default_verify_paths(context)
                           : SSL_CTX_load_verify_locations(context, tls.caFile.c_str(), nullptr);
    if (loaded != 1) {
      return makeError(ErrorCode::kFailedPrecondition,
                       "cannot load the certificate authority " +
                           (tls.caFile.empty() ? "(system default)" : tls.caFile) + ": " +
                           opensslError());
    }
  }
  // As KubeClient: mutual TLS only when both files are named.
  if (!tls.clientCertFile.empty() && !tls.clientKeyFile.empty() &&
      (SSL_CTX_use_certificate_chain_file(context, tls.clientCertFile.c_str()) != 1 ||
       SSL_CTX_use_PrivateKey_file(context, tls.clientKeyFile.c_str(), SSL_FILETYPE_PEM) != 1 ||
       SSL_CTX_check_private_key(context) != 1)) {
    return makeError(ErrorCode::kFailedPrecondition, "cannot load the client certificate " +
                                                         tls.clientCertFile + " and key " +
                                                         tls.clientKeyFile + ": " + opensslError());
  }
  ssl_.reset(SSL_new(context));
  if (!ssl_ || SSL_set_fd(ssl_.get(), fd_.get()) != 1) {
    return makeError(ErrorCode::kInternal, "SSL_new: " + opensslError());
  }
  unsigned char ip[16];
  const bool isIp = inet_pton(AF_INET, url.host.c_str(), ip) == 1 ||
                    inet_pton(AF_INET6, url.host.c_str(), ip) == 1;
  if (!isIp) SSL_set_tlsext_host_name(ssl_.get(), url.host.c_str());  // SNI is for names only
  if (!tls.insecureSkipVerify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl_.get());
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    const int set = isIp ? X509_VERIFY_PARAM_set1_ip_asc(param, url.host.c_str())
                         : X509_VERIFY_PARAM_set1_host(param, url.host.c_str(), 0);
    if (set != 1) {
      return makeError(ErrorCode::kInternal, "setting the expected host name: " + opensslError());
    }
  }
  for (;;) {
    ERR_clear_error();
    const int result = SSL_connect(ssl_.get());
    if (result == 1) return okResult();
    if (const long verified = SSL_get_verify_result(ssl_.get()); verified != X509_V_OK) {
      return makeError(ErrorCode::kUnavailable,
                       url.authority + "'s certificate was refused: " +
                           X509_verify_cert_error_string(verified) + " (checked against " +
                           (tls.caFile.empty() ? "the system's authorities" : tls.caFile) + ")");
    }
    if (auto next = afterSsl(result, "the TLS handshake with " + url.authority, deadline_); !next) {
      return next;
    }
  }
}

Result<std::size_t> ByteStream::readSome(char* data, std::size_t size, Clock::time_point until) {
  if (!pending_.empty()) {
    const std::size_t taken = std::min(size, pending_.size());
    std::memcpy(data, pending_.data(), taken);
    pending_.erase(0, taken);
    return taken;
  }
  const int chunk = int(std::min<std::size_t>(size, INT_MAX));
  if (ssl_) {
    // Decrypted bytes already in OpenSSL's buffer would never wake poll.
    if (SSL_pending(ssl_.get()) == 0) {
      if (auto ready = wait(POLLIN, until); !ready) return std::move(ready).error();
    }
    for (;;) {
      ERR_clear_error();
      const int got = SSL_read(ssl_.get(), data, chunk);
      if (got > 0) return std::size_t(got);
      if (SSL_get_error(ssl_.get(), got) == SSL_ERROR_ZERO_RETURN) return std::size_t{0};
      if (auto next = afterSsl(got, "reading", until); !next) return std::move(next).error();
    }
  }
  for (;;) {
    if (auto ready = wait(POLLIN, until); !ready) return std::move(ready).error();
    const ssize_t got = ::recv(fd_.get(), data, std::size_t(chunk), 0);
    if (got >= 0) return std::size_t(got);
    if (errno != EINTR && errno != EAGAIN) {
      return makeError(ErrorCode::kUnavailable, std::string("reading: ") + std::strerror(errno));
    }
  }
}

Result<void> ByteStream::readExact(char* data, std::size_t size, Clock::time_point until) {
  while (size > 0) {
    auto got = readSome(data, size, until);
    if (!got) return std::move(got).error();
    if (*got == 0) {
      return makeError(ErrorCode::kUnavailable, "the server closed the connection mid-frame");
    }
    data += *got;
    size -= *got;
  }
  return okResult();
}

// Tries before it waits: a close frame sent as the deadline passes still goes out when the
// socket has room, which it nearly always has.
Result<void> ByteStream::writeAll(std::string_view data) {
  while (!data.empty()) {
    if (ssl_) {
      // Retried with the same arguments until it has written everything (no partial writes).
      ERR_clear_error();
      const int wrote =
          SSL_write(ssl_.get(), data.data(), int(std::min<std::size_t>(data.size(), INT_MAX)));
      if (wrote > 0) {
        data.remove_prefix(std::size_t(wrote));
      } else {
        if (auto next = afterSsl(wrote, "writing", deadline_); !next) return next;
      }
      continue;
    }
    const ssize_t wrote = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
    if (wrote >= 0) {
      data.remove_prefix(std::size_t(wrote));
    } else if (errno == EAGAIN) {
      if (auto ready = wait(POLLOUT, deadline_); !ready) return ready;
    } else if (errno != EINTR) {
      return makeError(ErrorCode::kUnavailable, std::string("writing: ") + std::strerror(errno));
    }
  }
  return okResult();
}

Result<ServerUrl> parseServerUrl(std::string_view server) {
  ServerUrl url;
  const std::string lower = toLower(server);
  if (lower.starts_with("https://")) {
    server.remove_prefix(8);
  } else if (lower.starts_with("http://")) {
    url.tls = false;
    server.remove_prefix(7);
  } else {
    return makeError(ErrorCode::kInvalidArgument,
                     "server " + quoteJsonString(server) + ": expected https://host[:port][/path]");
  }
  const std::size_t slash = server.find('/');
  url.authority = std::string(server.substr(0, slash));
  if (slash != std::string_view::npos) url.prefix = std::string(server.substr(slash));
  while (url.prefix.ends_with('/'))
    url.prefix.pop_back();
  std::string_view rest = url.authority;
  if (rest.starts_with('[')) {  // [v6]:port
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return makeError(ErrorCode::kInvalidArgument,
                       "server " + quoteJsonString(url.authority) + ": no ] after an IPv6 address");
    }
    url.host = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
    if (rest.starts_with(':')) url.port = std::string(rest.substr(1));
  } else {
    const std::size_t colon = rest.rfind(':');
    url.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) url.port = std::string(rest.substr(colon + 1));
  }
  if (url.host.empty()) {
    return makeError(ErrorCode::kInvalidArgument,
                     "server " + quoteJsonString(url.authority) + ": no host");
  }
  if (url.port.empty()) url.port = url.tls ? "443" : "80";
  return url;
}

}  // namespace torus::kube
