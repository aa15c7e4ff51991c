// The HTTP API's data routes (runtime/node/http_routes.hpp) over the node's
// own client actors: the workflow host's replication client (the client
// library `conclave kv` runs, with this node's session) for /v1/kv and
// /v1/leases, and its workflow client (the chain `conclave job` runs) for
// /v1/jobs. Each call blocks the HTTP worker thread on a scoped actor,
// bounded by the client's own deadline plus a small margin.
#pragma once

#include "actors/workflow/interfaces.hpp"
#include "runtime/node/http_routes.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <chrono>

namespace conclave::embed {

/// `repl`: a replication client actor (answers txn_request, read_request,
/// list_request) whose own deadline is `deadline`; `jobs`: a workflow client.
node::http_backends make_http_backends(caf::actor_system& sys, caf::actor repl,
                                       workflow::client_actor jobs,
                                       std::chrono::milliseconds deadline);

} // namespace conclave::embed
