// replicated_store: the workflow actors' store (store::store_actor) on the
// cluster's replicated store, so that schedulers, agents, supervisors and
// clients in different processes share their jobs.
//
// It speaks to a replication client actor (replication::spawn_client) and
// turns the store protocol's lock-based transactions into optimistic ones
// (the same rule as actors/replication/interactive.hpp):
// - a read inside a transaction (try_get, contains, a batch check) asks the
//   primary at once and is remembered; the first value seen of a key is what
//   the commit checks;
// - writes (add_or_update, try_remove, add, try_update, enqueue) stay here
//   until commit;
// - commit sends ONE replicated transaction: a condition per key read ("still
//   holds the value read" or "still absent"), then the writes in order. The
//   primary applies all of it at one lsn or none of it.
// Where the local store would have held an Update lock and made a second
// writer wait, here the second commit fails its condition: the transaction is
// answered store errc::lock_timeout (a conflict; nothing written) and its
// caller runs it again (job_store does, from a fresh read).
//
// Batches (op_batch): the checks of a batch that commits and has no reads
// become conditions of the one transaction (equals: expect_value, absent:
// expect_absent; at_most is read first, then checked as equals/absent), so
// a submission or an outcome whose job is unchanged costs one round trip. A
// check that fails is reported in batch_result like the local store does; a
// grouped batch whose group fails is sent again without that group.
//
// Scans (enumerate) read the primary's committed state, page by page, and
// are not checked at commit (no phantom protection): the workflow actors
// scan only outside transactions.
//
// Not supported (answered store errc::bad_argument): try_dequeue, try_peek,
// queue_count, count; read modes other than the default are served as
// committed reads. open_atom answers true (the replicated store creates a
// collection with its first write). checkpoint_atom answers 0.
#pragma once

#include "actors/store/store_interface.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/timespan.hpp>

#include <chrono>
#include <cstdint>

namespace conclave::workflow {

struct replicated_store_options {
  /// A replication client actor (replication::spawn_client): answers
  /// txn_request, read_request and list_request.
  caf::actor client;
  /// How long one request to the client may take (the client's own deadline
  /// should be shorter); no answer: the operation fails with errc::timeout.
  caf::timespan request_timeout = std::chrono::seconds(10);
  /// Items asked per list request while enumerating.
  uint32_t page = 512;
};

/// Spawns the adapter. Open transactions of a caller that terminates are
/// dropped (nothing of them was written).
store::store_actor spawn_replicated_store(caf::actor_system& sys,
                                          replicated_store_options opts);

} // namespace conclave::workflow
