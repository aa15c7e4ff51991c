#include "protocols/election/bully.hpp"

namespace conclave::election {

void bully_core::begin_election(timestamp now) {
  bool asked = false;
  for (auto p : peers()) {
    // A member the last leader named silent is not waited for: when it is a
    // stopped higher follower, asking it cost every failover answer_timeout.
    // If it is alive after all, it follows the winner (or, with preempt, takes
    // over); which id wins never decides safety (terms and the quorum guard do).
    if (p > self_ && !is_suspected(p) && !reported_silent(p)) {
      send(p, election_msg{self_, max_epoch()});
      asked = true;
    }
  }
  if (!asked) {
    win(now);
    return;
  }
  phase_ = phase::awaiting_answers;
  deadline_ = now + cfg_.answer_timeout;
}

void bully_core::win(timestamp now) {
  auto t = take_leadership(now);
  for (auto p : peers())
    if (!is_down(p))
      send(p, coordinator_msg{self_, t});
}

void bully_core::on_algorithm_message(const message& m, timestamp now) {
  if (auto e = std::get_if<election_msg>(&m))
    on_election(*e, now);
  else if (auto a = std::get_if<answer_msg>(&m))
    on_answer(*a, now);
  else if (auto c = std::get_if<coordinator_msg>(&m))
    on_coordinator(*c, now);
  // Ring messages are not ours: a misconfigured peer. Ignored.
}

void bully_core::on_election(const election_msg& m, timestamp now) {
  observe_epoch(m.epoch);
  if (m.from > self_ || abstaining(now))
    return; // elections go upwards only; a resigning leader stays out
  send(m.from, answer_msg{self_, max_epoch()});
  if (is_leader()) {
    send(m.from, coordinator_msg{self_, current_term()});
    return;
  }
  // Classic Bully answers and holds its own election. Without preempt, a member
  // that still trusts its leader only answers: the initiator hears that leader's
  // heartbeats and follows it again, and a healthy leader is not deposed by a
  // higher id that an election would otherwise reach. If the leader is really
  // gone, this member's own detector starts the election soon after. When the
  // initiator is that leader itself (asked to hold an election), nobody would
  // hold it: its election would time out waiting for a coordinator and start
  // again, for ever. Hold it.
  if (!cfg_.preempt && following_live_leader() && leader() != m.from)
    return;
  if (phase_ == phase::idle)
    start_election(election_reason::election_received, now);
}

void bully_core::on_answer(const answer_msg& m, timestamp now) {
  observe_epoch(m.epoch);
  if (phase_ != phase::awaiting_answers || m.from < self_)
    return;
  phase_ = phase::awaiting_coordinator;
  deadline_ = now + cfg_.coordinator_timeout;
}

void bully_core::on_coordinator(const coordinator_msg& m, timestamp now) {
  if (m.t.leader != m.from)
    return;
  accept_claim(m.t, m.from, now);
}

void bully_core::on_algorithm_tick(timestamp now) {
  if (phase_ == phase::idle || now < deadline_)
    return;
  if (phase_ == phase::awaiting_answers) {
    phase_ = phase::idle;
    win(now);
  } else {
    phase_ = phase::idle;
    start_election(election_reason::election_timeout, now);
  }
}

std::optional<timestamp> bully_core::algorithm_deadline() const {
  if (phase_ == phase::idle)
    return std::nullopt;
  return deadline_;
}

} // namespace conclave::election
