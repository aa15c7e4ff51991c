// The node's HTTP server (--http): cpp-httplib on its own threads, answering
// through handle_http (http_api.hpp) from snapshots of the status writer and
// the probe, so no request waits on CAF's scheduler or the node's timers.
#pragma once

#include "runtime/node/node_config.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace prometheus {
class Registry;
}

namespace conclave::replication {
struct commit_observer;
}

namespace conclave::node {

class http_backend_slot;
class node_probe;
class status_writer;

struct http_limits {
  size_t max_body_bytes = 64 * 1024;
  /// All header lines of one request together (each line is also limited to
  /// 8 KiB by the library).
  size_t max_header_bytes = 16 * 1024;
  std::chrono::seconds read_timeout{5};
  std::chrono::seconds keep_alive_timeout{2};
  /// Connections served at once, each by a worker of its own; beyond this,
  /// or beyond `max_connections_per_source` from one IP address, a new
  /// connection is closed at once (plain HTTP: after a 503), before any
  /// TLS handshake (http_gate.hpp).
  size_t max_connections = 64;
  size_t max_connections_per_source = 16;
  /// From taking a connection up (or answering its previous request) to a
  /// complete request, TLS handshake included; past it the connection is
  /// closed.
  std::chrono::milliseconds request_deadline{4000};
  /// Open /v1/watch streams; each holds one thread of its own, outside the
  /// connections' workers. Beyond this a new stream is answered 503.
  size_t max_watch_streams = 1024;
  /// Events kept for clients that resume with Last-Event-ID.
  size_t watch_window = 4096;
  /// A stream with nothing to say sends a comment line this often. The
  /// library sees a client gone only when a write fails: a stream's thread
  /// ends within two of these after its client left.
  std::chrono::seconds watch_keepalive{5};
  /// GET /v1/cluster asks the other members for their views in parallel and
  /// waits at most about this long (half to connect, half to read).
  std::chrono::milliseconds member_view_bound{400};
};

class http_server {
public:
  virtual ~http_server() = default;
  /// Stops accepting and joins the server's threads.
  virtual void stop() = 0;
  /// An observer for the node's replica host that turns committed job and
  /// lease changes into `job` and `lease` events on /v1/watch (never
  /// blocks the host: it only appends to the event ring). `node` is this
  /// node's id. The server must outlive the host.
  virtual std::shared_ptr<replication::commit_observer> commit_events(uint64_t node) = 0;
};

/// Starts serving on cfg.http (TLS with the node's CA and certificate when
/// cfg.tls is set). Registers conclave_http_requests_total and
/// conclave_http_rejected_requests_total{status} in `registry`. Null without
/// cfg.http; also null, with a line on stderr and `failed` set, if the TLS
/// files do not load or the address cannot be bound. The data routes
/// (/v1/kv, /v1/jobs, /v1/leases) answer from what `backends` holds at each
/// request (503 while it holds nothing).
std::unique_ptr<http_server> start_http(const node_config& cfg,
                                        std::shared_ptr<status_writer> status,
                                        std::shared_ptr<node_probe> probe,
                                        prometheus::Registry& registry, bool& failed,
                                        std::shared_ptr<http_backend_slot> backends = {},
                                        const http_limits& limits = {});

} // namespace conclave::node
