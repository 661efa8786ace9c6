// ConnectionReaper: a whole-request deadline, a per-request byte budget and a connection cap for
// every connection a server accepted on one port.
//
// cpp-httplib 0.11 times each recv on its own and has no hook on accepted sockets, so a client
// sending a header line every few seconds, or headers without end, held a worker for ever (probe
// rows 5 and 4c). The reaper finds the server's connections itself: every sweep it walks this
// process's descriptors for TCP sockets whose local port is the server's and which have a peer.
// The server tells it when a handler runs and when an answer has gone out (keyed by the peer's
// address and port, which identify the connection); any other connection must deliver its
// next complete request within `requestDeadline` of its accept or of its previous answer, and
// within `requestBytes` of what the kernel counted it had received then. A connection that does not
// is shut down, which wakes the worker blocked on it; the worker closes it as usual, and the cut
// is counted by reason (metrics::names::kHttpConnectionsCutTotal: deadline, bytes, cap). Every
// socket is acted on through a dup of its descriptor, checked to be the same connection, so a
// descriptor number reused by a new connection is never touched.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace torus::http {

class ConnectionReaper {
 public:
  using Clock = std::chrono::steady_clock;

  struct Limits {
    // From accept, or from the previous answer, to the end of the next request. Includes the time
    // a kept-alive connection may sit idle before the server closes it (5 s in cpp-httplib).
    std::chrono::milliseconds requestDeadline{15'000};
    std::uint64_t requestBytes = 0;    // headers and body of one request; 0: no budget
    std::size_t maxConnections = 200;  // beyond this, the least recently active idle ones go
    std::chrono::milliseconds sweepEvery{100};
  };

  ConnectionReaper(int localPort, Limits limits);
  ~ConnectionReaper();  // stops the sweeping thread
  ConnectionReaper(const ConnectionReaper&) = delete;
  ConnectionReaper& operator=(const ConnectionReaper&) = delete;

  // Starts sweeping every limits.sweepEvery on a thread of its own.
  void start();
  // Shuts down every connection the server still has (used when the server stops, so workers
  // blocked on slow clients return at once).
  void shutdownAll();

  // A handler for this peer's request runs between these two: its connection is never cut then.
  void handlerEntered(const std::string& peerAddress, int peerPort);
  void handlerLeft(const std::string& peerAddress, int peerPort);
  // This peer's answer has been written: its next request's deadline and budget start now.
  void requestAnswered(const std::string& peerAddress, int peerPort);

  // One pass over the process's descriptors at `now` (the thread calls this; tests may too).
  void sweep(Clock::time_point now);

 private:
  struct Connection {
    std::string peer;                // "address port"
    Clock::time_point lastProgress;  // accept (first seen) or the previous answer
    std::uint64_t bytesAtProgress = 0;
    std::uint64_t finishedAtProgress = 0;  // Handling::finished then
  };
  struct Handling {
    int active = 0;              // requests of this peer inside a handler now
    std::uint64_t finished = 0;  // requests of this peer answered so far
  };
  const int localPort_;
  const Limits limits_;
  mutable std::mutex mutex_;
  std::map<std::string, Handling> handling_;         // by "address port"
  std::map<unsigned long, Connection> connections_;  // by socket inode
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace torus::http
