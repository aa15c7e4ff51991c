// Settings of a candidate: algorithm, timeouts, failure detector, options.
#pragma once

#include "protocols/election/types.hpp"

#include <boost/outcome.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <system_error>

namespace conclave::election {

namespace outcome = BOOST_OUTCOME_V2_NAMESPACE;

enum class algorithm { bully, ring };

std::string_view to_string(algorithm a);
/// Parses "bully" or "ring".
outcome::result<algorithm, std::string> parse_algorithm(std::string_view text);

/// How a follower decides that the leader is gone when it is silent.
enum class detector_kind {
  fixed, ///< suspect after `timeout` without a heartbeat
  phi,   ///< phi accrual (Hayashibara et al.): adapts to the observed arrival jitter
};

struct detector_config {
  detector_kind kind = detector_kind::fixed;
  /// fixed: the silence after which the leader is suspected.
  /// phi: the earliest suspicion (phi never suspects before this silence).
  duration timeout = std::chrono::milliseconds(150);
  /// phi: suspect when phi reaches this value (8 ≈ one false suspicion in 10^8).
  double phi_threshold = 8.0;
  /// phi: floor for the standard deviation of inter-arrival times.
  duration min_std_dev = std::chrono::milliseconds(5);
  /// phi: extra silence tolerated on top of the estimate (GC pauses and the like).
  duration acceptable_pause = std::chrono::milliseconds(0);
  /// phi: number of inter-arrival samples kept.
  size_t window = 100;
};

struct quorum_guard_config {
  bool enabled = false;
  /// How long a majority acknowledgement of a heartbeat round lets the leader act,
  /// counted from when that round was sent. Must be shorter than the detector's
  /// (minimum) timeout minus `max_clock_drift`.
  duration lease = std::chrono::milliseconds(100);
  /// The longest lease a leader asks for. A leader asks each heartbeat round
  /// for L = clamp(2 x its round-trip bound, lease, lease_max) (guard_lease_for):
  /// `lease` while round trips stay under lease / 2, longer ones up to this.
  /// A follower that acks promises exactly the L it echoes (at most its own
  /// lease_max) and suspects the leader no earlier than that promise lapses
  /// (guard_follower_timeout). A restarted candidate keeps a promise of
  /// lease_max + drift to no one (it may have made one before it crashed).
  /// Not above `lease`: the fixed lease (a longer `lease` set alone keeps working).
  duration lease_max = std::chrono::milliseconds(500);
  duration max_clock_drift = std::chrono::milliseconds(10);
  /// The shortest interval between the leader's heartbeat rounds. A guarded
  /// leader sends its rounds `lease - round-trip bound` apart when that is
  /// shorter than `heartbeat_interval` (see guard_renewal_interval), but never
  /// closer than this (nor than heartbeat_interval, if that is shorter).
  duration min_renew_interval = std::chrono::milliseconds(10);
  /// Proofs of death (candidate_core::peer_dead): a follower that learns that
  /// the incarnation whose lease it renewed is gone (its process ended) drops
  /// its promise at once, so a new leader need not wait out the dead leader's
  /// lease. A silence (pause, partition) is never such a proof; what the host
  /// may call one is argued in docs/design/election.md, "Proofs of death".
  bool death_proof = false;
};

struct election_config {
  algorithm algo = algorithm::bully;
  duration heartbeat_interval = std::chrono::milliseconds(50);
  detector_config detector;
  /// Without a known leader (start-up, lost coordinator), how long a candidate
  /// listens for a heartbeat before it starts an election itself. Ignored with
  /// `preempt` (a preempting candidate elects at once).
  duration election_wait = std::chrono::milliseconds(150);
  /// Bully: how long an initiator waits for an answer from a higher id.
  duration answer_timeout = std::chrono::milliseconds(50);
  /// Bully: after an answer, how long to wait for the coordinator message.
  duration coordinator_timeout = std::chrono::milliseconds(200);
  /// Ring: how long a sender waits for the successor's ack before retrying, at
  /// least. The wait adapts to the measured round trip (srtt + 4 * deviation of
  /// acked hops and heartbeats), doubles with every retry of one hop, and never
  /// exceeds hop_timeout_max.
  duration hop_timeout = std::chrono::milliseconds(20);
  duration hop_timeout_max = std::chrono::seconds(2);
  /// Ring: how many times a silent successor is retried before it is skipped.
  unsigned hop_retries = 1;
  /// Classic Bully: a higher id that (re)joins deposes a lower leader. Off by
  /// default: a healthy leader keeps its role until it fails or resigns.
  bool preempt = false;
  quorum_guard_config guard;
  /// With the quorum guard: a candidate asks its peers (pre_vote) before an
  /// election and raises no epoch unless a majority, itself included, would take
  /// part (none of them hears a live leader). A candidate cut off in a minority
  /// then keeps its epoch and cannot depose the majority's leader when it comes
  /// back. A pre-vote that has no majority within election_wait is asked again.
  /// Ignored without the guard (the
  /// classic algorithms elect without majorities) and in a group of one.
  bool pre_vote = true;
};

/// The shortest interval between a guarded leader's heartbeat rounds:
/// min(heartbeat_interval, guard.min_renew_interval).
duration min_renewal_interval(const election_config& cfg);

/// The interval after which a leader sends its next heartbeat round, given a
/// bound on the round trip (rtt_estimator::timeout(); 0 while nothing is
/// measured). Without the guard: heartbeat_interval. With the guard, a round
/// sent at t renews the lease to t + lease once its majority ack is back, so
/// the next round must leave before t + lease - round trip for the leader to
/// act without gaps: lease - rtt_bound, within [min_renewal_interval(cfg),
/// heartbeat_interval], where lease is guard_lease_for(cfg, rtt_bound). Longer round
/// trips mean more frequent rounds, not gaps, up to the budget below.
duration guard_renewal_interval(const election_config& cfg, duration rtt_bound);

/// The lease a guarded leader asks for given a bound on the round trip (0:
/// nothing measured): clamp(2 x rtt_bound, guard.lease, guard.lease_max).
/// Twice the bound leaves a round trip's worth of lease between renewals.
duration guard_lease_for(const election_config& cfg, duration rtt_bound);

/// The silence after which a follower that promised a lease of `promised`
/// suspects its leader: the detector's timeout, or, when `promised` exceeds
/// guard.lease, at least promised + max_clock_drift + heartbeat_interval (it
/// never elects while its own promise still holds, and leaves one heartbeat
/// interval for the renewal that follows).
duration guard_follower_timeout(const election_config& cfg, duration promised);

/// The largest steady heartbeat round trip with which a guarded leader acts
/// without gaps: lease_max - min_renewal_interval(cfg) (rounds then leave every
/// min_renewal_interval). Up to `lease_max` it acts in bursts (renewals come back
/// after the lease they extend has lapsed), above `lease_max` never. max() without
/// the guard.
duration guard_round_trip_budget(const election_config& cfg);

/// A warning when a measured round trip (e.g. candidate_core::round_trips()
/// .smoothed()) approaches what the settings tolerate: above 3/4 of the guard's
/// budget, or above the detector timeout minus the heartbeat interval (the
/// slack a follower has before it suspects). Empty when the settings fit.
std::string round_trip_warning(const election_config& cfg, duration rtt);

/// The smallest `lease - min_renewal_interval` validate() accepts with the guard.
constexpr duration min_round_trip_budget = std::chrono::milliseconds(1);

/// Checks the settings for contradictions; the error says which setting to
/// change. With the quorum guard: lease > 0, drift >= 0, lease +
/// drift < detector timeout (a follower's promise lapses before it suspects and elects),
/// min_renew_interval > 0, lease > min_renewal_interval + min_round_trip_budget
/// (renewals can arrive before the lease lapses; the difference is the largest
/// round trip a leader keeps acting with), detector timeout > heartbeat interval.
outcome::result<void, std::string> validate(const election_config& cfg);

} // namespace conclave::election
