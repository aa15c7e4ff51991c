// The candidate actor: hosts one election core (Bully or Ring), turns CAF messages
// and timer firings into calls on it, and its outputs into sends, timers,
// notifications and the leader task. Its protocol:
//
//   peers → candidate   every election message type (see protocols/election)
//   self  → self        (timer_atom, generation)        timer firing
//   owner → candidate   (start_atom)                    join the group
//                       (peer_down_atom | peer_up_atom, id)  transport news
//                       (peer_dead_atom, id, incarnation)  proof that this
//                                                       incarnation of id is gone
//                       (elect_atom)                    start an election now
//                       (observe_atom, epoch)           a leader already held
//                                                       `epoch` (learned outside the
//                                                       election): lead above it
//                       (resign_atom) -> bool           hand over leadership
//                       (get_atom, leader_atom) -> leader_info
//                       (get_atom, members_atom) -> vector<participant>
//                       (subscribe_atom, actor)         leadership_event stream
//                       exit message                    resign if leader, stop
#pragma once

#include "actors/election/host.hpp"
#include "protocols/election/config.hpp"
#include "protocols/election/type_ids.hpp"

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <memory>
#include <optional>
#include <vector>

namespace conclave::election {

using candidate_actor = caf::typed_actor<
    caf::reacts_to<election_msg>, caf::reacts_to<answer_msg>,
    caf::reacts_to<coordinator_msg>, caf::reacts_to<ring_election_msg>,
    caf::reacts_to<ring_coordinator_msg>, caf::reacts_to<ring_ack_msg>,
    caf::reacts_to<heartbeat_msg>, caf::reacts_to<heartbeat_ack_msg>,
    caf::reacts_to<resign_msg>, caf::reacts_to<pre_vote_msg>,
    caf::reacts_to<pre_vote_reply_msg>,
    caf::reacts_to<election_atoms::timer_atom, uint64_t>,
    caf::reacts_to<election_atoms::start_atom>,
    caf::reacts_to<election_atoms::peer_down_atom, node_id>,
    caf::reacts_to<election_atoms::peer_up_atom, node_id>,
    caf::reacts_to<election_atoms::peer_dead_atom, node_id, uint64_t>,
    caf::reacts_to<election_atoms::elect_atom>,
    caf::reacts_to<election_atoms::observe_atom, uint64_t>,
    caf::replies_to<election_atoms::resign_atom>::with<bool>,
    caf::replies_to<caf::get_atom, election_atoms::leader_atom>::with<leader_info>,
    caf::replies_to<caf::get_atom,
                    election_atoms::members_atom>::with<std::vector<participant>>,
    caf::reacts_to<caf::subscribe_atom, caf::actor>>;

class transport;
class election_probe;
class leader_task;

struct candidate_options {
  node_id id;
  std::vector<node_id> peers;
  election_config config;
  std::shared_ptr<transport> net;
  /// Defaults to CAF's clock (real, or virtual under the test coordinator).
  std::shared_ptr<election_clock> clock;
  std::shared_ptr<election_probe> probe;
  std::shared_ptr<const leader_task> task;
  /// Start at once instead of waiting for start_atom.
  bool start_immediately = false;
  /// The member's promise record (host.hpp); none: the lease stays at
  /// guard.lease however long round trips grow.
  std::shared_ptr<promise_record> record;
  /// Must grow from one start of this member to the next (a restarted process);
  /// 0 derives it from the clock at start, which does for processes on one host.
  uint64_t incarnation = 0;
};

/// Spawns a candidate. It joins the group on start_atom (so that a directory of
/// handles can be filled first), or at once with start_immediately.
candidate_actor spawn_candidate(caf::actor_system& sys, candidate_options opts);

} // namespace conclave::election
