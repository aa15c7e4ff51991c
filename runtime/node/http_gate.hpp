// Admission and deadlines for the connections of the node's HTTP server.
// cpp-httplib serves a connection on one worker thread from accept to close,
// reading with a timeout per read, not per request: a client that connects
// and says nothing, trickles a TLS record, or sends its request headers one
// byte every few seconds holds a worker for as long as it likes, and a few
// dozen such clients leave none for anyone else. The gate bounds them:
//
// - at most `max_open` connections served at once, and `max_open_per_source`
//   from one IP address; a connection over either bound is closed at once,
//   before any TLS handshake (no worker waits on it);
// - a connection must deliver a complete request (TLS handshake included)
//   within `request_deadline` of being taken up, and the next request on a
//   kept-alive connection within the same deadline of the previous answer;
//   past it the socket is shut down, which ends the worker's read.
//
// A request being handled, and an answer streaming out (server-sent events),
// are not on a deadline. connection_quota is the pure bookkeeping of the
// first bound; the deadlines reuse handshake_budget (handshake_guard.hpp).
#pragma once

#include "runtime/node/handshake_guard.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace conclave::node {

struct http_gate_limits {
  size_t max_open = 64;
  size_t max_open_per_source = 16;
  std::chrono::milliseconds request_deadline{4000};
};

/// Open connections, in total and by source address.
class connection_quota {
public:
  connection_quota(size_t max_total, size_t max_per_source)
      : max_total_(max_total), max_per_source_(max_per_source) {}

  /// Counts a connection from `source` and returns true if both bounds
  /// allow it; false (nothing counted) otherwise.
  bool admit(const std::string& source);
  /// A connection admitted from `source` closed.
  void release(const std::string& source);

  size_t open() const { return open_; }
  size_t open_from(const std::string& source) const;

private:
  size_t max_total_;
  size_t max_per_source_;
  size_t open_ = 0;
  std::map<std::string, size_t> per_source_;
};

class http_gate {
public:
  /// One connection the gate took up.
  struct ticket {
    handshake_budget::connection conn;
    std::string source;
    bool admitted = false;
  };

  struct counts {
    uint64_t refused = 0;   ///< closed over a bound
    uint64_t timed_out = 0; ///< shut down past the request deadline
    size_t open = 0;
  };

  /// `on_timeout` runs on the gate's sweeper thread for each connection it
  /// shuts down at the deadline.
  explicit http_gate(http_gate_limits limits = {}, std::function<void()> on_timeout = {});
  ~http_gate();
  http_gate(const http_gate&) = delete;
  http_gate& operator=(const http_gate&) = delete;

  /// A worker took up the accepted socket `fd`. Not admitted: the caller
  /// closes it without reading.
  ticket admit(int fd);
  /// A complete request arrived on the connection: off the deadline.
  void request_read(const ticket& t);
  /// The connection waits for its next request: on the deadline again.
  void awaiting_request(const ticket& t);
  /// The connection leaves the gate: it no longer counts against the bounds
  /// and has no deadline (a server-sent event stream, bounded elsewhere).
  /// `t` is then not admitted any more; done() does nothing.
  void detach(ticket& t);
  /// The connection is done (its socket may be closed already).
  void done(const ticket& t);

  counts stats() const;
  const http_gate_limits& limits() const { return limits_; }

private:
  void sweep_loop();

  http_gate_limits limits_;
  std::function<void()> on_timeout_;
  mutable std::mutex mtx_;
  std::condition_variable wake_;
  connection_quota quota_;
  handshake_budget deadlines_;
  counts counts_;
  bool stopping_ = false;
  std::thread sweeper_;
};

} // namespace conclave::node
