#include "protocols/election/candidate_core.hpp"

#include <algorithm>
#include <utility>

namespace conclave::election {

// -- names -------------------------------------------------------------------

std::string_view to_string(election_reason r) {
  switch (r) {
  case election_reason::startup:
    return "startup";
  case election_reason::no_leader:
    return "no_leader";
  case election_reason::leader_down:
    return "leader_down";
  case election_reason::leader_suspected:
    return "leader_suspected";
  case election_reason::leader_resigned:
    return "leader_resigned";
  case election_reason::election_received:
    return "election_received";
  case election_reason::election_timeout:
    return "election_timeout";
  case election_reason::preempt:
    return "preempt";
  case election_reason::leader_dead:
    return "leader_dead";
  case election_reason::requested:
    return "requested";
  }
  return "unknown";
}

std::string_view to_string(event_kind k) {
  switch (k) {
  case event_kind::election_started:
    return "election_started";
  case event_kind::became_leader:
    return "became_leader";
  case event_kind::lost_leadership:
    return "lost_leadership";
  case event_kind::leader_changed:
    return "leader_changed";
  case event_kind::acting_started:
    return "acting_started";
  case event_kind::acting_stopped:
    return "acting_stopped";
  case event_kind::peer_suspected:
    return "peer_suspected";
  case event_kind::peer_trusted:
    return "peer_trusted";
  case event_kind::stale_claim_rejected:
    return "stale_claim_rejected";
  case event_kind::heartbeat_rtt:
    return "heartbeat_rtt";
  case event_kind::suspicion_discounted:
    return "suspicion_discounted";
  case event_kind::suspicion_refuted:
    return "suspicion_refuted";
  }
  return "unknown";
}

std::string_view to_string(loss_reason r) {
  switch (r) {
  case loss_reason::higher_term:
    return "higher_term";
  case loss_reason::resigned:
    return "resigned";
  case loss_reason::quorum_lost:
    return "quorum_lost";
  case loss_reason::shutdown:
    return "shutdown";
  }
  return "unknown";
}

std::string_view to_string(peer_state s) {
  switch (s) {
  case peer_state::alive:
    return "alive";
  case peer_state::suspected:
    return "suspected";
  case peer_state::down:
    return "down";
  }
  return "unknown";
}

// -- construction --------------------------------------------------------------

candidate_core::candidate_core(node_id self, std::vector<node_id> peers,
                               election_config cfg)
    : self_(self), cfg_(cfg), detector_(cfg.detector, cfg.heartbeat_interval) {
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  peers.erase(std::remove(peers.begin(), peers.end(), self), peers.end());
  peers_ = std::move(peers);
  members_ = peers_;
  members_.insert(std::lower_bound(members_.begin(), members_.end(), self), self);
  status_.resize(peers_.size());
}

candidate_core::peer_status* candidate_core::status(node_id p) {
  // Ids are usually dense (1..n): then p's index is known without a search,
  // which a simulated group of 1,000 runs once per message.
  if (!peers_.empty() && p.value >= peers_.front().value) {
    auto first = peers_.front().value;
    auto guess = p.value - first - (p.value > self_.value && self_.value > first ? 1 : 0);
    if (guess < peers_.size() && peers_[guess] == p)
      return &status_[guess];
  }
  auto i = std::lower_bound(peers_.begin(), peers_.end(), p);
  if (i == peers_.end() || *i != p)
    return nullptr;
  return &status_[static_cast<size_t>(i - peers_.begin())];
}

const candidate_core::peer_status* candidate_core::status(node_id p) const {
  return const_cast<candidate_core*>(this)->status(p);
}

bool candidate_core::is_down(node_id p) const {
  auto s = status(p);
  return s != nullptr && s->down;
}

bool candidate_core::reported_silent(node_id p) const {
  return std::binary_search(reported_silent_.begin(), reported_silent_.end(), p);
}

bool candidate_core::is_suspected(node_id p) const {
  auto s = status(p);
  return s != nullptr && (s->down || s->suspected);
}

void candidate_core::mark_suspected(node_id p) {
  if (auto s = status(p); s != nullptr && !s->suspected) {
    s->suspected = true;
    emit({event_kind::peer_suspected, term_, p});
  }
}

namespace {

/// The longest lease a guarded leader asks for (and a follower promises).
duration longest_lease(const election_config& cfg) {
  return std::max(cfg.guard.lease, cfg.guard.lease_max);
}

} // namespace

// -- inputs ----------------------------------------------------------------------

void candidate_core::start(timestamp now, uint64_t incarnation) {
  if (started_ || stopped_)
    return;
  started_ = true;
  incarnation_ = incarnation != 0 ? incarnation : static_cast<uint64_t>(now.count()) + 1;
  detector_.reset(now);
  // A restarted candidate may have renewed a lease just before it crashed, for
  // as long as its promise record allows (guard.lease without a record).
  if (cfg_.guard.enabled) {
    auto before = has_record_ ? recorded_ : cfg_.guard.lease;
    // Nothing was promised after the record was read (use_promise_record).
    auto origin = record_read_at_ ? std::min(*record_read_at_, now) : now;
    promise_until_ = origin + before + cfg_.guard.max_clock_drift;
    if (before > cfg_.guard.lease)
      long_promise_until_ = promise_until_;
  }
  for (auto& s : status_)
    s.last_heard = now;
  if (peers_.empty()) {
    start_election(election_reason::startup, now);
  } else if (cfg_.preempt) {
    start_election(election_reason::startup, now);
  } else {
    leaderless_deadline_ = now + cfg_.election_wait;
  }
}

void candidate_core::use_promise_record(duration recorded,
                                        std::optional<timestamp> read_at) {
  if (started_)
    return;
  has_record_ = true;
  record_read_at_ = read_at;
  // Not clamped to lease_max: a record written under a longer lease_max
  // still bounds what this member promised before.
  recorded_ = std::max(recorded, cfg_.guard.lease);
}

std::optional<duration> candidate_core::take_promise_record() {
  if (!record_wanted_ || record_taken_)
    return std::nullopt;
  record_taken_ = true;
  return record_wanted_;
}

void candidate_core::promise_recorded(duration value, timestamp) {
  if (!record_wanted_ || value != *record_wanted_)
    return;
  recorded_ = value;
  record_wanted_.reset();
}

void candidate_core::promise_record_failed(timestamp now) {
  if (!record_wanted_)
    return;
  // The record holds the old value or the new one: promise no more than the
  // smaller of them.
  recorded_ = std::min(recorded_, *record_wanted_);
  record_wanted_.reset();
  record_retry_at_ = now + std::chrono::seconds(1);
}

duration candidate_core::promise_cap() const {
  if (!has_record_)
    return cfg_.guard.lease;
  auto cap = recorded_;
  if (record_wanted_)
    cap = std::min(cap, *record_wanted_); // a lowering under way binds at once
  return std::min(cap, longest_lease(cfg_));
}

void candidate_core::plan_promise_record(duration wanted_lease, timestamp now) {
  // 30 s without a promise above guard.lease before the record is lowered
  // again: at most one raise and one lowering per 30 s when round trips
  // hover around lease / 2.
  constexpr duration record_settle = std::chrono::seconds(30);
  if (!has_record_ || !cfg_.guard.enabled || record_wanted_ || now < record_retry_at_)
    return;
  if (wanted_lease > recorded_ && recorded_ < longest_lease(cfg_)) {
    // One raise, straight to the longest lease this member promises: the
    // record is written rarely, and a restart then waits that long.
    record_wanted_ = longest_lease(cfg_);
    record_taken_ = false;
  } else if (recorded_ > cfg_.guard.lease && wanted_lease <= cfg_.guard.lease
             && now >= long_promise_until_ + record_settle) {
    record_wanted_ = cfg_.guard.lease;
    record_taken_ = false;
  }
}

void candidate_core::handle(const message& m, timestamp now) {
  if (stopped_ || !started_)
    return;
  auto from = sender(m);
  if (status(from) == nullptr)
    return; // not a member: the host counts and drops such messages earlier
  ++stats_.received[m.index()];
  heard_from(from, now);
  switch (m.index()) {
  case message_index<heartbeat_msg>:
    on_heartbeat(std::get<heartbeat_msg>(m), now);
    break;
  case message_index<heartbeat_ack_msg>:
    on_heartbeat_ack(std::get<heartbeat_ack_msg>(m), now);
    break;
  case message_index<resign_msg>:
    on_resign(std::get<resign_msg>(m), now);
    break;
  case message_index<pre_vote_msg>:
    on_pre_vote(std::get<pre_vote_msg>(m), now);
    break;
  case message_index<pre_vote_reply_msg>:
    on_pre_vote_reply(std::get<pre_vote_reply_msg>(m), now);
    break;
  default:
    on_algorithm_message(m, now);
  }
}

void candidate_core::heard_from(node_id p, timestamp now) {
  auto s = status(p);
  s->last_heard = now;
  if (!reported_silent_.empty()) {
    // Heard directly: no longer silent, whatever the leader last said.
    auto i = std::lower_bound(reported_silent_.begin(), reported_silent_.end(), p);
    if (i != reported_silent_.end() && *i == p)
      reported_silent_.erase(i);
  }
  if (s->down || s->suspected) {
    s->down = false;
    s->suspected = false;
    emit({event_kind::peer_trusted, term_, p});
  }
}

void candidate_core::peer_gone(node_id p, election_reason reason, timestamp now) {
  if (stopped_ || !started_)
    return;
  auto s = status(p);
  if (s == nullptr || s->down)
    return;
  s->down = true;
  emit({event_kind::peer_suspected, term_, p});
  on_peer_down_hook(p, now);
  if (role_ == role::follower && leader_ == p)
    leader_lost(reason, now);
}

void candidate_core::peer_dead(node_id p, uint64_t incarnation, timestamp now) {
  if (stopped_ || !started_)
    return;
  auto s = status(p);
  if (s == nullptr || incarnation == 0)
    return;
  s->dead_incarnation = std::max(s->dead_incarnation, incarnation);
  // Only the promise to that very incarnation ends: a proof about an older
  // life says nothing of the one now leading (it may have restarted, won and
  // had its lease renewed since), and a promise made at start, to no one
  // known, stays (a restarted candidate may have renewed an unknown lease).
  if (cfg_.guard.enabled && cfg_.guard.death_proof && promised_to_ == p
      && promised_incarnation_ == incarnation && now < promise_until_) {
    promise_until_ = now;
    promised_to_ = no_node;
    ++stats_.promises_released;
    // The new leader's round refused for that promise: grant it now rather
    // than at the leader's next round (as an ack that was slow would; the
    // leader counts its lease from when it sent the round).
    if (denied_ && denied_->from != p && role_ == role::follower
        && leader_ == denied_->from && denied_->t == term_) {
      auto lease = promise_for(*denied_);
      promise(*denied_, lease, now);
      send(denied_->from, heartbeat_ack_msg{self_, term_, denied_->seq, true, 0,
                                            static_cast<uint64_t>(lease.count())});
    }
    denied_.reset();
  }
  bool newer_alive = leader_ == p && term_.incarnation > incarnation;
  if (!newer_alive)
    peer_gone(p, election_reason::leader_dead, now);
  else if (role_ == role::leader)
    update_acting(now);
}

void candidate_core::peer_up(node_id p, timestamp now) {
  if (stopped_ || status(p) == nullptr)
    return;
  heard_from(p, now);
}

void candidate_core::tick(timestamp now) {
  if (stopped_ || !started_)
    return;
  if (auto due = next_deadline(); due && now - *due > cfg_.heartbeat_interval / 2) {
    // The timer fired late: this candidate did not run (SIGSTOP, a starved
    // process). Acks of what it sent before now waited for it, and their
    // round trips would measure its own stall, not the network.
    stall_ended_ = now;
  }
  if (pre_vote_.active && now < pre_vote_.deadline && now >= pre_vote_.resend_at) {
    // A long window (after failed rounds) must not leave the group silent
    // once the faults heal: ask again every election_wait; replies to any of
    // the requests count (same round).
    pre_vote_.resend_at = now + cfg_.election_wait;
    ask_pre_vote();
  }
  if (pre_vote_.active && now >= pre_vote_.deadline) {
    // No majority would take part within election_wait: no election, no new
    // epoch. Ask again, unless a leader's heartbeat arrives meanwhile; each
    // failed round doubles the next one's window (election_wait, 2x, 4x ...
    // 64x), so round trips longer than election_wait still complete a round.
    // Replies to an earlier round do not count.
    pre_vote_.active = false;
    ++stats_.pre_votes_failed;
    ++pre_vote_failures_;
    if (role_ != role::leader && leader_ == no_node && !in_election())
      leaderless_deadline_ = now;
  }
  if (cfg_.guard.enabled)
    plan_promise_record(cfg_.guard.lease, now); // lowering it, once settled
  if (role_ == role::leader) {
    excuse_own_stall(now);
    update_acting(now);
    bool rescue = rescue_due_ && now >= *rescue_due_ && now < heartbeat_due_;
    if (role_ == role::leader && (now >= heartbeat_due_ || rescue)) {
      stats_.rescue_rounds += rescue;
      send_heartbeats(now);
    }
  } else if (leader_ != no_node) {
    judge_leader_silence(now);
  } else if (leaderless_deadline_ && now >= *leaderless_deadline_ && !electing()) {
    leaderless_deadline_.reset();
    start_election(election_reason::no_leader, now);
  }
  on_algorithm_tick(now);
}

timestamp candidate_core::leader_suspect_at() const {
  auto due = detector_.suspect_at();
  if (cfg_.guard.enabled && promised_to_ == leader_ && promised_lease_ > cfg_.guard.lease)
    due = std::max(due, detector_.last_heartbeat()
                            + guard_follower_timeout(cfg_, promised_lease_));
  return due;
}

void candidate_core::judge_leader_silence(timestamp now) {
  auto due = leader_suspect_at();
  if (now < due)
    return;
  election_event e{event_kind::peer_suspected, term_, leader_};
  e.silence = now - detector_.last_heartbeat();
  e.threshold = due - detector_.last_heartbeat();
  e.lateness = now - due;
  if (e.lateness > cfg_.heartbeat_interval / 2 && late_grants_ < max_late_grants) {
    // The timer fired late: this candidate was not running (SIGSTOP, a starved
    // process), and part of the silence it would judge is its own. The
    // leader's heartbeats may still wait in its sockets or mailbox. Discount
    // that lateness: judge again once this candidate has run as long as it
    // was away (at least half a heartbeat interval, to read what queued up;
    // at most one detector timeout). Only max_late_grants times until a
    // heartbeat arrives: a timer that always fires late (a starved host) must
    // not postpone suspicion forever; a real silence is then suspected at
    // most max_late_grants detector timeouts late.
    ++late_grants_;
    ++stats_.suspicions_discounted;
    e.kind = event_kind::suspicion_discounted;
    emit(e);
    detector_.postpone(now + std::min(e.lateness, cfg_.detector.timeout));
    return;
  }
  ++stats_.suspicions;
  emit(e);
  if (auto s = status(leader_))
    s->suspected = true;
  suspected_ = term_;
  refuted_ = false;
  leader_lost(election_reason::leader_suspected, now);
}

void candidate_core::excuse_own_stall(timestamp now) {
  // A leader whose heartbeat round is overdue by more than a heartbeat
  // interval was not running (a starved or stopped process): the acks that
  // would have renewed its quorum may be waiting in its mailbox. Before a
  // quorum-lost step-down, it sends the overdue round and gives the acks as
  // long as it was away (at most one detector timeout), once per renewal.
  // Safety does not depend on the step-down: acting ends with the lease.
  if (!cfg_.guard.enabled || majority() == 1 || quorum_excused_
      || now < quorum_deadline())
    return;
  auto late = now - heartbeat_due_;
  if (late <= cfg_.heartbeat_interval)
    return;
  // Reported like a follower's discount, about itself: how long no round was
  // renewed, the limit, and how late its own round was.
  election_event e{event_kind::suspicion_discounted, term_, self_};
  e.threshold = cfg_.detector.timeout;
  e.silence = now - (quorum_deadline() - e.threshold);
  e.lateness = late;
  quorum_excused_ = true;
  quorum_excused_until_ = now + std::min(late, cfg_.detector.timeout);
  ++stats_.suspicions_discounted;
  emit(e);
}

void candidate_core::refute_suspicion() {
  if (!suspected_ || refuted_)
    return;
  refuted_ = true;
  ++stats_.suspicions_refuted;
  emit({event_kind::suspicion_refuted, *suspected_, suspected_->leader});
}

bool candidate_core::resign(timestamp now) {
  if (stopped_ || role_ != role::leader)
    return false;
  for (auto p : peers_)
    send(p, resign_msg{self_, term_});
  step_down(loss_reason::resigned, now);
  // Stay out of the election that follows; rejoin as soon as a new leader is
  // known, or after a while if none shows up.
  abstain_until_ =
      now + cfg_.election_wait + cfg_.coordinator_timeout + cfg_.detector.timeout;
  leaderless_deadline_ = abstain_until_;
  return true;
}

void candidate_core::request_election(timestamp now) {
  if (stopped_ || !started_)
    return;
  start_election(election_reason::requested, now);
}

void candidate_core::observe_external_epoch(uint64_t e, timestamp now) {
  if (stopped_)
    return;
  observe_epoch(e);
  if (role_ == role::leader && term_.epoch <= e)
    take_leadership(now);
}

void candidate_core::stop(timestamp now) {
  if (stopped_)
    return;
  if (role_ == role::leader) {
    for (auto p : peers_)
      send(p, resign_msg{self_, term_});
    step_down(loss_reason::shutdown, now);
  }
  end_election();
  pre_vote_.active = false;
  leaderless_deadline_.reset();
  stopped_ = true;
}

// -- outputs -----------------------------------------------------------------------

std::optional<timestamp> candidate_core::next_deadline() const {
  if (stopped_ || !started_)
    return std::nullopt;
  std::optional<timestamp> result;
  auto consider = [&](timestamp t) {
    if (!result || t < *result)
      result = t;
  };
  if (role_ == role::leader) {
    consider(heartbeat_due_);
    if (rescue_due_)
      consider(*rescue_due_);
    if (cfg_.guard.enabled) {
      if (acting_)
        consider(lease_until_);
      // Alone, a leader is its own majority and never loses it
      // (update_acting): a quorum deadline would be a deadline nothing
      // handles, due again at once, forever.
      if (majority() > 1)
        consider(quorum_deadline());
    }
  } else if (leader_ != no_node) {
    consider(leader_suspect_at());
  } else if (leaderless_deadline_ && !electing()) {
    consider(*leaderless_deadline_);
  }
  if (pre_vote_.active) {
    consider(pre_vote_.deadline);
    consider(pre_vote_.resend_at);
  }
  if (auto t = algorithm_deadline())
    consider(*t);
  return result;
}

std::vector<participant> candidate_core::participants(timestamp now) const {
  std::vector<participant> result;
  result.reserve(members_.size());
  for (auto m : members_) {
    participant p{m, peer_state::alive, now};
    if (auto s = status(m)) {
      p.last_heard = s->last_heard;
      if (s->down)
        p.state = peer_state::down;
      else if (s->suspected)
        p.state = peer_state::suspected;
      else if (role_ == role::leader && now - s->last_heard > cfg_.detector.timeout)
        p.state = peer_state::suspected; // the leader hears from everyone
    }
    result.push_back(p);
  }
  return result;
}

double candidate_core::leader_phi(timestamp now) const {
  if (role_ != role::follower || leader_ == no_node)
    return 0;
  return detector_.phi(now);
}

// -- helpers -------------------------------------------------------------------------

void candidate_core::send(node_id to, message m) {
  ++stats_.sent[m.index()];
  outbox_.push_back({to, std::move(m)});
}

namespace {

/// Elections a candidate opens on its own judgement that the leader is gone ask
/// a pre-vote; those opened by a peer that asked one (Bully's election message),
/// by a resignation, by the host or by preemption do not.
bool needs_pre_vote(election_reason r) {
  switch (r) {
  case election_reason::no_leader:
  case election_reason::leader_down:
  case election_reason::leader_suspected:
  case election_reason::election_timeout:
    return true;
  default:
    return false;
  }
}

} // namespace

void candidate_core::start_election(election_reason reason, timestamp now) {
  if (stopped_)
    return;
  if (abstaining(now) && reason != election_reason::requested)
    return;
  if (pre_vote_enabled() && needs_pre_vote(reason)) {
    begin_pre_vote(reason, now);
    return;
  }
  open_election(reason, now);
}

void candidate_core::begin_pre_vote(election_reason reason, timestamp now) {
  if (role_ == role::follower)
    leader_ = no_node; // asking means no longer following
  leaderless_deadline_.reset();
  if (pre_vote_.active)
    return; // one is under way: its replies or its deadline decide
  ++stats_.pre_votes;
  auto window = cfg_.election_wait * (int64_t{1} << std::min(pre_vote_failures_, 6u));
  pre_vote_ = {true,         ++pre_vote_round_,        1,      0,
               now + window, now + cfg_.election_wait, reason, now};
  ask_pre_vote();
}

void candidate_core::ask_pre_vote() {
  auto epoch = std::max(max_epoch_, highest_.epoch);
  for (size_t i = 0; i < peers_.size(); ++i)
    if (!status_[i].down && status_[i].granted_round < pre_vote_.round)
      send(peers_[i], pre_vote_msg{self_, epoch, pre_vote_.round});
}

void candidate_core::on_pre_vote(const pre_vote_msg& m, timestamp now) {
  observe_epoch(m.epoch);
  // Raft's rule (Ongaro, thesis §9.6) with this core's failure detector: no to
  // anyone while this candidate leads or still hears its leader.
  bool hears_leader =
      role_ == role::leader
      || (leader_ != no_node && !is_suspected(leader_) && now < leader_suspect_at());
  send(m.from, pre_vote_reply_msg{self_, std::max(max_epoch_, highest_.epoch), m.round,
                                  !hears_leader});
}

void candidate_core::on_pre_vote_reply(const pre_vote_reply_msg& m, timestamp now) {
  observe_epoch(m.epoch);
  if (!pre_vote_.active || m.round != pre_vote_.round)
    return;
  auto* s = status(m.from);
  if (!m.granted) {
    // The peer still hears a leader. Once so many refuse that no majority can
    // grant this round, the suspicion that asked is refuted: the leader is
    // alive for a majority. The round still runs to its deadline (it grants
    // others' pre-votes meanwhile, so a failover is not slowed by peers whose
    // detectors fire a little later), and this candidate follows the leader
    // again on its next heartbeat. Refusals never block an election that a
    // majority grants: a peer on the leader's side of a partition cannot stop
    // the majority's (they need no reply from it).
    if (s->refused_round >= m.round)
      return; // duplicate
    s->refused_round = m.round;
    if (++pre_vote_.refusals + majority() > members_.size())
      refute_suspicion();
    return;
  }
  if (s->granted_round >= m.round)
    return; // a duplicate must not fake a majority
  s->granted_round = m.round;
  if (++pre_vote_.grants < majority())
    return;
  pre_vote_.active = false;
  election_rtt_hint_ = std::min(now - pre_vote_.began, longest_lease(cfg_));
  if (in_election())
    return; // it joined another candidate's round meanwhile (Ring)
  open_election(pre_vote_.reason, now);
}

void candidate_core::open_election(election_reason reason, timestamp now) {
  takeover_rtt_bound_ = std::exchange(election_rtt_hint_, duration{0});
  suspected_.reset(); // confirmed (or overtaken): an election runs
  refuted_ = false;
  pre_vote_.active = false;
  pre_vote_failures_ = 0;
  abstain_until_ = timestamp{0};
  ++stats_.elections_started;
  leaderless_deadline_.reset();
  if (role_ == role::follower)
    leader_ = no_node; // electing means no longer following
  emit({event_kind::election_started, term_, no_node, reason});
  begin_election(now);
}

void candidate_core::leader_lost(election_reason reason, timestamp now) {
  leader_ = no_node;
  start_election(reason, now);
  if (!electing() && leader_ == no_node && role_ != role::leader)
    leaderless_deadline_ = now + cfg_.election_wait;
}

bool candidate_core::accept_claim(const term& t, node_id claimant, timestamp now) {
  if (t < highest_) {
    ++stats_.stale_rejected;
    emit({event_kind::stale_claim_rejected, t, claimant});
    return false;
  }
  observe_epoch(t.epoch);
  if (t.leader == self_ && t.incarnation != incarnation_) {
    // A term of an earlier life of this candidate (it crashed and restarted):
    // never lead under it. Remember it, and outrank it if leading now.
    highest_ = std::max(highest_, t);
    if (role_ == role::leader && term_ < t)
      take_leadership(now);
    return false;
  }
  if (t == term_ && leader_ == t.leader)
    return true; // already known
  if (t.leader == self_) {
    become_leader(t, now);
  } else {
    if (role_ == role::leader)
      step_down(loss_reason::higher_term, now);
    follow(t, now);
  }
  return true;
}

term candidate_core::take_leadership(timestamp now) {
  term t{std::max(max_epoch_, highest_.epoch) + 1, self_, incarnation_};
  become_leader(t, now);
  return t;
}

void candidate_core::become_leader(const term& t, timestamp now) {
  end_election();
  pre_vote_.active = false;
  leaderless_deadline_.reset();
  abstain_until_ = timestamp{0};
  bool was_leader = role_ == role::leader;
  if (was_leader && acting_) {
    acting_ = false;
    emit({event_kind::acting_stopped, term_});
  }
  if (leader_ != self_)
    ++stats_.leader_changes;
  role_ = role::leader;
  leader_ = self_;
  term_ = t;
  highest_ = std::max(highest_, t);
  observe_epoch(t.epoch);
  leader_since_ = now;
  denied_until_ = timestamp{0};
  lease_until_ = timestamp{0};
  renewed_round_sent_ = timestamp{0};
  rescue_due_.reset();
  quorum_excused_ = false;
  rounds_.fill({});
  slowest_now_ = slowest_before_ = duration{0};
  acks_in_bucket_ = 0;
  emit({event_kind::became_leader, t});
  emit({event_kind::leader_changed, t, self_});
  send_heartbeats(now); // announces the term and starts renewing the lease
  update_acting(now);
  if (!cfg_.guard.enabled || majority() == 1) {
    lease_until_ = timestamp::max();
    update_acting(now);
  }
}

void candidate_core::follow(const term& t, timestamp now) {
  // A preempting candidate that already runs its own election keeps it: a
  // lower leader's heartbeat says nothing the round does not already answer.
  // Ending and restarting the round on every heartbeat (a new Ring token
  // replaces the one under way) meant that a round longer than the heartbeat
  // interval never completed: Ring at n = 64 (128 hops of 1-5 ms) never had a
  // leader after the faults healed (seed 4 of `conclave sim --algorithm ring
  // --preempt --nodes 64 --faults 'random=30,loss=0.05,delay=1ms..5ms'`).
  bool preempting = cfg_.preempt && t.leader < self_ && in_election();
  if (!preempting)
    end_election();
  pre_vote_.active = false;
  leaderless_deadline_.reset();
  abstain_until_ = timestamp{0};
  bool back = suspected_ && *suspected_ == t; // the suspected leader spoke again
  if (back)
    refute_suspicion();
  suspected_.reset();
  refuted_ = false;
  if (leader_ != t.leader && !back)
    ++stats_.leader_changes;
  leader_ = t.leader;
  term_ = t;
  highest_ = std::max(highest_, t);
  detector_.reset(now);
  emit({event_kind::leader_changed, t, t.leader});
  if (cfg_.preempt && t.leader < self_ && !preempting)
    start_election(election_reason::preempt, now);
}

void candidate_core::expect_first_heartbeat_at(timestamp at) {
  if (role_ == role::follower && leader_ != no_node && at > detector_.last_heartbeat())
    detector_.reset(at);
}

void candidate_core::step_down(loss_reason why, timestamp now) {
  if (role_ != role::leader)
    return;
  if (acting_) {
    acting_ = false;
    emit({event_kind::acting_stopped, term_});
  }
  role_ = role::follower;
  leader_ = no_node;
  election_event e{event_kind::lost_leadership, term_};
  e.why = why;
  emit(e);
  leaderless_deadline_ = now + cfg_.election_wait;
}

void candidate_core::update_acting(timestamp now) {
  if (role_ != role::leader)
    return;
  bool should = now < lease_until_;
  if (should && !acting_) {
    acting_ = true;
    emit({event_kind::acting_started, term_});
  } else if (!should && acting_) {
    acting_ = false;
    emit({event_kind::acting_stopped, term_});
  }
  if (cfg_.guard.enabled && majority() > 1 && now >= quorum_deadline())
    step_down(loss_reason::quorum_lost, now); // a minority leader
}

timestamp candidate_core::quorum_deadline() const {
  // A new leader's followers may have promised an earlier leader's lease up to
  // lease + drift before it took over; they cannot renew this one before then.
  // Only a full detector timeout without a renewal after that is a lost quorum
  // (issue 11, defect 2: counting from the takeover made every preempting
  // leader step down before any follower was free to renew its lease).
  // Promises longer than guard.lease show in the denials (busy_for_ns): a
  // leader that hears none counts from guard.lease, so that one cut off in a
  // minority right after it took over steps down as soon as with the fixed
  // lease.
  auto promises_lapse = std::max(
      leader_since_ + cfg_.guard.lease + cfg_.guard.max_clock_drift, denied_until_);
  // Its first renewal comes back a round trip after it is sent: before any
  // ack has measured one, the pre-vote's is the bound this leader knows.
  auto lost = std::max(promises_lapse + takeover_rtt_bound_, renewed_round_sent_)
              + guard_follower_timeout(cfg_, asked_lease_);
  return quorum_excused_ ? std::max(lost, quorum_excused_until_) : lost;
}

void candidate_core::send_heartbeats(timestamp now) {
  auto seq = ++heartbeat_seq_;
  auto& r = rounds_[seq % rounds_.size()];
  // The leader's own vote counts unless it promised another leader's lease.
  bool self_vote = !cfg_.guard.enabled || promised_to_ == self_ || now >= promise_until_;
  // The lease follows the smoothed bound (srtt + 4 x deviation), not the
  // slowest recent ack that spaces the rounds: one follower's stall (a late
  // ack) would otherwise stretch every promise, and so failover, for the next
  // 128 to 256 acks.
  asked_lease_ =
      cfg_.guard.enabled && !rtt_.empty()
          ? guard_lease_for(cfg_, rtt_.timeout(duration{0}, longest_lease(cfg_)))
          : cfg_.guard.lease;
  r = {seq, now, self_vote ? size_t{1} : size_t{0}, asked_lease_, asked_lease_};
  // Members silent for a detector timeout are named in the round, so that an
  // initiator of the next election need not wait for their answers should this
  // leader fail (a stopped higher follower cost a Bully failover its whole
  // answer_timeout). The list is built before the round is sent: a member is
  // named as soon as it is suspected. At most max_silent_named, the highest
  // ids (the ones Bully initiators ask): a round's size stays bounded however
  // many members are down, and naming fewer only makes an election wait.
  heartbeat_msg hb{self_, term_, seq, {}};
  hb.lease_ns = cfg_.guard.enabled ? static_cast<uint64_t>(asked_lease_.count()) : 0;
  for (size_t i = peers_.size(); i-- > 0;) {
    auto& s = status_[i];
    if (!s.down && !s.suspected && now - s.last_heard > cfg_.detector.timeout
        && now - leader_since_ > cfg_.detector.timeout) {
      s.suspected = true;
      emit({event_kind::peer_suspected, term_, peers_[i]});
    }
    if ((s.down || s.suspected) && hb.silent.size() < max_silent_named)
      hb.silent.push_back(peers_[i]);
  }
  std::reverse(hb.silent.begin(), hb.silent.end()); // ascending
  for (auto p : peers_)
    send(p, hb);
  heartbeat_due_ = now + renewal_interval();
  plan_rescue();
}

void candidate_core::plan_rescue() {
  rescue_due_.reset();
  auto& last = rounds_[heartbeat_seq_ % rounds_.size()];
  if (!cfg_.guard.enabled || majority() == 1 || renewed_round_sent_ == timestamp{0}
      || renewed_round_sent_ >= last.sent_at)
    return; // nothing renewed yet (a new leader), or the latest round is renewed
  // The latest round's majority ack is overdue once the round-trip bound has
  // passed: send another then (a retransmission, at most every
  // min_renewal_interval) instead of waiting for the next scheduled round.
  // Not earlier: with round trips longer than the round spacing, several
  // rounds are in flight and the latest one is still expected (a rescue
  // planned from the last renewed round instead fired after every round at a
  // 60 ms round trip: guard_timing_both.a_healthy_network_sends_no_rescue_round).
  auto rescue = last.sent_at + std::max(renewal_bound(), min_renewal_interval(cfg_));
  if (rescue < heartbeat_due_)
    rescue_due_ = rescue;
}

duration candidate_core::renewal_interval() const {
  return guard_renewal_interval(cfg_, renewal_bound());
}

duration candidate_core::renewal_bound() const {
  if (!cfg_.guard.enabled || rtt_.empty())
    return duration{0};
  // srtt + 4 x deviation is no bound on a round trip: with one-way delays of
  // 1-30 ms the deviation term fell after a few ordinary samples, rounds were
  // spaced for a 51 ms round trip, and a round whose acks both took 52 ms came
  // back after the lease it was to extend had lapsed (issue 11, seed 900646
  // of `random=6,loss=0.05,dup=0.05,delay=1ms..30ms --guard`, n = 3: the leader
  // stopped acting after the heal; in 160 fault-free 30 s runs at n = 3 and 5,
  // 6 such gaps; 1 with this floor). So the
  // bound is at least the slowest of the latest 128 to 256 acks: a round trip
  // the network showed recently is expected again.
  auto slowest = std::max(slowest_now_, slowest_before_);
  return std::max(rtt_.timeout(duration{0}, longest_lease(cfg_)), slowest);
}

void candidate_core::on_heartbeat(const heartbeat_msg& m, timestamp now) {
  if (m.t < highest_) {
    ++stats_.stale_rejected;
    emit({event_kind::stale_claim_rejected, m.t, m.from});
    send(m.from, heartbeat_ack_msg{self_, highest_, m.seq, false});
    return;
  }
  if (m.t.leader != m.from)
    return; // only a leader speaks for its term
  if (cfg_.guard.enabled && cfg_.guard.death_proof) {
    // A heartbeat its leader sent before it died, overtaken by the proof of
    // its death (another connection): following or promising it again would
    // undo what the proof released.
    if (auto s = status(m.from); s != nullptr && m.t.incarnation <= s->dead_incarnation) {
      send(m.from, heartbeat_ack_msg{self_, highest_, m.seq, false});
      return;
    }
  }
  accept_claim(m.t, m.from, now);
  if (role_ == role::follower && leader_ == m.from) {
    detector_.heartbeat(now);
    late_grants_ = 0;
    if (auto s = status(m.from))
      s->suspected = false;
    reported_silent_ = m.silent;
    // Sorted and without repeats, whatever the network brought.
    std::sort(reported_silent_.begin(), reported_silent_.end());
    reported_silent_.erase(std::unique(reported_silent_.begin(), reported_silent_.end()),
                           reported_silent_.end());
  }
  // Quorum guard: an ack renews a lease, so it is a promise not to renew anyone
  // else's lease for lease + drift. A follower that recently renewed another
  // leader's lease answers a new leader without granting; together with majority
  // intersection this keeps the acting intervals of two leaders disjoint even when
  // some followers suspect the old leader early (they missed its last round).
  bool grant = true;
  uint64_t busy_for = 0;
  uint64_t promised_ns = 0;
  if (cfg_.guard.enabled) {
    if (m.from != promised_to_ && now < promise_until_) {
      grant = false;
      busy_for = static_cast<uint64_t>((promise_until_ - now).count());
      if (cfg_.guard.death_proof)
        denied_ = m; // granted late if a proof of death ends the promise
    } else {
      auto lease = promise_for(m);
      promise(m, lease, now);
      promised_ns = static_cast<uint64_t>(lease.count());
      denied_.reset(); // granted since: nothing left to grant late
    }
    plan_promise_record(asked_lease(m), now);
  }
  send(m.from, heartbeat_ack_msg{self_, term_, m.seq, grant, busy_for, promised_ns});
}

duration candidate_core::asked_lease(const heartbeat_msg& m) const {
  if (m.lease_ns == 0)
    return cfg_.guard.lease;
  return m.lease_ns > static_cast<uint64_t>(longest_lease(cfg_).count())
             ? longest_lease(cfg_)
             : duration{static_cast<int64_t>(m.lease_ns)};
}

duration candidate_core::promise_for(const heartbeat_msg& m) const {
  return std::min(asked_lease(m), promise_cap());
}

void candidate_core::promise(const heartbeat_msg& m, duration lease, timestamp now) {
  // Never shortens a promise: an earlier ack may have promised longer, and
  // its leader acts on that ack's promise.
  if (promised_to_ != m.from)
    promise_until_ = std::min(promise_until_, now); // the old one has lapsed
  promised_to_ = m.from;
  promised_incarnation_ = m.t.incarnation;
  promise_until_ = std::max(promise_until_, now + lease + cfg_.guard.max_clock_drift);
  promised_lease_ = lease;
  if (lease > cfg_.guard.lease)
    long_promise_until_ = std::max(long_promise_until_, promise_until_);
}

void candidate_core::on_heartbeat_ack(const heartbeat_ack_msg& m, timestamp now) {
  if (m.t > highest_) {
    // Someone knows a newer leader: stop at once, follow it.
    accept_claim(m.t, m.from, now);
    return;
  }
  observe_epoch(m.t.epoch);
  if (role_ != role::leader || m.t != term_)
    return;
  if (!m.accepted) {
    // Quorum guard: the follower still promised an earlier leader's lease. Ask
    // again right after that promise lapses (capped: a promise never lasts
    // longer than lease + drift), not a heartbeat interval later.
    if (cfg_.guard.enabled && m.busy_for_ns > 0) {
      auto cap = longest_lease(cfg_) + cfg_.guard.max_clock_drift;
      auto wait = std::min(duration{static_cast<int64_t>(std::min<uint64_t>(
                               m.busy_for_ns, static_cast<uint64_t>(cap.count())))},
                           cap);
      heartbeat_due_ = std::min(heartbeat_due_, now + wait + duration{1});
      denied_until_ = std::max(denied_until_, now + wait);
    }
    return;
  }
  auto& r = rounds_[m.seq % rounds_.size()];
  if (r.seq != m.seq)
    return; // too old
  // Count each follower once per round: a duplicated ack must not fake a majority.
  auto* ps = status(m.from);
  // An ack that a newer round's ack overtook (reordering) still counts for its
  // own round: dropping it left rounds without a majority and the leader
  // stopped acting while every follower answered (issue 11, `conclave sim
  // --algorithm bully --nodes 4 --seed 66 --guard --faults
  // 'random=6,loss=0.05,dup=0.05,delay=1ms..30ms'`).
  if (ps->acked.see(m.seq) != seq_window::verdict::fresh)
    return; // a copy, or older than any round still counted
  // An ack slower than the detector timeout is from a frozen or overloaded
  // follower (its lease renewal is useless anyway), not a network round trip;
  // one of a round sent before this leader's own stall measures the stall.
  // With an adaptive lease, slower acks count while they are the network's
  // round trip (the first ones measured, or within 3 x the smoothed one).
  auto took = now - r.sent_at;
  bool plausible = took < cfg_.detector.timeout
                   || (took < guard_follower_timeout(cfg_, longest_lease(cfg_))
                       && (rtt_.empty() || took < 3 * rtt_.smoothed()));
  if (plausible && r.sent_at >= stall_ended_) {
    rtt_.sample(now - r.sent_at);
    if (++acks_in_bucket_ > rtt_bucket_size) {
      slowest_before_ = slowest_now_; // the bucket before is forgotten
      slowest_now_ = duration{0};
      acks_in_bucket_ = 1;
    }
    slowest_now_ = std::max(slowest_now_, now - r.sent_at);
    // Quorum guard: a longer round trip brings the next round forward.
    auto& last = rounds_[heartbeat_seq_ % rounds_.size()];
    heartbeat_due_ = std::min(heartbeat_due_, last.sent_at + renewal_interval());
  }
  emit({event_kind::heartbeat_rtt, term_, m.from, election_reason::requested,
        loss_reason::higher_term, now - r.sent_at});
  // The round's lease is the smallest promised by the acks that make its
  // majority: each of them refuses other leaders at least that long.
  auto promised = m.lease_ns == 0
                      ? cfg_.guard.lease
                      : duration{static_cast<int64_t>(std::min<uint64_t>(
                          m.lease_ns, static_cast<uint64_t>(r.lease.count())))};
  r.granted = std::min(r.granted, promised);
  if (++r.acks == majority() && r.sent_at >= renewed_round_sent_) {
    renewed_round_sent_ = r.sent_at;
    quorum_excused_ = false;
    if (cfg_.guard.enabled)
      lease_until_ = std::max(lease_until_, r.sent_at + r.granted);
    plan_rescue();
    update_acting(now);
  }
}

void candidate_core::on_resign(const resign_msg& m, timestamp now) {
  if (m.t != term_ || m.t.leader != m.from || role_ == role::leader)
    return;
  if (auto s = status(m.from))
    s->suspected = true; // keep the resigning one out of the coming election
  leader_lost(election_reason::leader_resigned, now);
}

outcome::result<void, std::string> validate(const election_config& cfg) {
  using namespace std::chrono;
  if (cfg.heartbeat_interval <= duration{0})
    return std::string{"heartbeat interval must be positive"};
  if (cfg.detector.timeout <= cfg.heartbeat_interval)
    return std::string{"detector timeout must be longer than the heartbeat interval"};
  if (cfg.detector.kind == detector_kind::phi && cfg.detector.phi_threshold <= 0)
    return std::string{"phi threshold must be positive"};
  if (cfg.answer_timeout <= duration{0} || cfg.coordinator_timeout <= duration{0}
      || cfg.hop_timeout <= duration{0} || cfg.election_wait <= duration{0})
    return std::string{"election timeouts must be positive"};
  if (cfg.hop_timeout_max < cfg.hop_timeout)
    return std::string{"ring hop timeout maximum must not be below the hop timeout"};
  if (cfg.guard.enabled && cfg.guard.lease <= duration{0})
    return std::string{"quorum guard lease must be positive"};
  if (cfg.guard.enabled && cfg.guard.max_clock_drift < duration{0})
    return std::string{"quorum guard clock drift bound must not be negative"};
  if (cfg.guard.enabled
      && cfg.guard.lease + cfg.guard.max_clock_drift >= cfg.detector.timeout)
    return std::string{"quorum guard lease + clock drift must be shorter than the "
                       "detector timeout (followers would elect while the old "
                       "leader still acts)"};
  if (cfg.guard.enabled && cfg.guard.lease <= cfg.heartbeat_interval)
    return std::string{"quorum guard lease must be longer than the heartbeat interval "
                       "(the lease would lapse between rounds)"};
  if (cfg.guard.enabled && cfg.guard.min_renew_interval <= duration{0})
    return std::string{"quorum guard minimum renewal interval must be positive"};
  if (cfg.guard.enabled
      && cfg.guard.lease - min_renewal_interval(cfg) < min_round_trip_budget)
    return std::string{"quorum guard lease must exceed the shortest renewal interval "
                       "(min of heartbeat interval and guard.min_renew_interval) by at "
                       "least 1ms, the round trip a renewal needs (their difference is "
                       "the largest round trip a leader keeps acting with)"};
  return outcome::success();
}

duration min_renewal_interval(const election_config& cfg) {
  return std::min(cfg.heartbeat_interval, cfg.guard.min_renew_interval);
}

duration guard_lease_for(const election_config& cfg, duration rtt_bound) {
  auto top = std::max(cfg.guard.lease, cfg.guard.lease_max);
  if (!cfg.guard.enabled || rtt_bound <= duration{0})
    return cfg.guard.lease;
  if (rtt_bound >= top / 2)
    return top;
  return std::clamp(2 * rtt_bound, cfg.guard.lease, top);
}

duration guard_follower_timeout(const election_config& cfg, duration promised) {
  if (!cfg.guard.enabled || promised <= cfg.guard.lease)
    return cfg.detector.timeout;
  return std::max(cfg.detector.timeout,
                  promised + cfg.guard.max_clock_drift + cfg.heartbeat_interval);
}

duration guard_renewal_interval(const election_config& cfg, duration rtt_bound) {
  if (!cfg.guard.enabled || rtt_bound <= duration{0})
    return cfg.heartbeat_interval;
  auto wanted = guard_lease_for(cfg, rtt_bound) - rtt_bound;
  return std::clamp(wanted, min_renewal_interval(cfg), cfg.heartbeat_interval);
}

duration guard_round_trip_budget(const election_config& cfg) {
  if (!cfg.guard.enabled)
    return duration::max();
  return std::max(cfg.guard.lease, cfg.guard.lease_max) - min_renewal_interval(cfg);
}

std::string round_trip_warning(const election_config& cfg, duration rtt) {
  auto ms = [](duration d) {
    return std::to_string(
               std::chrono::duration_cast<std::chrono::milliseconds>(d).count())
           + "ms";
  };
  auto budget = guard_round_trip_budget(cfg);
  if (cfg.guard.enabled && rtt * 4 > budget * 3)
    return "round trip " + ms(rtt) + " is close to or above the " + ms(budget)
           + " the quorum guard tolerates (lease - shortest renewal interval): the "
             "leader will stop acting between rounds; raise guard.lease and "
             "detector.timeout together";
  auto slack =
      guard_follower_timeout(cfg, guard_lease_for(cfg, rtt)) - cfg.heartbeat_interval;
  if (rtt > slack)
    return "round trip " + ms(rtt) + " exceeds the " + ms(slack)
           + " of slack the failure detector leaves (detector timeout - heartbeat "
             "interval): expect false suspicions; raise detector.timeout";
  return {};
}

std::string_view to_string(algorithm a) {
  return a == algorithm::bully ? "bully" : "ring";
}

outcome::result<algorithm, std::string> parse_algorithm(std::string_view text) {
  if (text == "bully")
    return algorithm::bully;
  if (text == "ring")
    return algorithm::ring;
  return "unknown algorithm '" + std::string{text} + "' (expected bully or ring)";
}

} // namespace conclave::election
