// /v1/leases: who holds the named leases of `conclave lock` and the lease
// API, with their fencing tokens, read from the acting primary's applied
// state (the reserved lease table, actors/replication/lease_state.hpp).
//
//   GET /v1/leases?limit=N&after=NAME   every held lease, paged by name
//   GET /v1/leases/NAME                 one lease (no holders: not held)
//
// Read-only: acquiring and releasing stay with `conclave lock` and the
// client library, which renew what they hold.
#pragma once

#include "runtime/node/http_kv.hpp"

namespace conclave::node {

/// Answers /v1/leases and /v1/leases/...; nothing for another path.
std::optional<http_response> handle_leases(const http_request& req, kv_store* store);

} // namespace conclave::node
