#include "common/kube/websocket_client.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstring>
#include <map>

#include <arpa/inet.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include "common/base/strings.h"
#include "common/base/unique_fd.h"

namespace torus::kube {
namespace {

using Clock = WebSocketConnection::Clock;

constexpr std::size_t kMaxHeadBytes = 64 << 10;     // the 101 reply's or a refusal's headers
constexpr std::size_t kMaxBodyBytes = 64 << 10;     // a refusal's body
constexpr std::size_t kMaxMessageBytes = 16 << 20;  // one WebSocket message, reassembled
// RFC 6455 5.2; opcodes 8 and up are control frames.
enum Opcode : unsigned char { kContinuation = 0, kText, kBinary, kClose = 8, kPing, kPong };

Error protocolError(const std::string& what) {
  return makeError(ErrorCode::kInternal, "protocol violation: " + what);
}

// The first queued OpenSSL error, which names the failing check ("certificate verify failed").
std::string opensslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no OpenSSL error queued";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

std::string base64(const unsigned char* bytes, std::size_t size) {
  std::string out(4 * ((size + 2) / 3) + 1, '\0');  // EVP_EncodeBlock adds a NUL
  out.resize(EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes, int(size)));
  return out;
}

// RFC 6455 4.2.2: proves the server read our key and speaks WebSocket (not a caching proxy).
std::string acceptFor(std::string_view key) {
  const std::string text = std::string(key) + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha1(), nullptr);
  return base64(digest, size);
}

// OpenSSL writes with write(2), which raises SIGPIPE when the server has reset the connection;
// a library call must not kill its process. SIGPIPE is thread-directed, so blocking it in this
// thread and discarding one we caused is enough (libpq does the same).
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    wasPending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
  }
  ~SigpipeBlock() {
    sigset_t pending;
    sigpending(&pending);
    if (!wasPending_ && sigismember(&pending, SIGPIPE) == 1) {
      const timespec now{0, 0};
      sigtimedwait(&pipe_, nullptr, &now);
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t pipe_{};
  sigset_t previous_{};
  bool wasPending_ = false;
};

struct SslCtxFree {
  void operator()(SSL_CTX* context) const { SSL_CTX_free(context); }
};
struct SslFree {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};
struct AddrInfoFree {
  void operator()(addrinfo* info) const { freeaddrinfo(info); }
};

}  // namespace

// One TCP (optionally TLS) connection. Reads end at a bound no later than the deadline; writes
// and the handshakes at the deadline.
class ByteStream {
 public:
  ByteStream(Clock::time_point deadline, std::chrono::milliseconds timeout)
      : deadline_(deadline), timeout_(timeout) {}

  Result<void> open(const ServerUrl& url, const TlsOptions& tls);
  // Bytes read, 0 when the server closed the connection.
  Result<std::size_t> readSome(char* data, std::size_t size, Clock::time_point until);
  Result<void> readExact(char* data, std::size_t size, Clock::time_point until);
  Result<void> writeAll(std::string_view data);
  // Bytes read past the upgrade reply's headers: the first frames.
  void unread(std::string_view data) { pending_.insert(0, data); }
  void setActivity(std::string activity) { activity_ = std::move(activity); }
  const std::string& authority() const { return authority_; }
  Clock::time_point deadline() const { return deadline_; }

 private:
  Result<void> wait(short events, Clock::time_point until);
  Result<void> connectTcp(const ServerUrl& url);
  Result<void> startTls(const ServerUrl& url, const TlsOptions& tls);
  // What an SSL_* call that returned `result` needs next: wait and retry (ok), or an error.
  Result<void> afterSsl(int result, const std::string& doing, Clock::time_point until);

  Clock::time_point deadline_;
  std::chrono::milliseconds timeout_;
  std::string activity_;
  std::string authority_;
  UniqueFd fd_;
  std::unique_ptr<SSL_CTX, SslCtxFree> context_;
  std::unique_ptr<SSL, SslFree> ssl_;  // declared after fd_: freed before the socket closes
  std::string pending_;
};

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

Result<void> ByteStream::open(const ServerUrl& url, const TlsOptions& tls) {
  authority_ = url.authority;
  activity_ = "connecting to " + url.authority;
  if (auto connected = connectTcp(url); !connected || !url.tls) return connected;
  activity_ = "in the TLS handshake with " + url.authority;
  return startTls(url, tls);
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

namespace {

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased, repeats joined with ", "
};

std::string headerOf(const HttpReply& reply, const std::string& name) {
  const auto found = reply.headers.find(name);
  return found == reply.headers.end() ? std::string() : found->second;
}

// Reads up to the blank line; what follows (the first frames) goes back to the stream.
Result<HttpReply> readReplyHead(ByteStream& stream) {
  std::string head;
  char buffer[4096];
  std::size_t end;
  while ((end = head.find("\r\n\r\n")) == std::string::npos) {
    if (head.size() > kMaxHeadBytes) return protocolError("reply headers over 64 KiB");
    auto got = stream.readSome(buffer, sizeof buffer, stream.deadline());
    if (!got) return std::move(got).error();
    if (*got == 0) {
      return makeError(ErrorCode::kUnavailable, "the server closed the connection without a reply");
    }
    head.append(buffer, *got);
  }
  stream.unread(std::string_view(head).substr(end + 4));
  head.resize(end);
  HttpReply reply;
  const std::string_view text = head;
  const std::string_view statusLine = text.substr(0, text.find("\r\n"));
  const bool parsed =
      statusLine.starts_with("HTTP/1.") && statusLine.size() >= 12 &&
      std::from_chars(statusLine.data() + 9, statusLine.data() + 12, reply.status).ptr ==
          statusLine.data() + 12;
  if (!parsed) {
    return protocolError("not an HTTP reply: " + quoteJsonString(clipForMessage(statusLine)));
  }
  std::size_t start = statusLine.size() + 2;
  while (start < text.size()) {
    const std::size_t stop = std::min(text.find("\r\n", start), text.size());
    const std::string_view line = text.substr(start, stop - start);
    start = stop + 2;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string& value = reply.headers[toLower(trim(line.substr(0, colon)))];
    value += (value.empty() ? "" : ", ") + std::string(trim(line.substr(colon + 1)));
  }
  return reply;
}

// HTTP/1.1 chunked coding: the body once its last chunk has arrived, nullopt before. Malformed
// coding gives the text as it came: it is only quoted in an error.
std::optional<std::string> dechunked(std::string_view text) {
  std::string body;
  for (;;) {
    const std::size_t lineEnd = text.find("\r\n");
    if (lineEnd == std::string_view::npos) return std::nullopt;
    std::size_t size = 0;
    if (std::from_chars(text.data(), text.data() + lineEnd, size, 16).ec != std::errc()) {
      return std::string(text);
    }
    if (size == 0) return body;  // trailers ignored
    text.remove_prefix(lineEnd + 2);
    if (size > text.size() || text.size() - size < 2) return std::nullopt;
    body.append(text.substr(0, size));
    text.remove_prefix(size + 2);
  }
}

// A refused upgrade's body, for the caller's error message. Best effort and bounded: the status
// code is the answer even if the body never comes, and a kept-alive connection is not waited on
// past Content-Length or the last chunk.
std::string readBody(ByteStream& stream, const HttpReply& reply) {
  std::size_t length = kMaxBodyBytes;
  const std::string lengthText = headerOf(reply, "content-length");
  std::from_chars(lengthText.data(), lengthText.data() + lengthText.size(), length);
  length = std::min(length, kMaxBodyBytes);
  const bool chunked =
      toLower(headerOf(reply, "transfer-encoding")).find("chunked") != std::string::npos;
  std::string body;
  char buffer[4096];
  while (body.size() < length) {
    if (chunked) {
      if (auto decoded = dechunked(body)) return *decoded;
    }
    auto got =
        stream.readSome(buffer, std::min(sizeof buffer, length - body.size()), stream.deadline());
    if (!got || *got == 0) break;
    body.append(buffer, *got);
  }
  return chunked ? dechunked(body).value_or(body) : body;
}

struct Frame {
  bool fin = true;
  unsigned char opcode = 0;
  std::string payload;
};

// RFC 6455 5.2. nullopt: the server closed the connection between frames.
Result<std::optional<Frame>> readFrame(ByteStream& stream, std::size_t limit,
                                       Clock::time_point until) {
  unsigned char head[8];
  char* bytes = reinterpret_cast<char*>(head);
  auto got = stream.readSome(bytes, 1, until);
  if (!got) return std::move(got).error();
  if (*got == 0) return std::optional<Frame>();
  if (auto read = stream.readExact(bytes + 1, 1, until); !read) return std::move(read).error();
  Frame frame{(head[0] & 0x80) != 0, static_cast<unsigned char>(head[0] & 0x0f), {}};
  if ((head[0] & 0x70) != 0) return protocolError("a frame with reserved bits set");
  if ((head[1] & 0x80) != 0) return protocolError("a masked frame from the server");
  std::uint64_t size = head[1] & 0x7f;
  if (size >= 126) {
    const std::size_t width = size == 126 ? 2 : 8;
    if (auto read = stream.readExact(bytes, width, until); !read) return std::move(read).error();
    size = 0;
    for (std::size_t i = 0; i < width; ++i)
      size = size << 8 | head[i];
  }
  if (frame.opcode >= kClose && (size > 125 || !frame.fin)) {
    return protocolError("a control frame that is fragmented or over 125 bytes");
  }
  if (size > limit) {
    return protocolError("a frame of " + std::to_string(size) + " bytes (the limit is " +
                         std::to_string(limit) + ")");
  }
  frame.payload.resize(size);
  if (auto read = stream.readExact(frame.payload.data(), size, until); !read) {
    return std::move(read).error();
  }
  return std::optional<Frame>(std::move(frame));
}

// A client's frames are masked (RFC 6455 5.3) so that proxies cannot be fooled by chosen bytes.
// Only control frames are sent: a pong or a close, 125 bytes at most.
Result<void> writeFrame(ByteStream& stream, Opcode opcode, std::string_view payload) {
  TORUS_CHECK(payload.size() <= 125, "a control frame carries at most 125 bytes");
  unsigned char mask[4];
  if (RAND_bytes(mask, sizeof mask) != 1) {
    return makeError(ErrorCode::kInternal, "RAND_bytes: " + opensslError());
  }
  std::string frame{char(0x80 | opcode), char(0x80 | payload.size())};
  frame.append(reinterpret_cast<const char*>(mask), sizeof mask);
  for (std::size_t i = 0; i < payload.size(); ++i)
    frame += char(payload[i] ^ mask[i % 4]);
  return stream.writeAll(frame);
}

}  // namespace

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

WebSocketConnection::WebSocketConnection(std::unique_ptr<ByteStream> stream)
    : stream_(std::move(stream)) {}
WebSocketConnection::WebSocketConnection(WebSocketConnection&&) noexcept = default;
WebSocketConnection& WebSocketConnection::operator=(WebSocketConnection&&) noexcept = default;
WebSocketConnection::~WebSocketConnection() = default;

Result<WebSocketConnection> WebSocketConnection::open(const ServerUrl& url, const TlsOptions& tls,
                                                      Clock::time_point deadline,
                                                      std::chrono::milliseconds timeout) {
  const SigpipeBlock sigpipeBlocked;
  auto stream = std::make_unique<ByteStream>(deadline, timeout);
  if (auto opened = stream->open(url, tls); !opened) return std::move(opened).error();
  return WebSocketConnection(std::move(stream));
}

void WebSocketConnection::setActivity(std::string activity) {
  stream_->setActivity(std::move(activity));
}

Result<UpgradeReply> WebSocketConnection::upgrade(const UpgradeRequest& request) {
  const SigpipeBlock sigpipeBlocked;
  unsigned char nonce[16];
  if (RAND_bytes(nonce, sizeof nonce) != 1) {
    return makeError(ErrorCode::kInternal, "RAND_bytes: " + opensslError());
  }
  const std::string key = base64(nonce, sizeof nonce);
  std::string text = "GET " + request.target + " HTTP/1.1\r\nHost: " + stream_->authority() +
                     "\r\nUser-Agent: torus/0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " +
                     key + "\r\n";
  if (!request.protocols.empty()) {
    text += "Sec-WebSocket-Protocol: " + joinStrings(request.protocols, ", ") + "\r\n";
  }
  for (const auto& [name, value] : request.headers) {
    // A line break would end the header and smuggle in whatever follows.
    if ((name + value).find_first_of("\r\n") != std::string::npos) {
      return makeError(ErrorCode::kInvalidArgument,
                       "the " + name + " header contains a line break");
    }
    text += name + ": " + value + "\r\n";
  }
  text += "\r\n";
  stream_->setActivity("sending the upgrade request");
  if (auto sent = stream_->writeAll(text); !sent) return std::move(sent).error();
  stream_->setActivity("waiting for the server to accept the upgrade");
  auto head = readReplyHead(*stream_);
  if (!head) return std::move(head).error();
  UpgradeReply reply{head->status, {}, {}};
  if (reply.status != 101) {
    reply.body = readBody(*stream_, *head);
    return reply;
  }
  if (toLower(headerOf(*head, "upgrade")) != "websocket" ||
      toLower(headerOf(*head, "connection")).find("upgrade") == std::string::npos) {
    return protocolError("a 101 reply without Upgrade: websocket and Connection: Upgrade");
  }
  if (const std::string accept = headerOf(*head, "sec-websocket-accept");
      accept != acceptFor(key)) {
    return protocolError("Sec-WebSocket-Accept " + quoteJsonString(accept) + ", expected " +
                         quoteJsonString(acceptFor(key)));
  }
  reply.protocol = headerOf(*head, "sec-websocket-protocol");
  if (!request.protocols.empty() &&
      std::ranges::find(request.protocols, reply.protocol) == request.protocols.end()) {
    return protocolError("the server chose subprotocol " + quoteJsonString(reply.protocol) +
                         ", not one offered");
  }
  return reply;
}

Result<std::optional<std::string>> WebSocketConnection::readMessage(Clock::time_point until) {
  const SigpipeBlock sigpipeBlocked;
  std::string message;
  bool inMessage = false;
  for (;;) {
    auto next = readFrame(*stream_, kMaxMessageBytes - message.size(), until);
    if (!next) return std::move(next).error();
    if (!*next) return std::optional<std::string>();  // the server closed the connection
    Frame& frame = **next;
    if (frame.opcode == kClose) {
      if (frame.payload.size() >= 2) {
        closeStatus_ = CloseStatus{static_cast<unsigned char>(frame.payload[0]) << 8 |
                                       static_cast<unsigned char>(frame.payload[1]),
                                   frame.payload.substr(2)};
      }
      // Echo its status code (RFC 6455 5.5.1). The server is closing either way, so a failed
      // write changes nothing.
      if (!closeSent_) {
        closeSent_ = true;
        (void)writeFrame(*stream_, kClose, std::string_view(frame.payload).substr(0, 2));
      }
      return std::optional<std::string>();
    }
    if (frame.opcode == kPing) {
      if (auto sent = writeFrame(*stream_, kPong, frame.payload); !sent) {
        return std::move(sent).error();
      }
      continue;
    }
    if (frame.opcode == kPong) continue;
    if (frame.opcode == kContinuation) {
      if (!inMessage) return protocolError("a continuation frame outside a message");
    } else if (frame.opcode == kText || frame.opcode == kBinary) {
      if (inMessage) return protocolError("a new message inside a fragmented one");
    } else {
      return protocolError("unknown opcode " + std::to_string(frame.opcode));
    }
    message += frame.payload;
    inMessage = !frame.fin;
    if (!inMessage) return std::optional<std::string>(std::move(message));
  }
}

Result<void> WebSocketConnection::sendClose(std::uint16_t code) {
  if (closeSent_) return okResult();
  const SigpipeBlock sigpipeBlocked;
  closeSent_ = true;
  const char payload[2] = {char(code >> 8), char(code & 0xff)};
  return writeFrame(*stream_, kClose, std::string_view(payload, 2));
}

}  // namespace torus::kube
