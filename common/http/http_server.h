// HttpServer: a small HTTP(S) server for /healthz, /metrics and the extender's JSON verbs.
//
// Owns: one listening socket and its worker threads (cpp-httplib underneath, hidden here so only
// one translation unit pays for that header). Does not own: routing policy or payload formats;
// handlers are plain functions from Request to Response and must not throw.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"

namespace torus::http {

struct Request {
  std::string method;
  std::string path;
  std::string body;
  std::string contentType;
  std::map<std::string, std::string> query;  // the last value of each query parameter
};

struct Response {
  int status = 200;
  std::string contentType = "text/plain; charset=utf-8";
  std::string body;
};

using Handler = std::function<Response(const Request&)>;

struct Route {
  std::string method;  // "GET" or "POST"
  std::string path;    // exact path
  Handler handler;
};

struct ListenAddress {
  std::string host;  // "0.0.0.0", "127.0.0.1", "::1"
  int port = 0;      // 0 picks a free port
};

// "HOST:PORT", ":PORT" (all interfaces) or "[IPv6]:PORT".
Result<ListenAddress> parseListenAddress(std::string_view text);

struct ServerOptions {
  ListenAddress address;
  std::size_t maxBodyBytes = 8 * 1024 * 1024;  // larger bodies get 413 without being buffered
  std::string tlsCertFile;                     // both set: serve HTTPS
  std::string tlsKeyFile;
  // Set (with TLS): mutual TLS, every client must present a certificate this CA bundle signed;
  // one without is refused in the handshake, before any request is read.
  std::string tlsClientCaFile;
  // A connection must deliver each request whole within this long of its accept or of the
  // previous answer (slow clients cannot hold workers: see connection_reaper.h).
  std::chrono::milliseconds requestDeadline{15'000};
  // Open connections beyond this are cut, the longest idle first; /healthz still gets through.
  std::size_t maxConnections = 200;
};

class HttpServer {
 public:
  // Binds (so errors such as "address in use" surface here) and starts serving in the background.
  static Result<std::unique_ptr<HttpServer>> start(const ServerOptions& options,
                                                   std::vector<Route> routes);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;
  void stop();

  struct Impl;  // opaque: only start() can make one
  explicit HttpServer(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace torus::http
