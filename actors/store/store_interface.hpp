// The one typed interface of the reliable collections store for actors,
// whatever hosts it: store_actor (state_manager: file log, threads, real time)
// or store_host (store core + a log device, thread-free, runs on CAF's test
// coordinator in virtual time). Clients only ever see this alias.
//
// Protocol (every request is answered; failures are caf::error values made
// from conclave::store::errc, see type_ids.hpp):
//   (open_atom, name, kind, key_type, value_type) -> bool   create or check a collection
//   (begin_atom)                                 -> txn_id
//   (op_request, timeout_ms)                     -> op_result  (timeout_ms 0: the
//                                                   host's default, 4 s unless
//                                                   configured)
//   (commit_atom, txn_id)                        -> lsn as uint64 (once durable in
//                                                   strong mode; 0: nothing changed)
//   (abort_atom, txn_id)                         -> bool
//   (op_batch, timeout_ms)                       -> batch_result  (a whole
//                                                   transaction in one message:
//                                                   checks, operations, commit;
//                                                   protocols/store/batch.hpp)
//   (checkpoint_atom)                            -> lsn as uint64
// The two `done_atom` messages are internal: completions that the host's log
// (threads, or a device's sync events) sends back to the actor.
#pragma once

#include "actors/store/type_ids.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <string>

namespace conclave::store {

using store_actor = caf::typed_actor<
    caf::replies_to<store_atoms::open_atom, std::string, collection_kind, std::string,
                    std::string>::with<bool>,
    caf::replies_to<store_atoms::begin_atom>::with<txn_id>,
    caf::replies_to<op_request, uint32_t>::with<op_result>,
    caf::replies_to<store_atoms::commit_atom, txn_id>::with<uint64_t>,
    caf::replies_to<store_atoms::abort_atom, txn_id>::with<bool>,
    caf::replies_to<op_batch, uint32_t>::with<batch_result>,
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

} // namespace conclave::store
