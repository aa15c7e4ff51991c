// candidate_core: what every election algorithm shares — terms and fencing, the
// leader's heartbeats, the followers' failure detector, the quorum guard, resign,
// and the outputs a host turns into sends, timers and notifications.
//
// Pure state machine (see etcd's raft for the shape): no I/O, no clock, no CAF
// scheduling. The host calls start/handle/peer_down/peer_up/tick/resign/stop with
// the current time, then drains outbox() (messages to send) and events()
// (notifications), and arms one timer for next_deadline(), calling tick() when it
// fires. Timers may fire late or spuriously: tick() only acts on what is due.
//
// Guarantees (given unique ids):
// - Fencing: a claim (coordinator, heartbeat, ring coordinator) whose term is lower
//   than the highest term this candidate has seen is rejected and reported; a
//   leader that learns of a higher term steps down at once.
// - Terms grow: a new leader's epoch exceeds every epoch its election saw.
// - Without the quorum guard, Bully and Ring are the classic algorithms: they assume
//   reliable links and may elect one leader per side of a partition (two leaders
//   then hold different terms; the higher wins when the partition heals).
// - With the quorum guard, the leader "acts" only until t_send + lease of the latest
//   heartbeat round a majority (itself included) acknowledged. Followers wait at
//   least the detector's timeout after the last heartbeat before electing, and the
//   lease is shorter than that minus the clock-drift bound; and a follower that
//   renewed one leader's lease grants no other leader's for lease + drift (the
//   majorities intersect), so two candidates never act at the same instant. A
//   leader that cannot renew steps down.
// - Pre-vote (with the quorum guard, `pre_vote` on, the default): before an
//   election a candidate asks every peer whether it would take part (pre_vote);
//   a peer says yes unless it leads or follows a leader its failure detector
//   still trusts. Only with yes from a majority (itself included) does the
//   election run and raise an epoch (replies are awaited election_wait, then it
//   asks again). A candidate cut off in a minority keeps asking and keeps its epoch, so
//   when it comes back it cannot depose the majority's leader with a higher term.
//   Elections opened by a peer's election (Bully), a resignation, a host's request or
//   preemption skip the pre-vote. Without the guard there is none: the classic algorithms
//   elect one leader per side of a partition, and the higher term wins when it
//   heals.
//
// Failure model: crash-stop and crash-recover candidates, message loss,
// duplication and reordering, partitions. Lost election messages are recovered by
// timeouts (restart of the election); lost coordinator messages by the leader's
// heartbeats, which announce the leader to anyone who missed it.
#pragma once

#include "protocols/election/config.hpp"
#include "protocols/election/detector.hpp"
#include "protocols/election/messages.hpp"
#include "protocols/election/rtt_estimator.hpp"
#include "protocols/election/seq_window.hpp"

#include <array>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

namespace conclave::election {

enum class role { follower, leader };

/// Why an election started.
enum class election_reason {
  startup,           ///< preempting candidate starting up
  no_leader,         ///< no heartbeat heard within election_wait
  leader_down,       ///< the transport reported the leader's connection dropped
  leader_suspected,  ///< the heartbeat detector suspected the leader
  leader_resigned,   ///< the leader handed over
  election_received, ///< Bully: a lower id started one
  election_timeout,  ///< the previous attempt did not finish in time
  preempt,           ///< a higher id deposing a lower leader (preempt on)
  leader_dead,       ///< the leader's process was proven dead (peer_dead)
  requested,         ///< the host asked (the last: node_probe counts up to it)
};
std::string_view to_string(election_reason r);

enum class event_kind {
  election_started,     ///< reason
  became_leader,        ///< t
  lost_leadership,      ///< t (the term given up), reason in `why`
  leader_changed,       ///< t, peer = new leader
  acting_started,       ///< t
  acting_stopped,       ///< t
  peer_suspected,       ///< peer
  peer_trusted,         ///< peer
  stale_claim_rejected, ///< peer = claimant, t = its stale term
  heartbeat_rtt,        ///< peer, rtt
  /// Follower: the detector's timer fired late (this candidate was not
  /// running), so the silence was not counted against the leader (peer):
  /// silence, threshold, lateness. See tick().
  suspicion_discounted,
  /// Follower: a suspicion of the leader (peer) was dropped before any
  /// election: the leader was heard again in its term, or a majority of the
  /// peers refused the pre-vote because they still hear it.
  suspicion_refuted,
};
std::string_view to_string(event_kind k);

/// Why leadership was lost.
enum class loss_reason { higher_term, resigned, quorum_lost, shutdown };
std::string_view to_string(loss_reason r);

struct election_event {
  event_kind kind;
  term t;
  node_id peer = no_node;
  election_reason reason = election_reason::requested;
  loss_reason why = loss_reason::higher_term;
  duration rtt{0};
  /// peer_suspected (of the leader, by the detector) and suspicion_discounted:
  /// how long the leader had been silent, the silence at which the detector
  /// suspects (fixed timeout, or phi's threshold over the arrival history),
  /// and how late the timer that judged it fired (0 for other causes).
  duration silence{0};
  duration threshold{0};
  duration lateness{0};
};

struct outgoing {
  node_id to;
  message msg;
};

enum class peer_state { alive, suspected, down };
std::string_view to_string(peer_state s);

struct participant {
  node_id id;
  peer_state state = peer_state::alive;
  /// When this candidate last received a message from it (its start, if
  /// none yet; for itself: now). A follower hears from its leader only.
  timestamp last_heard{0};
};

/// Counters kept by every core; hosts export them, tests and the simulator read them.
struct core_stats {
  std::array<uint64_t, message_type_count> sent{};
  std::array<uint64_t, message_type_count> received{};
  uint64_t elections_started = 0;
  uint64_t pre_votes = 0;        ///< pre-vote rounds asked
  uint64_t pre_votes_failed = 0; ///< ... that found no majority in time
  uint64_t leader_changes = 0;
  uint64_t stale_rejected = 0;
  uint64_t suspicions = 0;            ///< the detector suspected the leader
  uint64_t suspicions_discounted = 0; ///< ... not counted: own timer late
  uint64_t suspicions_refuted = 0;    ///< ... dropped: the leader was alive
  /// Quorum guard: heartbeat rounds sent early because the majority ack of the
  /// latest round was overdue (a lost heartbeat or ack).
  uint64_t rescue_rounds = 0;
  /// Quorum guard with death_proof: promises to a leader's lease dropped
  /// because that leader's incarnation was proven dead (peer_dead).
  uint64_t promises_released = 0;
};

class candidate_core {
public:
  candidate_core(node_id self, std::vector<node_id> peers, election_config cfg);
  virtual ~candidate_core() = default;

  candidate_core(const candidate_core&) = delete;
  candidate_core& operator=(const candidate_core&) = delete;

  // -- inputs ---------------------------------------------------------------

  /// Joins the group. A preempting candidate elects at once; otherwise it listens
  /// for a leader's heartbeat for election_wait first. `incarnation` must grow
  /// from one start of this candidate to the next (0: derived from `now`).
  void start(timestamp now, uint64_t incarnation = 0);

  /// Quorum guard, before start(): the host keeps a durable record of the
  /// longest lease this member may have promised (see "Adaptive lease" in
  /// docs/design/election.md), and read `recorded` from it (0: nothing
  /// recorded; a record that cannot be read must be passed as
  /// guard.lease_max). The candidate then promises leases longer than
  /// guard.lease only up to what the record holds, asks the host to raise it
  /// (take_promise_record) before it promises more, and keeps its start
  /// promise for max(recorded, guard.lease) + drift. Without a record a
  /// candidate never promises more than guard.lease: the lease stays fixed.
  /// `read_at`, when given, is when the host read the record: the start
  /// promise then counts from then rather than from start(). The host must
  /// read it only after this member's previous run has ended (the node reads
  /// it while holding its data directory's lock, before it waits to link
  /// with its peers), so that no promise of that run came later.
  void use_promise_record(duration recorded,
                          std::optional<timestamp> read_at = std::nullopt);

  /// The value the host should make durable now, if any (taken once). The
  /// host calls promise_recorded() when the write completed, or
  /// promise_record_failed() when it did not.
  std::optional<duration> take_promise_record();
  /// The record now durably holds `value`.
  void promise_recorded(duration value, timestamp now);
  /// The write asked for did not complete: asked again after a second.
  void promise_record_failed(timestamp now);

  /// A message from a peer.
  void handle(const message& m, timestamp now);

  /// The transport reports that the connection to `peer` dropped (or it crashed).
  void peer_down(node_id peer, timestamp now) {
    peer_gone(peer, election_reason::leader_down, now);
  }

  /// Proof that incarnation `incarnation` of `peer` is gone: its process ended
  /// (the host saw its liveness connection closed by the peer's kernel, see
  /// docs/design/election.md, "Proofs of death"). Never call it for a silence.
  /// Does what peer_down does (unless the peer already runs a newer
  /// incarnation), except that an election it opens because the leader is
  /// proven dead asks no pre-vote (reason leader_dead): a pre-vote guards
  /// against a suspicion, and peers that have not read their own proof yet
  /// would refuse it. With guard.death_proof, a promise this candidate made
  /// to exactly that incarnation's lease ends now, and heartbeats of that
  /// incarnation or an older one still in flight are not acked.
  void peer_dead(node_id peer, uint64_t incarnation, timestamp now);

  /// The transport reports that `peer` is reachable again.
  void peer_up(node_id peer, timestamp now);

  /// Timer: processes everything due at `now`.
  void tick(timestamp now);

  /// Leader: hands over at once (the others elect without waiting for detection);
  /// this candidate stays out of that election. Returns false if not leader.
  bool resign(timestamp now);

  /// Starts an election now, whatever the state.
  void request_election(timestamp now);

  /// The host learned, outside the election, that a leader already held epoch
  /// `e` (a store fencing writes by term refused this leader's write). Raises
  /// the highest epoch seen; a leader whose epoch is not above `e` takes a new
  /// term above it at once (became_leader again; followers adopt it from its
  /// heartbeats). Needed after restarts without memory, when the group elected
  /// a term lower than one recorded outside it.
  void observe_external_epoch(uint64_t e, timestamp now);

  /// Leaves the group: resigns if leader, then ignores every input.
  void stop(timestamp now);

  // -- outputs --------------------------------------------------------------

  /// The earliest time tick() has something to do, if any.
  std::optional<timestamp> next_deadline() const;

  std::vector<outgoing>& outbox() { return outbox_; }
  std::vector<election_event>& events() { return events_; }

  // -- state ----------------------------------------------------------------

  node_id id() const { return self_; }
  uint64_t incarnation() const { return incarnation_; }
  role current_role() const { return role_; }
  bool is_leader() const { return role_ == role::leader; }
  /// Whether this candidate may act as leader (quorum guard: inside the lease).
  /// Updated when the core runs; see lease_expiry() for the exact end.
  bool acting() const { return acting_; }
  /// Leader: when acting must end if the lease is not renewed (max without the
  /// guard). A host that was frozen compares this with the time before acting.
  timestamp lease_expiry() const { return lease_until_; }
  /// The leader this candidate follows or is (no_node while unknown).
  node_id leader() const { return leader_; }
  /// The term of the current leader, or the last one known.
  term current_term() const { return term_; }
  /// Named silent by the latest heartbeat of the leader this candidate
  /// followed (heartbeat_msg::silent), and not heard from directly since.
  bool reported_silent(node_id p) const;
  /// Every member id, this one included, ascending.
  const std::vector<node_id>& members() const { return members_; }
  std::vector<participant> participants(timestamp now) const;
  const core_stats& stats() const { return stats_; }
  const election_config& config() const { return cfg_; }
  size_t majority() const { return members_.size() / 2 + 1; }
  /// Whether elections this candidate opens itself ask a pre-vote first.
  bool pre_vote_enabled() const {
    return cfg_.pre_vote && cfg_.guard.enabled && majority() > 1;
  }
  /// Whether a pre-vote round is under way.
  bool pre_voting() const { return pre_vote_.active; }
  /// Follower: phi (or silence/timeout) of the current leader, 0 otherwise.
  double leader_phi(timestamp now) const;
  bool stopped() const { return stopped_; }
  /// Round trips measured by this candidate (heartbeat acks as leader, Ring hop
  /// acks); Ring derives its hop timeouts from it.
  const rtt_estimator& round_trips() const { return rtt_; }

protected:
  // -- algorithm hooks ------------------------------------------------------

  /// Starts this algorithm's election round (bookkeeping already done).
  virtual void begin_election(timestamp now) = 0;
  /// Messages the base does not handle itself.
  virtual void on_algorithm_message(const message& m, timestamp now) = 0;
  virtual void on_algorithm_tick(timestamp now) = 0;
  virtual std::optional<timestamp> algorithm_deadline() const = 0;
  /// The election (if any) ended: a leader was adopted or this candidate leads.
  virtual void end_election() = 0;
  /// Whether this candidate is running an election round.
  virtual bool in_election() const = 0;
  virtual void on_peer_down_hook(node_id, timestamp) {}

  // -- helpers for algorithms -----------------------------------------------

  void send(node_id to, message m);
  void start_election(election_reason reason, timestamp now);
  /// Adopts `t` if it is not lower than the highest term seen (becoming leader if
  /// t.leader is this candidate). Returns false, and reports, if stale.
  bool accept_claim(const term& t, node_id claimant, timestamp now);
  /// Becomes leader with a fresh term (max epoch seen + 1).
  term take_leadership(timestamp now);
  void observe_epoch(uint64_t e) { max_epoch_ = std::max(max_epoch_, e); }
  /// Follower: the leader's first heartbeat cannot come before `at` (Ring: the
  /// announcement still has hops to go to reach the leader); the detector
  /// measures silence from then.
  void expect_first_heartbeat_at(timestamp at);
  uint64_t max_epoch() const { return max_epoch_; }
  /// When this candidate last found one of its timers more than half a
  /// heartbeat interval late (it was not running): a round trip measured from a
  /// send before then includes its own stall.
  timestamp stall_ended() const { return stall_ended_; }
  bool is_down(node_id p) const;
  bool is_suspected(node_id p) const;
  void mark_suspected(node_id p);
  const std::vector<node_id>& peers() const { return peers_; }
  bool abstaining(timestamp now) const { return now < abstain_until_; }
  /// Follows a leader it has not suspected (nor been told is down).
  bool following_live_leader() const {
    return role_ == role::follower && leader_ != no_node && !is_suspected(leader_);
  }

  node_id self_;
  election_config cfg_;
  uint64_t incarnation_ = 0;
  rtt_estimator rtt_;

private:
  struct peer_status {
    bool down = false;
    bool suspected = false;
    timestamp last_heard{0};
    /// Leader: the heartbeat rounds this peer acked, so that an ack overtaken
    /// by a newer one still counts once for its own round.
    seq_window acked;
    uint64_t granted_round = 0; ///< newest pre-vote round this peer granted
    uint64_t refused_round = 0; ///< newest pre-vote round this peer refused
    /// The newest incarnation of this peer proven dead (peer_dead), 0: none.
    uint64_t dead_incarnation = 0;
  };
  struct pre_vote_state {
    bool active = false;
    uint64_t round = 0;
    size_t grants = 0;
    size_t refusals = 0;
    timestamp deadline{0};
    /// When the request goes again to the peers that have not granted (every
    /// election_wait within the window).
    timestamp resend_at{0};
    election_reason reason = election_reason::requested;
    /// When the round first asked.
    timestamp began{0};
  };
  struct heartbeat_round {
    uint64_t seq = 0;
    timestamp sent_at{0};
    size_t acks = 0;
    /// Quorum guard: the lease this round asked for, and the smallest lease
    /// promised by the acks counted so far (the leader acts on that one).
    duration lease{0};
    duration granted{0};
  };

  void heard_from(node_id p, timestamp now);
  /// Follower: when the leader becomes suspected if nothing arrives: the
  /// detector's time, but never before the promise given to it has lapsed
  /// (guard_follower_timeout).
  timestamp leader_suspect_at() const;
  /// Quorum guard, follower: the lease this candidate promises for `m`: what
  /// it asks, at most what the promise record allows (promise_cap).
  duration promise_for(const heartbeat_msg& m) const;
  /// What `m` asks (at most guard.lease_max; guard.lease if it asks nothing).
  duration asked_lease(const heartbeat_msg& m) const;
  /// Records a promise of `lease` to the sender of `m`, received at `now`.
  void promise(const heartbeat_msg& m, duration lease, timestamp now);
  /// Follower: the detector's verdict on the leader's silence at `now`.
  void judge_leader_silence(timestamp now);
  /// Leader: a heartbeat round overdue by more than a heartbeat interval means
  /// this candidate did not run; postpones a quorum-lost step-down once.
  void excuse_own_stall(timestamp now);
  /// The suspicion of suspected_ proved wrong: count and report it, once.
  void refute_suspicion();
  void on_heartbeat(const heartbeat_msg& m, timestamp now);
  void on_heartbeat_ack(const heartbeat_ack_msg& m, timestamp now);
  void on_resign(const resign_msg& m, timestamp now);
  void on_pre_vote(const pre_vote_msg& m, timestamp now);
  void on_pre_vote_reply(const pre_vote_reply_msg& m, timestamp now);
  void begin_pre_vote(election_reason reason, timestamp now);
  /// Sends the current pre-vote round's request to every peer not known down
  /// that has not granted it.
  void ask_pre_vote();
  /// Starts the algorithm's election (after the pre-vote, if any).
  void open_election(election_reason reason, timestamp now);
  /// An election round or a pre-vote is under way.
  bool electing() const { return pre_vote_.active || in_election(); }
  void become_leader(const term& t, timestamp now);
  void follow(const term& t, timestamp now);
  void step_down(loss_reason why, timestamp now);
  void send_heartbeats(timestamp now);
  /// guard_renewal_interval() for the round trips measured so far.
  duration renewal_interval() const;
  /// The round-trip bound renewal_interval() plans for (0: nothing measured).
  duration renewal_bound() const;
  /// Quorum guard: sets rescue_due_ from the latest renewed round.
  void plan_rescue();
  void update_acting(timestamp now);
  /// Quorum guard: when a leader that renewed no lease steps down.
  timestamp quorum_deadline() const;
  void leader_lost(election_reason reason, timestamp now);
  /// peer_down and peer_dead: `peer` is gone; if it led, elect for `reason`.
  void peer_gone(node_id peer, election_reason reason, timestamp now);
  void emit(election_event e) { events_.push_back(e); }
  peer_status* status(node_id p);
  const peer_status* status(node_id p) const;

  std::vector<node_id> peers_;   ///< ascending, without self
  std::vector<node_id> members_; ///< ascending, with self
  std::vector<peer_status> status_;

  role role_ = role::follower;
  bool acting_ = false;
  bool started_ = false;
  bool stopped_ = false;
  node_id leader_ = no_node;
  term term_;    ///< term of the current (or last known) leader
  term highest_; ///< highest term ever accepted
  uint64_t max_epoch_ = 0;

  failure_detector detector_;
  /// The term whose leader this candidate's detector suspected, until an
  /// election opens or the suspicion is refuted (counted once).
  std::optional<term> suspected_;
  bool refuted_ = false; ///< ... and that suspicion was counted refuted
  /// Late-timer grace periods given since the leader's last heartbeat.
  unsigned late_grants_ = 0;
  static constexpr unsigned max_late_grants = 2;
  std::optional<timestamp> leaderless_deadline_;
  timestamp abstain_until_{0};
  timestamp stall_ended_{0}; ///< see stall_ended()
  pre_vote_state pre_vote_;
  uint64_t pre_vote_round_ = 0;
  /// How long the pre-vote round that opened the current election took to
  /// reach its majority (at most the longest lease): a bound on a round trip
  /// to a majority that a new leader knows before any heartbeat ack has
  /// measured one. Its first renewal cannot come back sooner, so the
  /// quorum-lost step-down waits that much longer (quorum_deadline); without
  /// it, a leader on a network whose round trip exceeds the detector timeout
  /// stepped down before its first ack arrived, every time. Zero for an
  /// election opened without a pre-vote.
  duration takeover_rtt_bound_{0};
  /// Measured by the latest pre-vote that reached its majority, handed to the
  /// next open_election, also when this candidate joined another's round
  /// meanwhile (Ring) and opens its own later, and kept past the end of a
  /// leadership: a measurement older than the round that uses it is still
  /// the best bound that candidate has. Clearing it at the end of each round
  /// or leadership made Ring at a fixed 100 ms one-way delay fail liveness
  /// (`conclave sim --algorithm ring --guard --nodes 5 --detector phi
  /// --heartbeat-ms 20 --detector-timeout-ms 90 --lease-ms 60 --faults
  /// 'random=10,loss=0.1,delay=100ms' --runs 200 --seed 1`: 2 and 1 failed
  /// runs with two ways of clearing it, 0 as it is). It is at most the
  /// longest lease and only delays a minority leader's step-down; acting
  /// still ends with the lease.
  duration election_rtt_hint_{0};
  /// Pre-vote rounds that ended without a majority since the last election:
  /// each doubles the next round's window (up to 64 x election_wait), so
  /// replies slower than election_wait (long round trips) still make one. The
  /// request is repeated every election_wait within a window.
  unsigned pre_vote_failures_ = 0;

  // leader state
  timestamp heartbeat_due_{0};
  uint64_t heartbeat_seq_ = 0;
  /// Quorum guard: the lease the latest round asked for (guard_lease_for).
  duration asked_lease_{0};
  /// Rounds in flight: up to lease / min_renew_interval of them (40 at a
  /// 400 ms lease and 10 ms rounds); an ack of an older round is dropped.
  std::array<heartbeat_round, 64> rounds_{};
  /// The slowest heartbeat ack measured in the current bucket of up to
  /// rtt_bucket_size acks and in the one before: the renewal interval allows
  /// for it.
  static constexpr size_t rtt_bucket_size = 128;
  duration slowest_now_{0};
  duration slowest_before_{0};
  size_t acks_in_bucket_ = 0;
  timestamp leader_since_{0};
  timestamp lease_until_{0};
  timestamp renewed_round_sent_{0};
  /// Quorum guard: while the latest round is not renewed by a majority, the
  /// time by which one more round must leave to renew the current lease before
  /// it lapses. With a bare majority reachable, one lost heartbeat or ack
  /// stopped the leader for a round trip (a follower cut off from the leader
  /// only: 3-14 gaps in 19.5 s at 1 % loss, n = 3); a round sent at this time
  /// instead of a heartbeat interval after the lost one renews it in time.
  std::optional<timestamp> rescue_due_;
  /// A quorum-lost step-down postponed after this leader's own stall (once per
  /// renewal), until when.
  /// The latest lapse of an earlier leader's promise that a denial reported
  /// since this candidate took over (quorum_deadline).
  timestamp denied_until_{0};
  bool quorum_excused_ = false;
  timestamp quorum_excused_until_{0};

  // follower state (quorum guard): whose lease this candidate renewed, until when
  node_id promised_to_ = no_node;
  uint64_t promised_incarnation_ = 0; ///< of promised_to_ (its term's)
  timestamp promise_until_{0};
  /// The lease of the latest promise to promised_to_ (guard_follower_timeout).
  duration promised_lease_{0};
  /// The promise record (use_promise_record): whether the host keeps one;
  /// the longest lease it durably holds (the cap on promises; guard.lease
  /// without a record); the write asked for and not yet confirmed (at most
  /// one), whether the host has taken it, and when to ask again after a
  /// failed write; when the latest promise longer than guard.lease lapses.
  bool has_record_ = false;
  duration recorded_{0};
  std::optional<timestamp> record_read_at_; ///< start promise's origin, if given
  std::optional<duration> record_wanted_;
  bool record_taken_ = false;
  timestamp record_retry_at_{0};
  timestamp long_promise_until_{0};
  /// Plans a write of the record: raise it to guard.lease_max before a
  /// promise longer than it holds; lower it to guard.lease once no longer
  /// promise has run for record_settle (faster restarts).
  void plan_promise_record(duration wanted_lease, timestamp now);
  /// The longest lease this candidate may promise now.
  duration promise_cap() const;
  /// With guard.death_proof: the latest heartbeat refused for the promise.
  std::optional<heartbeat_msg> denied_;
  /// The `silent` list of the latest heartbeat from the leader followed.
  std::vector<node_id> reported_silent_;

  std::vector<outgoing> outbox_;
  std::vector<election_event> events_;
  core_stats stats_;
};

} // namespace conclave::election
