// Ring election (Chang & Roberts, CACM 1979; in the form of Tanenbaum & van
// Steen, "Distributed Systems", §6.5: the token collects every live id), with
// terms and per-hop acknowledgements.
//
// Members are ordered by id; each one's successor is the next higher id, wrapping.
// Message flow. The initiator sends RING_ELECTION{initiator, alive=[self]} to its
// successor; each member appends its id and forwards. When the token is back at
// the initiator, the leader is the highest id in `alive` and the term is
// (highest epoch the token saw + 1, leader); RING_COORDINATOR then travels the ring
// once, every member adopting the term as it passes, until it is back at the
// initiator. With everyone alive: n election hops and n coordinator hops.
//
// Failures. Every hop is acknowledged (RING_ACK); a successor that does not ack
// within hop_timeout is retried hop_retries times, then suspected and skipped for
// that message. Only a member the transport reported down is skipped without a
// try: a suspected one gets one try per message, because in a ring a member hears
// only from its neighbours and a suspicion it never tests would never be lifted.
// A member that would have to skip the initiator itself completes the round in
// the initiator's place, and never chooses a member it could not reach (the
// announcement could not reach it either). A member trusts a suspected peer again
// as soon as it hears from it. An initiator or forwarder that sees no coordinator
// within the round timeout starts over. A member that leads or follows a live
// leader drops a token whose epoch is below its term's: that round began before
// the current term was chosen (a token delayed, duplicated or queued at a frozen
// member), and completing it would depose a healthy leader. It tells the round's
// initiator the current term directly (best effort): the initiator would otherwise
// wait for its round timeout, dropping lower initiators' rounds meanwhile, and it
// may be the very leader the term names, having missed the announcement.
//
// Timing. Hop timeouts follow the round trip measured from hop acks (and, as
// leader, heartbeat acks): srtt + max(4 * deviation, srtt / 4), at least
// hop_timeout, at most hop_timeout_max, doubled per retry; the round timeout
// scales with them. A round is one token: it carries (initiator, initiator's
// incarnation, round), and a member forwards each round at most once and
// completes it at most once, so a hop resent to a slow successor that was then
// skipped cannot copy the round (with a 21 ms delay and fixed 20 ms hop
// timeouts, the copies grew to 228,452 messages at n = 3). Hop numbers count
// per incarnation of the sender (not from its clock), so a restarted member's
// tokens are not taken for duplicates. A follower that adopts a term from the
// announcement allows for the hops the announcement still needs to reach the
// leader before it expects the leader's first heartbeat.
//
// Concurrent initiators (Chang-Roberts extinction): a member drops election tokens
// of initiators lower than the highest initiator it has already forwarded, so only
// the highest initiator's round completes; the timeout covers that initiator dying.
#pragma once

#include "protocols/election/candidate_core.hpp"
#include "protocols/election/seq_window.hpp"

#include <utility>

namespace conclave::election {

class ring_core final : public candidate_core {
public:
  using candidate_core::candidate_core;

private:
  struct pending_hop {
    uint64_t hop;
    node_id target;
    message msg; // ring_election_msg or ring_coordinator_msg, `from` = self
    unsigned tries;
    timestamp deadline;
    timestamp sent_at; ///< first send: an ack's round trip is measured from it
  };
  /// The latest round of one initiator this member has seen, and what it did.
  struct round_seen {
    node_id initiator;
    uint64_t incarnation = 0;
    uint64_t round = 0;
    bool forwarded = false;
    bool finalized = false;
  };
  /// The hops seen from one sender (in its latest incarnation). Hops arrive out of
  /// order (a retry of an older hop after a newer one got through), so a
  /// high-water mark alone would take a retried token for a copy.
  struct sender_seen {
    node_id from;
    uint64_t incarnation = 0;
    seq_window hops;
  };
  struct given_up {
    uint64_t hop;
    node_id target;
    timestamp sent_at;
  };

  void begin_election(timestamp now) override;
  void on_algorithm_message(const message& m, timestamp now) override;
  void on_algorithm_tick(timestamp now) override;
  std::optional<timestamp> algorithm_deadline() const override;
  void end_election() override;
  bool in_election() const override { return participating_ != no_node; }
  void on_peer_down_hook(node_id p, timestamp now) override;

  void on_election(const ring_election_msg& m, timestamp now);
  void on_coordinator(const ring_coordinator_msg& m, timestamp now);
  void on_ack(const ring_ack_msg& m, timestamp now);
  /// Completes a round: picks the leader from `alive`, announces it.
  /// Members in `skipped` (this member could not reach them) and members known
  /// to be down are never chosen.
  void finalize(const ring_election_msg& m, timestamp now,
                const std::vector<node_id>& skipped);
  /// Sends `m` to the next successor not known to be down, skipping everyone up
  /// to and including `gave_up` (a successor that did not ack `m`); handles "no
  /// one left" and "the initiator is gone".
  void forward(message m, timestamp now, node_id gave_up = no_node);
  /// How long to wait for the ack of a hop's try number `tries` (0 = first):
  /// the round-trip estimate within [hop_timeout, hop_timeout_max], doubled
  /// per retry.
  duration hop_timeout(unsigned tries) const;
  /// Whether (from, incarnation, hop) was seen before (or is from an earlier
  /// life of the sender). A hop more than 64 below the sender's highest is
  /// taken as new: the round checks drop it if it is a copy.
  bool duplicate(node_id from, uint64_t incarnation, uint64_t hop);
  round_seen& round_of(node_id initiator);
  duration round_timeout() const;
  /// How long a member that joined a round drops lower initiators' tokens
  /// (extinction): the time the round needs when no hop needs a retry.
  duration extinction_window() const;
  /// Feeds a hop ack's round trip to the estimator (see .cpp: clamped).
  void sample_round_trip(duration rtt);
  /// Sends this member's current term to `to` directly (not as a ring hop).
  void tell_term(node_id to);
  /// Follower: gives the leader time to learn of its term (see .cpp).
  void allow_for_announcement(node_id leader, timestamp now);

  node_id participating_ = no_node; ///< highest initiator forwarded this round
  /// When this member last joined (started or forwarded) participating_'s round.
  timestamp participating_since_{0};
  /// When this member joined the current round; the round times out
  /// round_timeout() later, with the round-trip estimate of that moment.
  std::optional<timestamp> round_started_;
  std::vector<pending_hop> pending_;
  uint64_t next_hop_ = 0; ///< hop numbers count from 1 in every incarnation
  uint64_t round_ = 0;    ///< this member's own rounds, likewise
  std::vector<sender_seen> last_hop_from_;
  std::vector<round_seen> rounds_seen_;
  std::vector<given_up> given_up_; ///< recent hops whose ack may still come
  /// A late ack (of a hop given up) was sampled since the last ack in time.
  bool late_sampled_ = false;
  std::optional<term> announced_; ///< the last announcement forwarded
};

} // namespace conclave::election
