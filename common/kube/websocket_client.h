// WebSocketConnection: the client end of one WebSocket (RFC 6455) over a ByteStream (TCP or TLS,
// byte_stream.h), as execInPod needs it: connect, upgrade, then read messages until the server ends
// the stream.
//
// Owns: the HTTP/1.1 upgrade (Sec-WebSocket-Key and -Accept, the subprotocol check, a refusal's
// body), and the framing: reassembling fragmented messages, answering pings, echoing the server's
// close, masking what the client sends. SIGPIPE is blocked in the calling thread during each call.
// Does not own: the connection, TLS and its verification (ByteStream), what the messages mean (the
// caller's subprotocol), retries, what a refusal's HTTP status or body means, credentials (the
// caller passes an Authorization header), the host-name lookup's time (getaddrinfo has no
// deadline), nor sending data messages (nothing needs them).
//
// Every wait ends at the connection's deadline, given to open(), or earlier where readMessage is
// asked to; a timeout's message reads "timed out after <timeout> ms while <activity>". One thread
// at a time; after an error only sendClose() and destruction are meaningful. Nothing throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/base/result.h"
#include "common/kube/byte_stream.h"

namespace torus::kube {

struct UpgradeRequest {
  std::string target;                  // path and query: /api/v1/...?a=b (already escaped)
  std::vector<std::string> protocols;  // Sec-WebSocket-Protocol, in order of preference
  std::vector<std::pair<std::string, std::string>> headers;  // more headers, such as Authorization
};

struct UpgradeReply {
  int status = 0;        // 101: upgraded; anything else: refused, read no messages
  std::string protocol;  // on 101: the subprotocol the server chose, one of those offered
  std::string body;      // otherwise: the refusal's body, best effort, at most 64 KiB
};

// The code and reason of the close frame the server sent, when it carried a code.
struct CloseStatus {
  int code = 0;
  std::string reason;
};

class WebSocketConnection {
 public:
  using Clock = std::chrono::steady_clock;

  // Connects to url (each resolved address in turn), then the TLS handshake when url.tls.
  // `timeout` is only named in messages: the time from the caller's start to `deadline`.
  // Unavailable: no address answered, the handshake failed or the certificate was refused.
  // FailedPrecondition: the CA, client certificate or key could not be loaded.
  static Result<WebSocketConnection> open(const ServerUrl& url, const TlsOptions& tls,
                                          Clock::time_point deadline,
                                          std::chrono::milliseconds timeout);
  WebSocketConnection(WebSocketConnection&&) noexcept;
  WebSocketConnection& operator=(WebSocketConnection&&) noexcept;
  ~WebSocketConnection();

  // Sends the GET with Upgrade: websocket and reads the reply's head. A status other than 101 is
  // a reply, not an error. Internal: a 101 without the upgrade headers, a wrong
  // Sec-WebSocket-Accept, or a subprotocol not offered. InvalidArgument: a header with a line
  // break.
  Result<UpgradeReply> upgrade(const UpgradeRequest& request);

  // Named in a timeout's message ("waiting for the command to finish").
  void setActivity(std::string activity);

  // The next data message (text or binary alike), reassembled from its fragments, at most 16 MiB.
  // Pings met on the way are answered, pongs skipped. nullopt: the stream ended, because the
  // server closed the connection or sent a close frame (echoed; see closeStatus()).
  // DeadlineExceeded at `until` or the connection's deadline, whichever comes first. Internal:
  // the server broke RFC 6455 (a masked or oversized frame, a stray continuation, ...).
  Result<std::optional<std::string>> readMessage(Clock::time_point until);

  // Set once readMessage has met a close frame that carried a status code.
  const std::optional<CloseStatus>& closeStatus() const { return closeStatus_; }

  // Starts the closing handshake; once per connection (a no-op after an echoed close). The caller
  // need not wait for the server's close: destroying the connection closes the socket.
  Result<void> sendClose(std::uint16_t code);

 private:
  explicit WebSocketConnection(std::unique_ptr<ByteStream> stream);

  std::unique_ptr<ByteStream> stream_;
  std::optional<CloseStatus> closeStatus_;
  bool closeSent_ = false;
};

}  // namespace torus::kube
