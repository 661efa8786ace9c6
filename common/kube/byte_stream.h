// ByteStream: one client connection to a server named by a kubeconfig URL, plain TCP or TLS, as
// bytes with a deadline. WebSocketConnection (websocket_client.h) speaks HTTP and RFC 6455 over it.
//
// Owns: the server URL's parsing, the socket and the OpenSSL objects (freed with it), the TCP
// connect to each resolved address in turn, TLS (1.2 and up) with peer and host-name verification,
// SNI for names, the optional client certificate, reads and writes bounded by the deadline, and
// giving back bytes read too far (unread). SigpipeBlock keeps OpenSSL's write(2) from raising
// SIGPIPE in the calling thread.
// Does not own: what the bytes mean (HTTP, framing), retries, credentials other than the client
// certificate, nor the host-name lookup's time (getaddrinfo has no deadline).
//
// Every wait ends at the stream's deadline, given to open(), or earlier where a read is asked to;
// a timeout's message reads "timed out after <timeout> ms while <activity>". One thread at a time.
// Nothing throws.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <signal.h>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX
struct ssl_st;      // OpenSSL's SSL

namespace torus::kube {

// A server as a kubeconfig writes it: http(s)://host[:port][/path].
struct ServerUrl {
  bool tls = true;
  std::string host;  // without IPv6 brackets
  std::string port;
  std::string authority;  // as written: the Host header
  std::string prefix;     // a path before /api, without the trailing slash
};

// InvalidArgument naming the server when the scheme is not http(s) or the host is missing.
Result<ServerUrl> parseServerUrl(std::string_view server);

// How to check the server and, optionally, prove who we are (as KubeClient does).
struct TlsOptions {
  std::string caFile;          // empty: the system's authorities
  std::string clientCertFile;  // with clientKeyFile: mutual TLS; either alone is ignored
  std::string clientKeyFile;
  bool insecureSkipVerify = false;
};

// The first queued OpenSSL error, which names the failing check ("certificate verify failed").
std::string opensslError();

// OpenSSL writes with write(2), which raises SIGPIPE when the server has reset the connection;
// a library call must not kill its process. Hold one across every call into a ByteStream: it
// blocks SIGPIPE in this thread and discards one raised meanwhile.
class SigpipeBlock {
 public:
  SigpipeBlock();
  ~SigpipeBlock();
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t pipe_{};
  sigset_t previous_{};
  bool wasPending_ = false;
};

// One TCP (optionally TLS) connection. Reads end at a bound no later than the deadline; writes
// and the handshakes at the deadline.
class ByteStream {
 public:
  using Clock = std::chrono::steady_clock;

  // Connects to url (each resolved address in turn), then the TLS handshake when url.tls.
  // `timeout` is only named in messages: the time from the caller's start to `deadline`.
  // Unavailable: no address answered, the handshake failed or the certificate was refused.
  // FailedPrecondition: the CA, client certificate or key could not be loaded.
  static Result<std::unique_ptr<ByteStream>> open(const ServerUrl& url, const TlsOptions& tls,
                                                  Clock::time_point deadline,
                                                  std::chrono::milliseconds timeout);

  // Bytes read, 0 when the server closed the connection.
  Result<std::size_t> readSome(char* data, std::size_t size, Clock::time_point until);
  // Unavailable when the server closes the connection before `size` bytes ("mid-frame").
  Result<void> readExact(char* data, std::size_t size, Clock::time_point until);
  Result<void> writeAll(std::string_view data);
  // Bytes read past what the caller needed (the upgrade reply's headers): the next reads' first.
  void unread(std::string_view data) { pending_.insert(0, data); }
  // Named in a timeout's message.
  void setActivity(std::string activity) { activity_ = std::move(activity); }
  const std::string& authority() const { return authority_; }
  Clock::time_point deadline() const { return deadline_; }

 private:
  struct SslCtxFree {
    void operator()(ssl_ctx_st* context) const;
  };
  struct SslFree {
    void operator()(ssl_st* ssl) const;
  };

  ByteStream(Clock::time_point deadline, std::chrono::milliseconds timeout)
      : deadline_(deadline), timeout_(timeout) {}

  Result<void> connect(const ServerUrl& url, const TlsOptions& tls);
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
  std::unique_ptr<ssl_ctx_st, SslCtxFree> context_;
  std::unique_ptr<ssl_st, SslFree> ssl_;  // declared after fd_: freed before the socket closes
  std::string pending_;
};

}  // namespace torus::kube
