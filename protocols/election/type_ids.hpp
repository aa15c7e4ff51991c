// The CAF type-ID block of the election module: every message type a candidate
// sends or receives, in alphabetical order, and the module's atoms. Register it in
// every process: cfg.add_message_types<caf::id_block::conclave_election>().
#pragma once

#include "protocols/election/messages.hpp"
#include "protocols/election/status.hpp"
#include "protocols/type_id_offsets.hpp"

#include <caf/atom.hpp>
#include <caf/type_id.hpp>

#include <vector>

CAF_BEGIN_TYPE_ID_BLOCK(conclave_election, conclave::type_id_offset::election)

CAF_ADD_TYPE_ID(conclave_election, (conclave::election::answer_msg))
CAF_ADD_TYPE_ID(conclave_election, (conclave::election::coordinator_msg))
CAF_ADD_TYPE_ID(conclave_election, (conclave::election::election_msg))
CAF_ADD_TYPE_ID(conclave_election, (conclave::election::heartbeat_ack_msg))
CAF_ADD_TYPE_ID(conclave_election, (conclave::election::heartbeat_msg))
CAF_ADD_TYPE_ID(conclave_election, (conclave::election::leader_info))
CAF_ADD_TYPE_ID(conclave_election, (conclave::election::leadership_event))
CAF_ADD_TYPE_ID(conclave_election, (conclave::election::node_id))
CAF_ADD_TYPE_ID(conclave_election, (conclave::election::participant))
CAF_ADD_TYPE_ID(conclave_election, (conclave::election::pre_vote_msg))
CAF_ADD_TYPE_ID(conclave_election, (conclave::election::pre_vote_reply_msg))
CAF_ADD_TYPE_ID(conclave_election, (conclave::election::resign_msg))
CAF_ADD_TYPE_ID(conclave_election, (conclave::election::ring_ack_msg))
CAF_ADD_TYPE_ID(conclave_election, (conclave::election::ring_coordinator_msg))
CAF_ADD_TYPE_ID(conclave_election, (conclave::election::ring_election_msg))
CAF_ADD_TYPE_ID(conclave_election, (std::vector<conclave::election::participant>))

CAF_ADD_ATOM(conclave_election, conclave::election_atoms, elect_atom, "el_elect")
CAF_ADD_ATOM(conclave_election, conclave::election_atoms, leader_atom, "el_leader")
CAF_ADD_ATOM(conclave_election, conclave::election_atoms, members_atom, "el_members")
CAF_ADD_ATOM(conclave_election, conclave::election_atoms, observe_atom, "el_observe")
CAF_ADD_ATOM(conclave_election, conclave::election_atoms, peer_down_atom, "el_down")
CAF_ADD_ATOM(conclave_election, conclave::election_atoms, peer_dead_atom, "el_dead")
CAF_ADD_ATOM(conclave_election, conclave::election_atoms, peer_up_atom, "el_up")
CAF_ADD_ATOM(conclave_election, conclave::election_atoms, resign_atom, "el_resign")
CAF_ADD_ATOM(conclave_election, conclave::election_atoms, start_atom, "el_start")
CAF_ADD_ATOM(conclave_election, conclave::election_atoms, timer_atom, "el_timer")

CAF_END_TYPE_ID_BLOCK(conclave_election)
