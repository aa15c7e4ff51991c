// Wire messages of the election protocols.
//
// Every message names its sender (`from`): transports deliver payloads, not
// connection identities, and the simulator routes the same structs. Bully uses
// election/answer/coordinator; Ring uses ring_election/ring_coordinator/ring_ack;
// both use heartbeat/heartbeat_ack (leader liveness, the quorum guard, and
// fencing of stale leaders) and resign (hand-over without waiting for detection);
// with the quorum guard, both ask pre_vote/pre_vote_reply before an election
// (candidate_core.hpp).
// The CAF type-ID block for these types is in type_ids.hpp.
#pragma once

#include "protocols/election/types.hpp"

#include <caf/meta/type_name.hpp>

#include <array>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace conclave::election {

/// Bully: "I am holding an election" — sent to every higher id not known down.
/// `epoch` is the highest epoch the sender has seen.
struct election_msg {
  node_id from;
  uint64_t epoch = 0;
};

/// Bully: "I am alive and higher than you; stand back."
struct answer_msg {
  node_id from;
  uint64_t epoch = 0;
};

/// Bully: "I lead term `t`."
struct coordinator_msg {
  node_id from;
  term t;
};

/// Ring: the election token travelling the ring, collecting the ids of live
/// candidates and the highest epoch any of them has seen.
struct ring_election_msg {
  node_id from;
  node_id initiator;
  uint64_t hop = 0; ///< per-sender sequence number, echoed by ring_ack
  uint64_t epoch = 0;
  std::vector<node_id> alive;
  std::vector<uint64_t> incarnations; ///< of the members in `alive`, same order;
                                      ///< the first is the initiator's
  uint64_t from_incarnation = 0;      ///< the sender's: hops count per life
  uint64_t round = 0;                 ///< the initiator's round number (per incarnation)
};

/// Ring: the announcement travelling the ring once more: "the leader is t.leader".
struct ring_coordinator_msg {
  node_id from;
  node_id initiator;
  uint64_t hop = 0;
  term t;
  uint64_t from_incarnation = 0;
};

/// Ring: "I received hop `hop` from you" — lets the sender skip a dead successor.
struct ring_ack_msg {
  node_id from;
  uint64_t hop = 0;
};

/// Leader → everyone, every heartbeat interval. Also announces the leader to a
/// member that missed the election (joined late, lost the coordinator message).
/// `silent` lists, in ascending order, the members the leader has not heard
/// from for a detector timeout or knows are down (usually none): should the
/// leader fail, a Bully initiator does not wait for their answers. At most
/// max_silent_named ids, the highest.
/// `lease_ns` (quorum guard): the lease this round asks for, in nanoseconds
/// (see guard_lease_for); 0 means the follower's configured guard.lease.
constexpr size_t max_silent_named = 64;
struct heartbeat_msg {
  node_id from;
  term t;
  uint64_t seq = 0;
  std::vector<node_id> silent = {};
  uint64_t lease_ns = 0;
};

/// Follower → leader. `t` is the follower's current term: a leader that reads a
/// higher term there learns it has been replaced and steps down. `accepted` is
/// false when the follower rejected the heartbeat as stale, or (quorum guard)
/// did not renew the lease because it still promised another leader's: then
/// `busy_for_ns` says for how much longer, so that the new leader asks again as
/// soon as the promise lapses instead of waiting for its next round. When
/// accepted, `lease_ns` is the lease the follower promised for this round (it
/// renews no other leader's lease for that long plus the drift bound from
/// when it received the round); 0 means the leader's configured guard.lease.
struct heartbeat_ack_msg {
  node_id from;
  term t;
  uint64_t seq = 0;
  bool accepted = false;
  uint64_t busy_for_ns = 0;
  uint64_t lease_ns = 0;
};

/// Leader → everyone: "I give up term t; elect someone else now."
struct resign_msg {
  node_id from;
  term t;
};

/// Pre-vote (quorum guard): "I no longer hear a leader; would you take part in an
/// election now?" Sent before an election raises any epoch. `epoch` is the highest
/// epoch the sender has seen; `round` numbers the sender's pre-votes.
struct pre_vote_msg {
  node_id from;
  uint64_t epoch = 0;
  uint64_t round = 0;
};

/// Answer to a pre-vote. `granted` is true unless the sender leads, or follows a
/// leader whose heartbeats its failure detector still accepts. `epoch` is the
/// highest epoch the sender has seen (the candidate's election then starts above
/// it); `round` echoes the request's.
struct pre_vote_reply_msg {
  node_id from;
  uint64_t epoch = 0;
  uint64_t round = 0;
  bool granted = false;
};

/// Every message a candidate core consumes or produces.
using message =
    std::variant<election_msg, answer_msg, coordinator_msg, ring_election_msg,
                 ring_coordinator_msg, ring_ack_msg, heartbeat_msg, heartbeat_ack_msg,
                 resign_msg, pre_vote_msg, pre_vote_reply_msg>;

constexpr size_t message_type_count = std::variant_size_v<message>;

namespace detail {
template <class T, class Variant>
struct index_in;
template <class T, class... Ts>
struct index_in<T, std::variant<Ts...>> {
  static constexpr size_t value = [] {
    constexpr bool same[] = {std::is_same_v<T, Ts>...};
    for (size_t i = 0; i < sizeof...(Ts); ++i)
      if (same[i])
        return i;
    return sizeof...(Ts);
  }();
};
} // namespace detail

/// The index of message type T in `message` (counters, metric labels).
template <class T>
constexpr size_t message_index = detail::index_in<T, message>::value;

/// Stable names of the message types, indexed like `message` (metric labels,
/// simulator reports).
constexpr std::array<std::string_view, message_type_count> message_type_names{
    "election",         "answer",   "coordinator",   "ring_election",
    "ring_coordinator", "ring_ack", "heartbeat",     "heartbeat_ack",
    "resign",           "pre_vote", "pre_vote_reply"};

/// Heartbeats and their acks: the steady-state traffic, not election cost.
constexpr bool is_heartbeat_type(size_t type_index) {
  return type_index
             == message_index<
                 heartbeat_msg> || type_index == message_index<heartbeat_ack_msg>;
}

inline node_id sender(const message& m) {
  return std::visit([](const auto& x) { return x.from; }, m);
}

// -- CAF serialization (0.17 inspect API) ------------------------------------

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, election_msg& x) {
  return f(caf::meta::type_name("election_msg"), x.from, x.epoch);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, answer_msg& x) {
  return f(caf::meta::type_name("answer_msg"), x.from, x.epoch);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, coordinator_msg& x) {
  return f(caf::meta::type_name("coordinator_msg"), x.from, x.t);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ring_election_msg& x) {
  return f(caf::meta::type_name("ring_election_msg"), x.from, x.initiator, x.hop, x.epoch,
           x.alive, x.incarnations, x.from_incarnation, x.round);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ring_coordinator_msg& x) {
  return f(caf::meta::type_name("ring_coordinator_msg"), x.from, x.initiator, x.hop, x.t,
           x.from_incarnation);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ring_ack_msg& x) {
  return f(caf::meta::type_name("ring_ack_msg"), x.from, x.hop);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, heartbeat_msg& x) {
  return f(caf::meta::type_name("heartbeat_msg"), x.from, x.t, x.seq, x.silent,
           x.lease_ns);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, heartbeat_ack_msg& x) {
  return f(caf::meta::type_name("heartbeat_ack_msg"), x.from, x.t, x.seq, x.accepted,
           x.busy_for_ns, x.lease_ns);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, resign_msg& x) {
  return f(caf::meta::type_name("resign_msg"), x.from, x.t);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pre_vote_msg& x) {
  return f(caf::meta::type_name("pre_vote_msg"), x.from, x.epoch, x.round);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pre_vote_reply_msg& x) {
  return f(caf::meta::type_name("pre_vote_reply_msg"), x.from, x.epoch, x.round,
           x.granted);
}

} // namespace conclave::election
