// /v1/kv: the replicated store's dictionaries over HTTP, with the
// consistency of `conclave kv` (the same client library: reads answered from
// the acting primary's applied state, writes acknowledged once a majority
// has them, retried with the client's session so they apply once).
//
//   GET    /v1/kv/KEY                      one key
//   PUT    /v1/kv/KEY      {"value": V}    set it
//   DELETE /v1/kv/KEY                      remove it
//   GET    /v1/kv?prefix=P&limit=N&after=K keys starting with P, in order, paged
//   POST   /v1/kv          {"key": K, "expected": V|null, "value": V|null}
//                                          compare-and-put (409 on mismatch)
//
// `collection=NAME` picks the dictionary (default kv); `encoding=base64`
// makes keys and values in the request and the answer base64 (for bytes that
// are not UTF-8). See docs/reference/http.md.
#pragma once

#include "actors/replication/messages.hpp"
#include "runtime/node/base64.hpp"
#include "runtime/node/http_routes.hpp"

#include <optional>
#include <string>

namespace conclave::node {

/// The store as the data routes use it: blocking calls, each answered within
/// the client's deadline (a code of timeout or outcome_unknown then).
class kv_store {
public:
  virtual ~kv_store() = default;
  virtual replication::read_result get(const replication::read_request& req) = 0;
  virtual replication::list_result list(const replication::list_request& req) = 0;
  virtual replication::txn_result transact(const replication::txn_request& req) = 0;
};

/// Most keys one list page returns; the default when limit is not given.
constexpr uint32_t max_kv_page = 1000;
constexpr uint32_t default_kv_page = 100;

/// Answers /v1/kv and /v1/kv/...; nothing for another path.
std::optional<http_response> handle_kv(const http_request& req, kv_store* store);

/// The HTTP answer to a store code other than ok, for a read or a write
/// (`write`: a timeout may have left the outcome unknown).
http_response store_error(replication::errc code, bool write);

} // namespace conclave::node
