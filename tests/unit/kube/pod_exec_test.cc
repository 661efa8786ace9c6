// execInPod against an API-server stand-in on loopback that checks the upgrade request and then
// plays scripted WebSocket frames: channels, exit statuses, refusals, fragmentation, ping/pong,
// close, timeouts, limits and protocol violations. One test runs over TLS with self-signed
// certificates made by the openssl command.
#include "common/kube/pod_exec.h"

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "common/base/unique_fd.h"

namespace torus::kube {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr std::string_view kV5 = "v5.channel.k8s.io";
constexpr std::string_view kV4 = "v4.channel.k8s.io";
constexpr unsigned char kText = 1, kBinary = 2, kClose = 8, kPing = 9, kPong = 10;

std::string acceptOf(const std::string& key) {
  const std::string text = key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha1(), nullptr);
  unsigned char out[64];
  const int length = EVP_EncodeBlock(out, digest, int(size));
  return std::string(reinterpret_cast<char*>(out), std::size_t(length));
}

std::string percentDecoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      out += char(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// A server frame: unmasked unless asked; `width` forces the 126 (16-bit) or 127 (64-bit) length.
std::string frame(unsigned char opcode, std::string_view payload, bool fin = true, int width = 0,
                  bool masked = false) {
  std::string out{char((fin ? 0x80 : 0) | opcode)};
  const char mask = masked ? char(0x80) : 0;
  if (width == 0 && payload.size() < 126) {
    out += char(mask | char(payload.size()));
  } else {
    const int bytes = width == 127 || payload.size() > 0xffff ? 8 : 2;
    out += char(mask | (bytes == 8 ? 127 : 126));
    for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8) {
      out += char((payload.size() >> shift) & 0xff);
    }
  }
  if (masked) out.append(4, '\0');  // a zero key: the payload reads the same
  return out.append(payload);
}

std::string data(int channel, std::string_view text) {
  return frame(kBinary, std::string{char(channel)}.append(text));
}

std::string status(const json& body) {
  return frame(kBinary, "\x03" + body.dump());
}

const json kSuccess = {{"metadata", json::object()}, {"status", "Success"}};

json exitStatus(int code) {
  return {{"status", "Failure"},
          {"reason", "NonZeroExitCode"},
          {"message", "command terminated with non-zero exit code"},
          {"details", {{"causes", {{{"reason", "ExitCode"}, {"message", std::to_string(code)}}}}}}};
}

std::string closeFrame(int code) {
  return frame(kClose, std::string{char(code >> 8), char(code & 0xff)});
}

struct Request {
  std::string path;                                        // without the query
  std::vector<std::pair<std::string, std::string>> query;  // decoded
  std::map<std::string, std::string> headers;              // names lower-cased
};

struct ClientFrame {
  unsigned char opcode = 0;
  bool masked = false;
  std::string payload;  // unmasked
};

struct SslFree {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};
struct SslCtxFree {
  void operator()(SSL_CTX* context) const { SSL_CTX_free(context); }
};

// The server's end of one connection. Blocking I/O with 5 s socket timeouts: a broken client
// fails the test instead of hanging it.
class Peer {
 public:
  Peer(UniqueFd fd, SSL_CTX* tls) : fd_(std::move(fd)) {
    const timeval limit{5, 0};
    setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    if (tls == nullptr) return;
    ssl_.reset(SSL_new(tls));
    SSL_set_fd(ssl_.get(), fd_.get());
    handshake_ = SSL_accept(ssl_.get()) == 1;
  }

  bool handshakeDone() const { return handshake_; }

  // Bytes read, 0 at the end of the stream (or on a timeout or error).
  std::size_t readSome(char* out, std::size_t size) {
    if (!pending_.empty()) {
      const std::size_t taken = std::min(size, pending_.size());
      pending_.copy(out, taken);
      pending_.erase(0, taken);
      return taken;
    }
    const long got = ssl_ ? SSL_read(ssl_.get(), out, int(size)) : ::recv(fd_.get(), out, size, 0);
    return got > 0 ? std::size_t(got) : 0;
  }
  bool readExact(char* out, std::size_t size) {
    for (std::size_t got; size > 0; out += got, size -= got) {
      if ((got = readSome(out, size)) == 0) return false;
    }
    return true;
  }
  void send(std::string_view bytes) {
    if (ssl_) {
      SSL_write(ssl_.get(), bytes.data(), int(bytes.size()));
    } else {
      ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
    }
  }

  Request readRequest() {
    std::string head;
    char buffer[1024];
    while (head.find("\r\n\r\n") == std::string::npos) {
      const std::size_t got = readSome(buffer, sizeof buffer);
      if (got == 0) break;
      head.append(buffer, got);
    }
    const std::size_t end = head.find("\r\n\r\n");
    if (end == std::string::npos) return {};
    pending_ = head.substr(end + 4);
    head.resize(end + 2);
    Request request;
    const std::size_t lineEnd = head.find("\r\n");
    const std::string line = head.substr(0, lineEnd);
    EXPECT_TRUE(line.starts_with("GET ") && line.ends_with(" HTTP/1.1")) << line;
    const std::string target = line.substr(4, line.size() - 4 - 9);
    request.path = target.substr(0, target.find('?'));
    if (const std::size_t question = target.find('?'); question != std::string::npos) {
      std::string_view query = std::string_view(target).substr(question + 1);
      while (!query.empty()) {
        const std::string_view item = query.substr(0, query.find('&'));
        query.remove_prefix(std::min(query.size(), item.size() + 1));
        const std::size_t equals = item.find('=');
        request.query.emplace_back(percentDecoded(item.substr(0, equals)),
                                   percentDecoded(item.substr(equals + 1)));
      }
    }
    for (std::size_t start = lineEnd + 2; start < head.size();) {
      const std::size_t stop = head.find("\r\n", start);
      const std::string header = head.substr(start, stop - start);
      start = stop + 2;
      std::string name = header.substr(0, header.find(':'));
      for (char& c : name)
        c = char(std::tolower(static_cast<unsigned char>(c)));
      request.headers[name] = header.substr(header.find(':') + 2);
    }
    requests_->push_back(request);
    return request;
  }

  // Reads the request, checks it is a WebSocket upgrade offering v5 then v4, and accepts it.
  void upgrade(std::string_view protocol = kV5, std::string accept = "") {
    Request request = readRequest();
    EXPECT_EQ(request.headers["upgrade"], "websocket");
    EXPECT_EQ(request.headers["connection"], "Upgrade");
    EXPECT_EQ(request.headers["sec-websocket-version"], "13");
    EXPECT_EQ(request.headers["sec-websocket-protocol"], "v5.channel.k8s.io, v4.channel.k8s.io");
    EXPECT_EQ(request.headers["sec-websocket-key"].size(), 24u) << "base64 of 16 bytes";
    if (accept.empty()) accept = acceptOf(request.headers["sec-websocket-key"]);
    send(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Accept: " +
        accept + "\r\nSec-WebSocket-Protocol: " + std::string(protocol) + "\r\n\r\n");
  }

  std::optional<ClientFrame> readFrame() {
    unsigned char head[2];
    if (!readExact(reinterpret_cast<char*>(head), 2)) return std::nullopt;
    ClientFrame got{static_cast<unsigned char>(head[0] & 0x0f), (head[1] & 0x80) != 0, ""};
    EXPECT_LT(head[1] & 0x7f, 126) << "the client sends control frames only";
    unsigned char mask[4] = {0, 0, 0, 0};
    if (got.masked && !readExact(reinterpret_cast<char*>(mask), 4)) return std::nullopt;
    got.payload.resize(head[1] & 0x7f);
    if (!readExact(got.payload.data(), got.payload.size())) return std::nullopt;
    for (std::size_t i = 0; i < got.payload.size(); ++i)
      got.payload[i] ^= char(mask[i % 4]);
    return got;
  }

  // Waits (5 s at most) for the client to close its end.
  void drain() {
    char buffer[4096];
    while (readSome(buffer, sizeof buffer) > 0) {
    }
  }

  std::vector<Request>* requests_ = nullptr;

 private:
  UniqueFd fd_;
  std::unique_ptr<SSL, SslFree> ssl_;  // after fd_: freed first
  bool handshake_ = true;
  std::string pending_;
};

// Accepts `connections` connections on 127.0.0.1:0 (or [::1]:0) and runs the script on each.
class FakeApiServer {
 public:
  using Script = std::function<void(Peer&, int)>;
  struct Options {
    int connections = 1;
    bool ipv6 = false;
    SSL_CTX* tls = nullptr;
  };

  explicit FakeApiServer(Script script) : FakeApiServer(std::move(script), Options{}) {}
  FakeApiServer(Script script, Options options) : ipv6_(options.ipv6) {
    listener_.reset(::socket(ipv6_ ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_storage address{};
    socklen_t size;
    if (ipv6_) {
      auto& v6 = reinterpret_cast<sockaddr_in6&>(address);
      v6.sin6_family = AF_INET6;
      v6.sin6_addr = in6addr_loopback;
      size = sizeof v6;
    } else {
      auto& v4 = reinterpret_cast<sockaddr_in&>(address);
      v4.sin_family = AF_INET;
      v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      size = sizeof v4;
    }
    if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&address), size) != 0 ||
        ::listen(listener_.get(), 4) != 0 ||
        ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&address), &size) != 0) {
      listener_.reset();
      return;
    }
    port_ = ntohs(ipv6_ ? reinterpret_cast<sockaddr_in6&>(address).sin6_port
                        : reinterpret_cast<sockaddr_in&>(address).sin_port);
    thread_ = std::jthread([this, script = std::move(script), options] {
      // A client that hung up must fail the test, not kill it.
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      for (int i = 0; i < options.connections; ++i) {
        pollfd entry{listener_.get(), POLLIN, 0};
        if (::poll(&entry, 1, 5000) != 1) return;
        Peer peer(UniqueFd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC)),
                  options.tls);
        peer.requests_ = &requests_;
        if (peer.handshakeDone()) script(peer, i);
      }
    });
  }
  ~FakeApiServer() { join(); }

  bool listening() const { return listener_.valid(); }
  std::string url(std::string_view scheme = "http") const {
    return std::string(scheme) + "://" + (ipv6_ ? "[::1]" : "127.0.0.1") + ":" +
           std::to_string(port_);
  }
  // The requests the scripts read; call after join().
  const std::vector<Request>& requests() const { return requests_; }
  void join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  bool ipv6_;
  UniqueFd listener_;
  int port_ = 0;
  std::vector<Request> requests_;
  std::jthread thread_;  // last: joined before the members it uses go
};

KubeConfig configFor(const FakeApiServer& server) {
  KubeConfig config;
  config.server = server.url();
  config.token = BearerToken::fixed("s3cret");
  return config;
}

ExecRequest shortExec(std::vector<std::string> command = {"neuron-ls", "--json"}) {
  ExecRequest request;
  request.nameSpace = "kube-system";
  request.pod = "torus-agent-x7";
  request.container = "agent";
  request.command = std::move(command);
  request.timeout = 5s;
  return request;
}

std::vector<std::string> valuesOf(const Request& request, const std::string& key) {
  std::vector<std::string> values;
  for (const auto& [name, value] : request.query) {
    if (name == key) values.push_back(value);
  }
  return values;
}

TEST(ExecInPod, CollectsStdoutAndStderrUntilSuccess) {
  FakeApiServer server([](Peer& peer, int) {
    peer.upgrade();
    // As the API server does: an empty message opens stdout, v5 closes channels by number.
    peer.send(data(1, "") + data(1, "hello\n") + data(2, "warn\n") + data(1, "bye\n") +
              frame(kBinary, "\xff\x01") + status(kSuccess) + closeFrame(1000));
    peer.drain();
  });
  const auto got = execInPod(configFor(server), shortExec());
  server.join();
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->out, "hello\nbye\n");
  EXPECT_EQ(got->err, "warn\n");
  EXPECT_EQ(got->exitCode, 0);
  EXPECT_EQ(got->protocol, kV5);
  ASSERT_EQ(server.requests().size(), 1u);
  const Request& request = server.requests()[0];
  EXPECT_EQ(request.path, "/api/v1/namespaces/kube-system/pods/torus-agent-x7/exec");
  EXPECT_EQ(valuesOf(request, "command"), (std::vector<std::string>{"neuron-ls", "--json"}));
  EXPECT_EQ(valuesOf(request, "container"), std::vector<std::string>{"agent"});
  EXPECT_EQ(valuesOf(request, "stdout"), std::vector<std::string>{"true"});
  EXPECT_EQ(valuesOf(request, "stderr"), std::vector<std::string>{"true"});
  EXPECT_TRUE(valuesOf(request, "stdin").empty());
  EXPECT_TRUE(valuesOf(request, "tty").empty());
  EXPECT_EQ(request.headers.at("authorization"), "Bearer s3cret");
  EXPECT_EQ(request.headers.at("host"), server.url().substr(7));
}

TEST(ExecInPod, NonZeroExitIsAnOutputNotAnError) {
  FakeApiServer server([](Peer& peer, int) {
    peer.upgrade(kV4);  // the fallback: same channels, no channel-close messages
    peer.send(data(2, "no such device\n") + status(exitStatus(3)) + closeFrame(1000));
    peer.drain();
  });
  const auto got = execInPod(configFor(server), shortExec());
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->exitCode, 3);
  EXPECT_EQ(got->err, "no such device\n");
  EXPECT_EQ(got->protocol, kV4);
}

TEST(ExecInPod, AFailureOtherThanAnExitCodeIsAnErrorWithItsMessage) {
  const std::string message =
      "OCI runtime exec failed: exec: \"neuron-ls\": executable file not found in $PATH";
  FakeApiServer server([&](Peer& peer, int) {
    peer.upgrade();
    peer.send(status({{"status", "Failure"}, {"reason", "InternalError"}, {"message", message}}) +
              closeFrame(1000));
    peer.drain();
  });
  const auto got = execInPod(configFor(server), shortExec());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(got.error().message.find(message), std::string::npos) << got.error().message;
  EXPECT_TRUE(got.error().message.starts_with("exec in kube-system/torus-agent-x7/agent: "))
      << got.error().message;
}

TEST(ExecInPod, ARefusedUpgradeCarriesTheStatusAndTheApiMessage) {
  const std::string forbidden =
      R"({"kind":"Status","status":"Failure","message":"pods \"torus-agent-x7\" is forbidden: User \"bob\" cannot create resource \"pods/exec\"","reason":"Forbidden","code":403})";
  const std::string notFound = R"({"kind":"Status","message":"pods \"torus-agent-x7\" not found"})";
  struct Case {
    const char* description;
    std::string reply;
    ErrorCode code;
    std::string message;
  };
  const Case cases[] = {
      {"403 with Content-Length (the connection stays open)",
       "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(forbidden.size()) + "\r\n\r\n" + forbidden,
       ErrorCode::kPermissionDenied,
       "HTTP 403: pods \"torus-agent-x7\" is forbidden: User \"bob\" cannot create resource"},
      {"404 chunked",
       "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n" +
           (std::stringstream() << std::hex << 10).str() + "\r\n" + notFound.substr(0, 10) +
           "\r\n" + (std::stringstream() << std::hex << notFound.size() - 10).str() + "\r\n" +
           notFound.substr(10) + "\r\n0\r\n\r\n",
       ErrorCode::kNotFound, "HTTP 404: pods \"torus-agent-x7\" not found"},
      {"400 until close, not JSON",
       "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\ncontainer agent is not valid",
       ErrorCode::kInvalidArgument, "HTTP 400: \"container agent is not valid\""},
      {"503 without a body", "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n",
       ErrorCode::kUnavailable, "HTTP 503"},
  };
  for (const Case& c : cases) {
    const bool closes = c.reply.find("Connection: close") != std::string::npos;
    FakeApiServer server([&](Peer& peer, int) {
      peer.readRequest();
      peer.send(c.reply);
      if (!closes) peer.drain();  // keep-alive: the client must not wait for a close
    });
    const auto started = std::chrono::steady_clock::now();
    const auto got = execInPod(configFor(server), shortExec());
    ASSERT_FALSE(got.ok()) << c.description;
    EXPECT_EQ(got.error().code, c.code) << c.description << ": " << got.error().message;
    EXPECT_NE(got.error().message.find(c.message), std::string::npos)
        << c.description << ": " << got.error().message;
    EXPECT_LT(std::chrono::steady_clock::now() - started, 2s) << c.description;
  }
}

TEST(ExecInPod, AnUnauthorizedReplyRereadsTheTokenFileOnce) {
  auto dir = TempDir::create("pod-exec");
  ASSERT_TRUE(dir.ok());
  const auto file = dir->path() / "token";
  ASSERT_TRUE(writeFile(file, "old").ok());
  auto token = BearerToken::fromFile(file);
  ASSERT_TRUE(token.ok()) << token.error().message;
  FakeApiServer server(
      [&](Peer& peer, int index) {
        if (index == 0) {
          peer.readRequest();
          // Rotated while the first request was in flight (same size and maybe same mtime).
          EXPECT_TRUE(writeFile(file, "new").ok());
          peer.send("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n");
          peer.drain();
          return;
        }
        peer.upgrade();
        peer.send(status(kSuccess) + closeFrame(1000));
        peer.drain();
      },
      {.connections = 2});
  KubeConfig config = configFor(server);
  config.token = *token;
  const auto got = execInPod(config, shortExec());
  server.join();
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(server.requests().size(), 2u);
  EXPECT_EQ(server.requests()[0].headers.at("authorization"), "Bearer old");
  EXPECT_EQ(server.requests()[1].headers.at("authorization"), "Bearer new");
}

TEST(ExecInPod, AWrongAcceptKeyIsRefused) {
  FakeApiServer server([](Peer& peer, int) {
    peer.upgrade(kV5, acceptOf("AAAAAAAAAAAAAAAAAAAAAA=="));
    peer.send(status(kSuccess) + closeFrame(1000));
    peer.drain();
  });
  const auto got = execInPod(configFor(server), shortExec());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, ErrorCode::kInternal);
  EXPECT_NE(got.error().message.find("Sec-WebSocket-Accept"), std::string::npos)
      << got.error().message;
}

TEST(ExecInPod, ReassemblesFragmentsAndReadsLongLengths) {
  const std::string medium(300, 'm');   // 16-bit length
  const std::string large(70000, 'L');  // 64-bit length
  const std::string small(5, 's');      // minimal data, written with a 64-bit length anyway
  FakeApiServer server([&](Peer& peer, int) {
    peer.upgrade();
    peer.send(frame(kBinary, "\x01hel", false) + frame(0, "lo ", false) +
              frame(kPing, "mid") +  // control frames may come between fragments
              frame(0, "world\n", true));
    const auto pong = peer.readFrame();
    EXPECT_TRUE(pong && pong->opcode == kPong && pong->payload == "mid");
    peer.send(frame(kText, "\x01" + medium, true, 126) + frame(kBinary, "\x02" + large) +
              frame(kBinary, "\x01" + small, true, 127) + status(kSuccess) + closeFrame(1000));
    peer.drain();
  });
  const auto got = execInPod(configFor(server), shortExec());
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->out, "hello world\n" + medium + small);
  EXPECT_EQ(got->err, large);
}

TEST(ExecInPod, AnswersAPingWithAMaskedPong) {
  std::optional<ClientFrame> pong;
  FakeApiServer server([&](Peer& peer, int) {
    peer.upgrade();
    peer.send(frame(kPing, "are you there?"));
    pong = peer.readFrame();
    peer.send(status(kSuccess) + closeFrame(1000));
    peer.drain();
  });
  const auto got = execInPod(configFor(server), shortExec());
  server.join();
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ(pong->opcode, kPong);
  EXPECT_TRUE(pong->masked);
  EXPECT_EQ(pong->payload, "are you there?");
}

TEST(ExecInPod, AnswersACloseWithAMaskedClose) {
  std::optional<ClientFrame> close;
  bool closedAfter = false;
  FakeApiServer server([&](Peer& peer, int) {
    peer.upgrade();
    peer.send(data(1, "ok") + status(kSuccess) + closeFrame(1000));
    close = peer.readFrame();
    char byte;
    closedAfter = peer.readSome(&byte, 1) == 0;
  });
  const auto got = execInPod(configFor(server), shortExec());
  server.join();
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_TRUE(close.has_value());
  EXPECT_EQ(close->opcode, kClose);
  EXPECT_TRUE(close->masked);
  EXPECT_EQ(close->payload, std::string("\x03\xe8", 2)) << "echoes code 1000";
  EXPECT_TRUE(closedAfter) << "then closes the connection";
}

TEST(ExecInPod, ASilentServerTimesOutWithinTheTimeout) {
  const struct {
    const char* description;
    bool upgrades;
  } cases[] = {{"no reply to the upgrade", false}, {"no frames after it", true}};
  for (const auto& c : cases) {
    FakeApiServer server([&](Peer& peer, int) {
      if (c.upgrades) {
        peer.upgrade();
      } else {
        peer.readRequest();
      }
      peer.drain();
    });
    ExecRequest request = shortExec();
    request.timeout = 300ms;
    const auto started = std::chrono::steady_clock::now();
    const auto got = execInPod(configFor(server), request);
    const auto waited = std::chrono::steady_clock::now() - started;
    ASSERT_FALSE(got.ok()) << c.description;
    EXPECT_EQ(got.error().code, ErrorCode::kDeadlineExceeded) << got.error().message;
    EXPECT_NE(got.error().message.find("timed out after 300 ms"), std::string::npos)
        << got.error().message;
    EXPECT_GE(waited, 290ms) << c.description;
    EXPECT_LT(waited, 1300ms) << c.description;
  }
}

TEST(ExecInPod, AServerThatStaysOpenAfterTheStatusCostsAGraceNotTheTimeout) {
  const struct {
    const char* description;
    std::chrono::milliseconds timeout;
    std::chrono::milliseconds atLeast, below;  // how long the call may take
  } cases[] = {
      {"a second of silence ends it", 5000ms, 900ms, 2500ms},
      {"the deadline bounds the grace", 400ms, 350ms, 900ms},
  };
  for (const auto& c : cases) {
    std::optional<ClientFrame> close;
    FakeApiServer server([&](Peer& peer, int) {
      peer.upgrade();
      peer.send(data(1, "done\n") + status(exitStatus(2)));
      close = peer.readFrame();  // no close frame, no close: the connection stays open
      peer.drain();
    });
    ExecRequest request = shortExec();
    request.timeout = c.timeout;
    const auto started = std::chrono::steady_clock::now();
    const auto got = execInPod(configFor(server), request);
    const auto waited = std::chrono::steady_clock::now() - started;
    server.join();
    ASSERT_TRUE(got.ok()) << c.description << ": " << got.error().message;
    EXPECT_EQ(got->out, "done\n") << c.description;
    EXPECT_EQ(got->exitCode, 2) << c.description;
    EXPECT_GE(waited, c.atLeast) << c.description;
    EXPECT_LT(waited, c.below) << c.description;
    ASSERT_TRUE(close.has_value()) << c.description;
    EXPECT_EQ(close->opcode, kClose) << c.description;
    EXPECT_TRUE(close->masked) << c.description;
    EXPECT_EQ(close->payload, std::string("\x03\xe8", 2)) << c.description << ": code 1000";
  }
}

TEST(ExecInPod, OutputOverTheLimitIsAnError) {
  FakeApiServer server([](Peer& peer, int) {
    peer.upgrade();
    peer.send(data(1, std::string(60, 'a')) + data(2, std::string(60, 'b')) + status(kSuccess) +
              closeFrame(1000));
    peer.drain();
  });
  ExecRequest request = shortExec();
  request.maxOutputBytes = 100;
  const auto got = execInPod(configFor(server), request);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(got.error().message.find("limit of 100 bytes"), std::string::npos)
      << got.error().message;
}

TEST(ExecInPod, AStreamEndingWithoutAStatusIsAnError) {
  const struct {
    const char* description;
    std::string ending;
  } cases[] = {{"the connection closes", ""}, {"a close frame", closeFrame(1011)}};
  for (const auto& c : cases) {
    FakeApiServer server([&](Peer& peer, int) {
      peer.upgrade();
      peer.send(data(1, "partial") + c.ending);
    });
    const auto got = execInPod(configFor(server), shortExec());
    ASSERT_FALSE(got.ok()) << c.description;
    EXPECT_EQ(got.error().code, ErrorCode::kUnavailable) << c.description;
    EXPECT_NE(got.error().message.find("the exec stream ended without the command's exit status"),
              std::string::npos)
        << c.description << ": " << got.error().message;
  }
}

TEST(ExecInPod, ArgumentsArriveEscapedAndDecodeExactly) {
  const std::vector<std::string> command = {"sh", "-c", "echo a&b=c d%20+é", "", "?#/"};
  FakeApiServer server([](Peer& peer, int) {
    peer.upgrade();
    peer.send(status(kSuccess) + closeFrame(1000));
    peer.drain();
  });
  KubeConfig config = configFor(server);
  config.server += "/k8s/clusters/c-1/";  // a proxy's path prefix, kept
  ExecRequest request = shortExec(command);
  request.nameSpace = "team a";
  const auto got = execInPod(config, request);
  server.join();
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(server.requests().size(), 1u);
  const Request& seen = server.requests()[0];
  EXPECT_EQ(seen.path, "/k8s/clusters/c-1/api/v1/namespaces/team%20a/pods/torus-agent-x7/exec");
  EXPECT_EQ(valuesOf(seen, "command"), command);
  EXPECT_EQ(seen.query.size(), command.size() + 3) << "command x5, container, stdout, stderr";
}

TEST(ExecInPod, ProtocolViolationsAreErrors) {
  const struct {
    const char* description;
    std::string_view protocol;
    std::string frames;
    const char* message;
  } cases[] = {
      {"a masked server frame", kV5, frame(kBinary, "\x01hi", true, 0, true), "masked frame"},
      {"an unknown channel", kV5, data(7, "x"), "unknown channel 7"},
      {"a channel close under v4", kV4, frame(kBinary, "\xff\x01"), "unknown channel 255"},
      {"an oversized frame", kV5, std::string("\x82\x7f\x00\x00\x01\x00\x00\x00\x00\x00", 10),
       "a frame of 1099511627776 bytes"},
      {"a continuation without a start", kV5, frame(0, "\x01x"), "continuation frame"},
      {"a long ping", kV5, frame(kPing, std::string(126, 'p')), "control frame"},
      {"a status that is not JSON", kV5, frame(kBinary, "\x03{oops"), "status channel carried"},
      {"no subprotocol chosen", "", "", "subprotocol \"\""},
  };
  for (const auto& c : cases) {
    FakeApiServer server([&](Peer& peer, int) {
      peer.upgrade(c.protocol);
      peer.send(c.frames + status(kSuccess) + closeFrame(1000));
      peer.drain();
    });
    const auto got = execInPod(configFor(server), shortExec());
    ASSERT_FALSE(got.ok()) << c.description;
    EXPECT_EQ(got.error().code, ErrorCode::kInternal) << c.description;
    EXPECT_NE(got.error().message.find(c.message), std::string::npos)
        << c.description << ": " << got.error().message;
  }
}

TEST(ExecInPod, ReachesAnIpv6Server) {
  FakeApiServer server(
      [](Peer& peer, int) {
        peer.upgrade();
        peer.send(data(1, "six") + status(kSuccess) + closeFrame(1000));
        peer.drain();
      },
      {.ipv6 = true});
  if (!server.listening()) GTEST_SKIP() << "no IPv6 loopback here";
  const auto got = execInPod(configFor(server), shortExec());
  server.join();
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->out, "six");
  EXPECT_EQ(server.requests().at(0).headers.at("host"), server.url().substr(7));
}

TEST(ExecInPod, VerifiesTheServerCertificateOverTls) {
  auto dir = TempDir::create("pod-exec-tls");
  ASSERT_TRUE(dir.ok());
  const auto selfSigned = [&](const std::string& name) {
    const std::string base = (dir->path() / name).string();
    const std::string command =
        "/usr/bin/openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
        "-addext subjectAltName=IP:127.0.0.1 -keyout " +
        base + ".key -out " + base + ".crt 2>/dev/null";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return base;
  };
  const std::string serverCert = selfSigned("server");
  const std::string stranger = selfSigned("stranger");
  std::unique_ptr<SSL_CTX, SslCtxFree> tls(SSL_CTX_new(TLS_server_method()));
  ASSERT_EQ(
      SSL_CTX_use_certificate_file(tls.get(), (serverCert + ".crt").c_str(), SSL_FILETYPE_PEM), 1);
  ASSERT_EQ(SSL_CTX_use_PrivateKey_file(tls.get(), (serverCert + ".key").c_str(), SSL_FILETYPE_PEM),
            1);
  // Connections whose handshake the client refuses never reach the script.
  FakeApiServer server(
      [](Peer& peer, int) {
        peer.upgrade();
        peer.send(data(1, "secure") + status(kSuccess) + closeFrame(1000));
        peer.drain();
      },
      {.connections = 4, .tls = tls.get()});
  const struct {
    const char* description;
    std::string host;
    std::string caFile;
    bool insecure;
    const char* refusal;  // nullptr: the exec succeeds
  } cases[] = {
      {"another authority", "127.0.0.1", stranger + ".crt", false,
       "certificate was refused: self-signed certificate"},
      {"the right authority", "127.0.0.1", serverCert + ".crt", false, nullptr},
      // localhost may resolve to ::1 first, where nothing listens: the next address is tried.
      {"a name the certificate does not carry", "localhost", serverCert + ".crt", false,
       "certificate was refused: hostname mismatch"},
      {"verification off", "127.0.0.1", stranger + ".crt", true, nullptr},
  };
  for (const auto& c : cases) {
    KubeConfig config = configFor(server);
    config.server = "https://" + c.host + ":" + server.url().substr(server.url().rfind(':') + 1);
    config.caFile = c.caFile;
    config.insecureSkipTlsVerify = c.insecure;
    const auto got = execInPod(config, shortExec());
    if (c.refusal == nullptr) {
      ASSERT_TRUE(got.ok()) << c.description << ": " << got.error().message;
      EXPECT_EQ(got->out, "secure") << c.description;
    } else {
      ASSERT_FALSE(got.ok()) << c.description;
      EXPECT_EQ(got.error().code, ErrorCode::kUnavailable) << c.description;
      EXPECT_NE(got.error().message.find(c.refusal), std::string::npos)
          << c.description << ": " << got.error().message;
    }
  }
}

}  // namespace
}  // namespace torus::kube
