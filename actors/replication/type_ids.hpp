// The CAF type-ID block of replication (type_id_offset::replication): the
// core's wire messages, the leadership messages and the client interface of
// the replica host. Register it in every process that hosts a replica or
// talks to one: cfg.add_message_types<caf::id_block::conclave_replication>().
#pragma once

#include "actors/replication/messages.hpp"
#include "protocols/type_id_offsets.hpp"

#include <caf/atom.hpp>
#include <caf/type_id.hpp>

CAF_BEGIN_TYPE_ID_BLOCK(conclave_replication, conclave::type_id_offset::replication)

CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::append))
CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::append_reply))
CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::become_primary_msg))
CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::fetch_reply))
CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::fetch_request))
CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::leader_is_msg))
CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::list_request))
CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::list_result))
CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::read_request))
CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::read_result))
CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::replica_status))
CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::snapshot_chunk))
CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::stale_term))
CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::sync_reply))
CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::sync_request))
CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::txn_request))
CAF_ADD_TYPE_ID(conclave_replication, (conclave::replication::txn_result))

CAF_ADD_ATOM(conclave_replication, conclave::replication_atoms, status_atom, "rp_status")
CAF_ADD_ATOM(conclave_replication, conclave::replication_atoms, flush_atom, "rp_flush")
CAF_ADD_ATOM(conclave_replication, conclave::replication_atoms, synced_atom, "rp_synced")
CAF_ADD_ATOM(conclave_replication, conclave::replication_atoms, timer_atom, "rp_timer")
CAF_ADD_ATOM(conclave_replication, conclave::replication_atoms, retry_atom, "rp_retry")
CAF_ADD_ATOM(conclave_replication, conclave::replication_atoms, checkpoint_atom,
             "rp_ckpt")

CAF_END_TYPE_ID_BLOCK(conclave_replication)
