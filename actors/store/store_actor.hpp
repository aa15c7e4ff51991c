// store_actor: the reliable collections store as a CAF actor, for actors that
// must not block a worker thread while a lock is held elsewhere or a commit
// waits for fdatasync. It serves one state_manager (shared with threads that
// use the library API directly).
//
// Protocol (every request is answered; failures are caf::error values made
// from conclave::store::errc, see type_ids.hpp):
//   (open_atom, name, kind, key_type, value_type) -> bool   create or check a collection
//   (begin_atom)                                 -> txn_id
//   (op_request, timeout_ms)                     -> op_result  (timeout_ms 0: the
//                                                   store's default, 4 s unless
//                                                   configured)
//   (commit_atom, txn_id)                        -> lsn as uint64 (after fdatasync
//                                                   in strong mode; 0: nothing changed)
//   (abort_atom, txn_id)                         -> bool
//   (checkpoint_atom)                            -> lsn as uint64
// The two `done_atom` messages are internal: completions that the store's
// threads send back to the actor, which answers the original request.
//
// Waiting never blocks: a request whose lock is taken is parked in the store
// and answered when the lock is granted or its timeout passes; meanwhile the
// actor serves other requests. Transactions begun through the actor are
// aborted when the actor terminates.
#pragma once

#include "actors/store/type_ids.hpp"
#include "runtime/store/state_manager.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <memory>

namespace conclave::store {

using store_actor = caf::typed_actor<
    caf::replies_to<store_atoms::open_atom, std::string, collection_kind, std::string,
                    std::string>::with<bool>,
    caf::replies_to<store_atoms::begin_atom>::with<txn_id>,
    caf::replies_to<op_request, uint32_t>::with<op_result>,
    caf::replies_to<store_atoms::commit_atom, txn_id>::with<uint64_t>,
    caf::replies_to<store_atoms::abort_atom, txn_id>::with<bool>,
    caf::replies_to<store_atoms::checkpoint_atom>::with<uint64_t>,
    caf::reacts_to<store_atoms::done_atom, uint64_t, caf::error, op_result>,
    caf::reacts_to<store_atoms::done_atom, uint64_t, caf::error, uint64_t>>;

/// Registers the store's message types and a readable rendering of its
/// errors ("lock_timeout") in `cfg`. Call before creating the actor system.
inline void add_store_types(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::conclave_store>();
  cfg.add_error_category(
      error_category_atom, [](uint8_t code, caf::atom_value, const caf::message&) {
        return std::string{"conclave.store: "} + to_string(static_cast<errc>(code));
      });
}

/// Spawns an actor serving `store`. The store must stay open while the actor
/// lives (the actor holds a shared reference).
store_actor spawn_store_actor(caf::actor_system& sys,
                              std::shared_ptr<state_manager> store);

} // namespace conclave::store
