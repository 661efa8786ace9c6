#include "common/kube/websocket_client.h"

#include <algorithm>
#include <charconv>
#include <map>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "common/base/strings.h"

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

WebSocketConnection::WebSocketConnection(std::unique_ptr<ByteStream> stream)
    : stream_(std::move(stream)) {}
WebSocketConnection::WebSocketConnection(WebSocketConnection&&) noexcept = default;
WebSocketConnection& WebSocketConnection::operator=(WebSocketConnection&&) noexcept = default;
WebSocketConnection::~WebSocketConnection() = default;

Result<WebSocketConnection> WebSocketConnection::open(const ServerUrl& url, const TlsOptions& tls,
                                                      Clock::time_point deadline,
                                                      std::chrono::milliseconds timeout) {
  const SigpipeBlock sigpipeBlocked;
  auto stream = ByteStream::open(url, tls, deadline, timeout);
  if (!stream) return std::move(stream).error();
  return WebSocketConnection(std::move(*stream));
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
