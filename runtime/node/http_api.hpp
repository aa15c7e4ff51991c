// The node's HTTP/JSON API as a pure function: a request and a snapshot of
// what the node knows give the response. No sockets, no clock, no threads:
// http_server.cpp feeds it from cpp-httplib's worker threads.
#pragma once

#include "runtime/node/node_probe.hpp"
#include "runtime/node/status_file.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace conclave::node {

struct http_request {
  std::string method; ///< GET, HEAD, PUT, ...
  std::string path;   ///< without the query string, percent-decoded
  /// The query's parameters, percent-decoded (a repeated one: the first).
  std::map<std::string, std::string> query = {};
  std::string body = {};
  /// Served over TLS, and whether the client sent a certificate that the
  /// node's CA verified.
  bool tls = false;
  bool client_verified = false;
};

struct http_response {
  int status = 200;
  std::string body; ///< JSON unless content_type says otherwise
  std::string content_type = "application/json";
};

/// When /readyz calls a node's replica caught up.
struct readiness_bounds {
  /// Records between the commit lsn the replica knows and the one it applied.
  uint64_t max_apply_lag = 1000;
};

/// Another member's own view of the group (its answer to
/// GET /v1/cluster?scope=local), or why none came.
struct member_view {
  uint64_t from = 0;
  std::optional<std::string> body; ///< nullopt: no answer
  std::string error;               ///< why not (connect, TLS, status, timeout)
};

/// What a request is answered from, taken once per request.
struct http_view {
  node_status status;
  std::vector<node_probe::replica_lag> lags; ///< primary: per secondary
  double leader_silence_seconds = 0;         ///< follower: since its leader's heartbeat
  int64_t now_us = 0;                        ///< wall clock, for ages
  readiness_bounds bounds;
  /// Members' HTTP API addresses as configured (this node's --http and
  /// --peers-http), and whether they speak https or http.
  std::map<uint64_t, std::string> http;
  std::string http_scheme = "http";
  /// Seconds since the candidate last heard from each member (status of the
  /// election's own messages; a follower hears its leader only).
  std::map<uint64_t, double> peer_silence;
  /// Asks every other member with an HTTP address for its own view (bounded
  /// in time); called only by GET /v1/cluster without scope=local. Unset:
  /// no other member is asked.
  std::function<std::vector<member_view>()> fetch_views;
};

/// `{"error": message}` with `status`.
http_response http_error(int status, const std::string& message);

/// Why this node is not ready (empty: ready): no leader, a leader without its
/// majority lease, fewer than a majority of members linked, the leader's link
/// down, a replica syncing, healing or applying more than the bound behind.
std::string unready_reason(const http_view& v);

/// Merges the other members' views into this node's /v1/cluster body
/// (`cluster`, as cluster_json makes it): every member gains "seen_by"
/// (observer id → the state that observer's candidate gives it; this node
/// included) and "suspected_by" (the observers that judge it suspected or
/// down); "views" lists which members answered and which did not, and why.
/// An answer that is not such a body counts as no answer.
void merge_member_views(nlohmann::json& cluster, const std::vector<member_view>& views);

/// Answers GET /livez, /readyz, /v1/cluster and /v1/replicas; 404 for
/// another path, 405 for another method on these.
http_response handle_http(const http_request& req, const http_view& v);

} // namespace conclave::node
