// HttpServer under clients that are slow, endless or too many: real sockets
// on loopback against the real server.
#include "common/http/http_server.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include "common/base/unique_fd.h"
#include "common/metrics/event_counters.h"
#include "tests/integration/loopback_socket.h"

namespace torus::http {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Connections cut so far for `reason`, as /metrics shows them (process-wide).
double cutsFor(const std::string& reason) {
  return metrics::processCounters().value(metrics::names::kHttpConnectionsCutTotal,
                                          {{"reason", reason}});
}

// Everything the server sends until it closes or `timeout` passes; `closed` says which.
std::string readUntilClosed(int fd, std::chrono::milliseconds timeout, bool* closed) {
  std::string text;
  *closed = false;
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    pollfd ready{fd, POLLIN, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (::poll(&ready, 1, static_cast<int>(std::max<long>(left.count(), 1))) <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) {
      *closed = true;
      return text;
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

// One GET on a fresh connection; the status line, or "" when none came within `timeout`.
std::string get(int port, const std::string& path, std::chrono::milliseconds timeout) {
  UniqueFd fd = testing::connectLoopback(port);
  if (!fd) return "";
  if (!testing::sendAll(fd.get(),
                        "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")) {
    return "";
  }
  bool closed = false;
  const std::string reply = readUntilClosed(fd.get(), timeout, &closed);
  return reply.substr(0, reply.find("\r\n"));
}

class HttpServerTest : public ::testing::Test {
 protected:
  void start(ServerOptions options) {
    options.address = {"127.0.0.1", 0};
    std::vector<Route> routes;
    routes.push_back({"GET", "/healthz", [](const Request&) {
                        return Response{200, "text/plain", "ok\n"};
                      }});
    routes.push_back({"GET", "/slow", [](const Request&) {
                        std::this_thread::sleep_for(1500ms);
                        return Response{200, "text/plain", "late\n"};
                      }});
    routes.push_back({"POST", "/echo", [](const Request& request) {
                        return Response{200, "text/plain", request.body};
                      }});
    auto server = HttpServer::start(options, std::move(routes));
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(*server);
  }

  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, SlowClientsAreCutAtTheRequestDeadlineWhileOthersAreServed) {
  ServerOptions options;
  options.requestDeadline = 1500ms;
  start(options);
  const int port = server_->port();
  const double cutBefore = cutsFor("deadline");

  // 16 clients, each trickling one header line every 200 ms: no single recv ever times out.
  constexpr int kSlow = 16;
  std::atomic<bool> stop{false};
  std::vector<Clock::duration> heldFor(kSlow);
  std::vector<std::jthread> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.emplace_back([&, i] {
      const auto begin = Clock::now();
      UniqueFd fd = testing::connectLoopback(port);
      if (!fd || !testing::sendAll(fd.get(), "POST /echo HTTP/1.1\r\nHost: x\r\n")) return;
      for (int line = 0; !stop; ++line) {
        if (!testing::sendAll(fd.get(), "X-" + std::to_string(line) + ": y\r\n")) break;
        pollfd ready{fd.get(), POLLIN, 0};
        if (::poll(&ready, 1, 200) > 0) {
          char byte;
          if (::recv(fd.get(), &byte, 1, 0) <= 0) break;  // the server closed it
        }
      }
      heldFor[static_cast<std::size_t>(i)] = Clock::now() - begin;
    });
  }
  std::this_thread::sleep_for(300ms);
  for (int i = 0; i < 10; ++i) {
    const auto begin = Clock::now();
    EXPECT_EQ(get(port, "/healthz", 1000ms), "HTTP/1.1 200 OK");
    EXPECT_LT(Clock::now() - begin, 1s);
    std::this_thread::sleep_for(50ms);
  }
  std::this_thread::sleep_for(2500ms);
  stop = true;
  slow.clear();
  for (const auto held : heldFor) {
    EXPECT_GT(held, 1000ms);  // not cut before its deadline
    EXPECT_LT(held, 2800ms);  // cut at the deadline plus a sweep, not left to trickle
  }
  EXPECT_GE(cutsFor("deadline") - cutBefore, kSlow) << "every cut is counted, by its reason";
}

TEST_F(HttpServerTest, EndlessHeadersAreCutAtTheByteBudget) {
  ServerOptions options;
  options.maxBodyBytes = 64 * 1024;  // budget: body + 1 MiB of headers
  start(options);
  const double cutBefore = cutsFor("bytes");
  UniqueFd fd = testing::connectLoopback(server_->port());
  ASSERT_TRUE(testing::sendAll(fd.get(), "GET /healthz HTTP/1.1\r\nHost: x\r\n"));
  std::string lines;
  for (int i = 0; i < 1024; ++i)
    lines += "X-Padding-" + std::to_string(i) + ": abcdefgh\r\n";
  std::size_t sent = 0;
  const auto deadline = Clock::now() + 10s;
  while (Clock::now() < deadline && testing::sendAll(fd.get(), lines))
    sent += lines.size();
  EXPECT_LT(Clock::now(), deadline) << "the server kept reading headers";
  EXPECT_LT(sent, 64u * 1024 * 1024) << "sent " << sent << " bytes of headers before the cut";
  EXPECT_EQ(get(server_->port(), "/healthz", 1000ms), "HTTP/1.1 200 OK");
  EXPECT_EQ(cutsFor("bytes") - cutBefore, 1);
}

TEST_F(HttpServerTest, BusyKeptAliveConnectionAndSlowHandlerAreNotCut) {
  ServerOptions options;
  options.requestDeadline = 500ms;
  start(options);
  // One connection, one request after another for four deadlines.
  UniqueFd fd = testing::connectLoopback(server_->port());
  const auto until = Clock::now() + 2s;
  int answered = 0;
  while (Clock::now() < until) {
    ASSERT_TRUE(testing::sendAll(fd.get(),
                                 "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"));
    std::string reply;
    while (reply.find("\r\n\r\nhi") == std::string::npos) {
      char buffer[512];
      pollfd ready{fd.get(), POLLIN, 0};
      ASSERT_GT(::poll(&ready, 1, 1000), 0) << "no answer after " << answered << " requests";
      const ssize_t n = ::recv(fd.get(), buffer, sizeof(buffer), 0);
      ASSERT_GT(n, 0) << "the server closed a busy connection after " << answered << " requests";
      reply.append(buffer, static_cast<std::size_t>(n));
    }
    ++answered;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_GE(answered, 10);
  // A handler that runs three deadlines long still answers.
  EXPECT_EQ(get(server_->port(), "/slow", 3000ms), "HTTP/1.1 200 OK");
}

TEST_F(HttpServerTest, ConnectionsBeyondTheCapGoIdlestFirstAndHealthStillAnswers) {
  ServerOptions options;
  options.maxConnections = 8;
  start(options);
  const double cutBefore = cutsFor("cap");
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 40; ++i)
    idle.push_back(testing::connectLoopback(server_->port()));
  std::this_thread::sleep_for(500ms);
  const auto begin = Clock::now();
  EXPECT_EQ(get(server_->port(), "/healthz", 1000ms), "HTTP/1.1 200 OK");
  EXPECT_LT(Clock::now() - begin, 1s);
  int closed = 0;
  for (const UniqueFd& fd : idle) {
    bool wasClosed = false;
    readUntilClosed(fd.get(), 20ms, &wasClosed);
    closed += wasClosed ? 1 : 0;
  }
  EXPECT_GE(closed, 32);
  EXPECT_GE(cutsFor("cap") - cutBefore, 32);
}

TEST_F(HttpServerTest, StopDoesNotWaitForSlowClients) {
  start(ServerOptions{});
  std::vector<UniqueFd> slow;
  for (int i = 0; i < 4; ++i) {
    slow.push_back(testing::connectLoopback(server_->port()));
    ASSERT_TRUE(testing::sendAll(slow.back().get(), "POST /echo HTTP/1.1\r\nHost: x\r\n"));
  }
  std::this_thread::sleep_for(200ms);
  const auto begin = Clock::now();
  server_->stop();
  EXPECT_LT(Clock::now() - begin, 2s);
}

// The reply (headers and body) to a POST /echo of `body` from a client that accepts gzip, as Go's
// HTTP client (kube-scheduler's) always does.
std::string echoAcceptingGzip(int port, const std::string& body) {
  UniqueFd fd = testing::connectLoopback(port);
  if (!fd) return "";
  const std::string request =
      "POST /echo HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\nConnection: close\r\n"
      "Content-Type: text/plain\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  if (!testing::sendAll(fd.get(), request)) return "";
  bool closed = false;
  return readUntilClosed(fd.get(), 5s, &closed);
}

TEST_F(HttpServerTest, SmallBodiesGoUncompressedLargeOnesGzippedForAClientThatAcceptsGzip) {
  start(ServerOptions{});
  const std::string small(4096, 'a');
  const std::string reply = echoAcceptingGzip(server_->port(), small);
  const std::size_t headerEnd = reply.find("\r\n\r\n");
  ASSERT_NE(headerEnd, std::string::npos) << reply;
  const std::string headers = reply.substr(0, headerEnd);
  EXPECT_EQ(headers.find("Content-Encoding"), std::string::npos) << headers;
  EXPECT_NE(headers.find("Content-Length: 4096"), std::string::npos) << headers;
  EXPECT_NE(headers.find("Content-Type: text/plain"), std::string::npos) << headers;
  EXPECT_EQ(reply.substr(headerEnd + 4), small);

  const std::string large(256 * 1024, 'a');
  const std::string compressed = echoAcceptingGzip(server_->port(), large);
  const std::string largeHeaders = compressed.substr(0, compressed.find("\r\n\r\n"));
  EXPECT_NE(largeHeaders.find("Content-Encoding: gzip"), std::string::npos) << largeHeaders;
  EXPECT_LT(compressed.size(), large.size() / 10);
}

}  // namespace
}  // namespace torus::http
