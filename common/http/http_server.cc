#include "common/http/http_server.h"

#include <chrono>
#include <map>
#include <memory>
#include <thread>

#include <httplib.h>
#include <sys/socket.h>

#include "common/base/log.h"
#include "common/base/parse.h"
#include "common/http/connection_reaper.h"
#include "common/http/elastic_pool.h"

namespace torus::http {
namespace {

// cpp-httplib's worker pool, replaced by one that grows: see elastic_pool.h.
class ElasticTaskQueue final : public httplib::TaskQueue {
 public:
  explicit ElasticTaskQueue(ElasticPool::Limits limits) : pool_(limits) {}
  void enqueue(std::function<void()> task) override { pool_.enqueue(std::move(task)); }
  void shutdown() override { pool_.shutdown(); }

 private:
  ElasticPool pool_;
};

// Every request of a connection, from the first header byte to the last body byte, may take at
// most this long after the previous answer; headers beyond this budget end the connection.
constexpr std::size_t kHeaderBytes = 1024 * 1024;

// cpp-httplib as built by Debian listens with a backlog of 5: a burst of new connections
// overflows it and clients wait for SYN retries (1 s, 3 s, 7 s). Its listening socket is only
// reachable from a derived class, to raise the backlog once it is bound.
template <typename Base>
class TunedServer final : public Base {
 public:
  using Base::Base;
  void raiseBacklog(int backlog) { ::listen(this->svr_sock_, backlog); }
};
using PlainServer = TunedServer<httplib::Server>;
using TlsServer = TunedServer<httplib::SSLServer>;
constexpr int kListenBacklog = 1024;

// The span of one handler call, for the reaper (also when the handler throws).
class HandlerScope {
 public:
  HandlerScope(ConnectionReaper& reaper, const httplib::Request& request)
      : reaper_(reaper), request_(request) {
    reaper_.handlerEntered(request_.remote_addr, request_.remote_port);
  }
  ~HandlerScope() { reaper_.handlerLeft(request_.remote_addr, request_.remote_port); }
  HandlerScope(const HandlerScope&) = delete;
  HandlerScope& operator=(const HandlerScope&) = delete;

 private:
  ConnectionReaper& reaper_;
  const httplib::Request& request_;
};

// Bodies below this size go out as they are, whatever the client accepts. cpp-httplib gzips every
// text or JSON body for a client that accepts gzip (Go's HTTP client, kube-scheduler's, always
// does), and each gzip stream first sets up ~256 KiB of zlib state: on the extender's few-hundred
// byte filter answers that was 7 % of its CPU, plus kube-scheduler's time to inflate them. The
// API server draws the same line (it compresses only responses over 128 KiB).
constexpr std::size_t kCompressFromBytes = 128 * 1024;

// A sized content provider is sent with its Content-Length and never compressed, so small bodies
// go that way; large (and empty) ones through set_content, where httplib compresses when the
// client asks.
void sendBody(httplib::Response& out, Response response) {
  if (response.body.empty() || response.body.size() >= kCompressFromBytes) {
    out.set_content(std::move(response.body), response.contentType.c_str());
    return;
  }
  const std::size_t length = response.body.size();
  auto body = std::make_shared<const std::string>(std::move(response.body));
  out.set_content_provider(length, response.contentType,
                           [body](std::size_t offset, std::size_t size, httplib::DataSink& sink) {
                             return sink.write(body->data() + offset, size);
                           });
}

}  // namespace

struct HttpServer::Impl {
  std::unique_ptr<httplib::Server> server;
  std::unique_ptr<ConnectionReaper> reaper;
  int port = 0;
  std::jthread thread;
};

Result<ListenAddress> parseListenAddress(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return makeError(ErrorCode::kInvalidArgument,
                     "listen address \"" + std::string(text) + "\": expected HOST:PORT");
  }
  std::string host(text.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "0.0.0.0";
  auto port = parseInt(text.substr(colon + 1), 0, 65535);
  if (!port) {
    return std::move(port).error().withContext("listen address \"" + std::string(text) +
                                               "\": port");
  }
  return ListenAddress{host, *port};
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  stop();
}

int HttpServer::port() const {
  return impl_->port;
}

void HttpServer::stop() {
  if (impl_ && impl_->server) {
    impl_->server->stop();
    // Workers waiting on slow clients would hold the join for their read timeout.
    if (impl_->reaper) impl_->reaper->shutdownAll();
    if (impl_->thread.joinable()) impl_->thread.join();
    impl_->reaper.reset();
  }
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const ServerOptions& options,
                                                      std::vector<Route> routes) {
  auto impl = std::make_unique<Impl>();
  if (!options.tlsCertFile.empty() || !options.tlsKeyFile.empty()) {
    if (options.tlsCertFile.empty() || options.tlsKeyFile.empty()) {
      return makeError(ErrorCode::kInvalidArgument,
                       "TLS needs both a certificate file and a key file");
    }
    const char* clientCa =
        options.tlsClientCaFile.empty() ? nullptr : options.tlsClientCaFile.c_str();
    auto tls = std::make_unique<TlsServer>(options.tlsCertFile.c_str(), options.tlsKeyFile.c_str(),
                                           clientCa);
    if (!tls->is_valid()) {
      return makeError(ErrorCode::kInvalidArgument,
                       "cannot load TLS certificate " + options.tlsCertFile + " / key " +
                           options.tlsKeyFile +
                           (clientCa != nullptr ? " / client CA " + options.tlsClientCaFile : ""));
    }
    impl->server = std::move(tls);
  } else {
    if (!options.tlsClientCaFile.empty()) {
      return makeError(ErrorCode::kInvalidArgument,
                       "a client CA (mutual TLS) needs TLS: a certificate file and a key file");
    }
    impl->server = std::make_unique<PlainServer>();
  }
  httplib::Server& server = *impl->server;
  server.set_payload_max_length(options.maxBodyBytes);
  server.set_read_timeout(10, 0);
  server.set_write_timeout(10, 0);
  // A reply goes out in more than one write (headers, body); with Nagle's algorithm the last one
  // waits for the client's delayed ACK, ~40 ms per request on a kept-alive connection.
  server.set_tcp_nodelay(true);
  // cpp-httplib closes a kept-alive connection after 5 requests by default, so kube-scheduler
  // would open a new connection every few calls.
  server.set_keep_alive_max_count(1000);
  const ElasticPool::Limits poolLimits{.minWorkers = 2,
                                       .maxWorkers = options.maxConnections + 8,
                                       .idleExit = std::chrono::seconds(30)};
  // httplib takes ownership of the queue it is given as a raw pointer and deletes it.
  server.new_task_queue = [poolLimits]() -> httplib::TaskQueue* {
    return std::make_unique<ElasticTaskQueue>(poolLimits).release();
  };
  // The reaper is made once the port is bound, before the accept loop runs, so every handler
  // finds it; Impl does not move (HttpServer holds it by pointer).
  Impl* const state = impl.get();
  auto bodilessPosts = std::make_shared<std::map<std::string, httplib::Server::Handler>>();
  for (Route& route : routes) {
    httplib::Server::Handler handler = [state, handler = std::move(route.handler)](
                                           const httplib::Request& in, httplib::Response& out) {
      Request request{in.method, in.path, in.body, in.get_header_value("Content-Type"), {}};
      for (const auto& [name, value] : in.params)
        request.query[name] = value;
      Response response = [&] {
        const HandlerScope scope(*state->reaper, in);
        return handler(request);
      }();
      out.status = response.status;
      sendBody(out, std::move(response));
    };
    if (route.method == "GET") {
      server.Get(route.path, std::move(handler));
    } else {
      (*bodilessPosts)[route.path] = handler;
      server.Post(route.path, std::move(handler));
    }
  }
  // A POST with neither Content-Length nor Transfer-Encoding has an empty body (RFC 9112 §6.3),
  // and `curl -X POST URL` sends exactly that; cpp-httplib 0.11 instead reads such a body until
  // the client closes, which ends in the read timeout and a 400. This runs before httplib reads
  // the body, so those requests are answered here, with an empty body.
  server.set_pre_routing_handler(
      [bodilessPosts](const httplib::Request& in, httplib::Response& out) {
        if (in.method != "POST" || in.has_header("Content-Length") ||
            in.has_header("Transfer-Encoding")) {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        const auto route = bodilessPosts->find(in.path);
        if (route == bodilessPosts->end()) {
          out.status = 404;
        } else {
          route->second(in, out);
        }
        return httplib::Server::HandlerResponse::Handled;
      });
  // Called once an answer is written, for every request (404s and 400s included).
  server.set_logger([state](const httplib::Request& in, const httplib::Response&) {
    state->reaper->requestAnswered(in.remote_addr, in.remote_port);
  });
  server.set_exception_handler(
      [](const httplib::Request& request, httplib::Response& response, std::exception_ptr) {
        TORUS_LOG(Error, Http, "HTTP handler threw; answering 500", {"path", request.path});
        response.status = 500;
        response.set_content("internal error\n", "text/plain");
      });
  const ListenAddress& address = options.address;
  if (address.port == 0) {
    impl->port = server.bind_to_any_port(address.host);
  } else {
    impl->port = server.bind_to_port(address.host, address.port) ? address.port : -1;
  }
  if (impl->port <= 0) {
    return makeError(ErrorCode::kUnavailable, "cannot listen on " + address.host + ":" +
                                                  std::to_string(address.port) +
                                                  " (address in use or not available)");
  }
  if (auto* tls = dynamic_cast<TlsServer*>(&server)) {
    tls->raiseBacklog(kListenBacklog);
  } else {
    static_cast<PlainServer&>(server).raiseBacklog(kListenBacklog);
  }
  impl->reaper = std::make_unique<ConnectionReaper>(
      impl->port, ConnectionReaper::Limits{.requestDeadline = options.requestDeadline,
                                           .requestBytes = options.maxBodyBytes + kHeaderBytes,
                                           .maxConnections = options.maxConnections});
  impl->reaper->start();
  impl->thread = std::jthread([&server] { server.listen_after_bind(); });
  // stop() is a no-op until the accept loop runs, so a stop right after start would be lost and
  // the join would hang; return only once the loop is running.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!server.is_running()) {
    if (std::chrono::steady_clock::now() > deadline) {
      server.stop();
      return makeError(ErrorCode::kInternal, "HTTP server did not start within 5 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::make_unique<HttpServer>(std::move(impl));
}

}  // namespace torus::http
