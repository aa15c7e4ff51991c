// Which handler answers an HTTP request, and who may write: the routes of
// http_api.hpp (node state), http_kv.hpp (/v1/kv), http_leases.hpp
// (/v1/leases) and http_jobs.hpp (/v1/jobs). Pure like handle_http: the
// store and the workflow client come in as interfaces (the node plugs in its
// actors once they run, tests plug in fakes), so parsing, validation,
// authorization and the answers are tested without sockets.
#pragma once

#include "runtime/node/http_api.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace conclave::node {

class kv_store;
class jobs_service;

/// What the data routes answer from. Null while the node's client actors
/// are not running (starting or stopping): those routes answer 503.
struct http_backends {
  std::shared_ptr<kv_store> kv;
  std::shared_ptr<jobs_service> jobs;
};

/// Where the node puts its backends once its actors run; read by the
/// server's worker threads on every request. A request keeps the backends
/// it took alive until it is answered.
class http_backend_slot {
public:
  void set(http_backends b) {
    std::lock_guard<std::mutex> lk{mu_};
    b_ = std::move(b);
  }
  void clear() { set({}); }
  http_backends get() const {
    std::lock_guard<std::mutex> lk{mu_};
    return b_;
  }

private:
  mutable std::mutex mu_;
  http_backends b_;
};

/// True for the methods that change something (PUT, POST, DELETE, PATCH).
bool is_write(const std::string& method);

/// Whether the request may be served: over TLS a write needs a client
/// certificate that the node's CA verified; reads need nothing more than the
/// handshake. Without TLS (loopback only) everything is allowed.
bool write_authorized(const http_request& req);

/// Answers any request: 403 for an unauthorized write, then the data routes,
/// then handle_http's.
http_response route_request(const http_request& req, const http_view& v,
                            const http_backends& b);

/// Parses an unsigned decimal query parameter; `fallback` if absent; nothing
/// if it is not a number in [min, max].
std::optional<uint64_t> query_number(const http_request& req, const std::string& name,
                                     uint64_t fallback, uint64_t min, uint64_t max);

} // namespace conclave::node
