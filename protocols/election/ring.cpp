#include "protocols/election/ring.hpp"

#include <algorithm>

namespace conclave::election {

namespace {

node_id initiator_of(const message& m) {
  if (auto e = std::get_if<ring_election_msg>(&m))
    return e->initiator;
  return std::get<ring_coordinator_msg>(m).initiator;
}

void set_hop(message& m, uint64_t hop) {
  if (auto e = std::get_if<ring_election_msg>(&m))
    e->hop = hop;
  else
    std::get<ring_coordinator_msg>(m).hop = hop;
}

} // namespace

duration ring_core::round_timeout() const {
  // Every hop of both rounds may take all its tries (timeouts double per try).
  duration per_hop{0};
  for (unsigned t = 0; t <= cfg_.hop_retries; ++t)
    per_hop += hop_timeout(t);
  return per_hop * 2 * static_cast<int64_t>(members().size());
}

duration ring_core::extinction_window() const {
  // The time the round needs when every hop goes through at the measured
  // round trip: 2n hops (token and announcement) of at most one round trip
  // each. Not 2n hop timeouts: a hop timeout carries 4 deviations of margin,
  // and under heavy loss the acks of retries (measured from the first send)
  // inflate the deviation. At n = 16, 30 % loss (seed 106 of
  // `random=20,loss=0.3,dup=0.1,delay=1ms..20ms`) hop timeouts reached
  // 170-490 ms with a smoothed round trip of 40-85 ms: a member that had
  // joined a round whose token then died swallowed every lower round for
  // 5-15 s, and no round completed within the liveness bound. The least hop
  // timeout bounds it from below, the hop timeout from above.
  auto per_hop = std::clamp(rtt_.smoothed(), cfg_.hop_timeout, hop_timeout(0));
  return per_hop * 2 * static_cast<int64_t>(members().size());
}

void ring_core::sample_round_trip(duration rtt) {
  // An ack of a retry, or one that came after this member gave up, is measured
  // from the first send: it may include a frozen successor's pause (SIGSTOP),
  // not the network. One such sample (1.6 s at n = 7, seed 900123) stretched
  // every hop and round timeout to seconds; clamped to twice the current hop
  // timeout, the estimate still grows (at most doubling per sample) when the
  // network really slowed down. The first sample too (then twice the least hop
  // timeout): seed 900029 of `random=6,loss=0.05,dup=0.05,delay=1ms..30ms`
  // (n = 7), a member's first ack came from a successor resumed after an 84 ms
  // pause; the sample, unclamped, gave a 400 ms hop timeout, and the member's
  // dead round swallowed every lower round for 4 s after the heal (extinction
  // lasts 2n hop timeouts). Starting from 40 ms, a 120 ms round trip is
  // reached within three samples.
  rtt_.sample(std::min(rtt, 2 * hop_timeout(0)));
}

void ring_core::allow_for_announcement(node_id leader, timestamp now) {
  // The announcement reaches the leader after the hops between here and it, and
  // its first heartbeat needs one more: at a 21 ms delay and n = 9 that silence
  // (n hops) exceeded the detector timeout and followers suspected a leader that
  // had not heard yet that it leads.
  const auto& ms = members();
  auto pos = [&](node_id x) {
    return std::lower_bound(ms.begin(), ms.end(), x) - ms.begin();
  };
  auto n = static_cast<int64_t>(ms.size());
  auto hops = ((pos(leader) - pos(self_)) % n + n) % n + 1;
  auto one_way = hop_timeout(0) / 2;
  expect_first_heartbeat_at(now + one_way * hops);
}

duration ring_core::hop_timeout(unsigned tries) const {
  auto cap = std::max(cfg_.hop_timeout_max, cfg_.hop_timeout);
  auto t = rtt_.timeout(cfg_.hop_timeout, cap);
  for (unsigned i = 0; i < tries && t < cap; ++i)
    t *= 2;
  return std::min(t, cap);
}

void ring_core::begin_election(timestamp now) {
  participating_ = self_;
  participating_since_ = now;
  round_started_ = now;
  ++round_;
  auto& r = round_of(self_);
  r = {self_, incarnation_, round_, true, false};
  forward(
      ring_election_msg{
          self_, self_, 0, max_epoch(), {self_}, {incarnation_}, incarnation_, round_},
      now);
}

ring_core::round_seen& ring_core::round_of(node_id initiator) {
  for (auto& r : rounds_seen_)
    if (r.initiator == initiator)
      return r;
  rounds_seen_.push_back({initiator});
  return rounds_seen_.back();
}

void ring_core::end_election() {
  participating_ = no_node;
  round_started_.reset();
}

void ring_core::forward(message m, timestamp now, node_id gave_up) {
  const bool is_election = std::holds_alternative<ring_election_msg>(m);
  const auto initiator = initiator_of(m);
  const auto& ms = members();
  auto self_pos = std::lower_bound(ms.begin(), ms.end(), self_) - ms.begin();
  const auto n = static_cast<std::ptrdiff_t>(ms.size());
  // Members skipped on the way: the transport reported them down, or (up to
  // `gave_up`) they did not ack this very message. A member that is merely
  // suspected (its leader heartbeats stopped, an earlier hop went unacked) is
  // tried: in a ring a member hears only from its neighbours, so a suspicion it
  // never tests would never be lifted, and the leader chosen past it would never
  // be told (issue 11, defect 1).
  std::vector<node_id> skipped;
  bool skipping = gave_up != no_node;
  for (std::ptrdiff_t i = 1; i < n; ++i) {
    auto c = ms[static_cast<size_t>((self_pos + i) % n)];
    bool skip = skipping || is_down(c);
    if (c == gave_up)
      skipping = false;
    if (!skip) {
      auto hop = ++next_hop_;
      set_hop(m, hop);
      send(c, m);
      // A suspected member gets one try, not hop_retries + 1.
      unsigned tries = is_suspected(c) ? cfg_.hop_retries : 0;
      pending_.push_back({hop, c, std::move(m), tries, now + hop_timeout(tries), now});
      return;
    }
    skipped.push_back(c);
    if (c == initiator) {
      // The initiator is gone: whoever must skip it completes its round.
      if (is_election)
        finalize(std::get<ring_election_msg>(m), now, skipped);
      return;
    }
  }
  // Nobody else is alive: the token is back at us.
  if (is_election)
    finalize(std::get<ring_election_msg>(m), now, skipped);
}

void ring_core::finalize(const ring_election_msg& m, timestamp now,
                         const std::vector<node_id>& skipped) {
  // Never choose a member this one could not reach: the announcement would skip
  // it too, and everyone would follow a leader that does not know it leads.
  auto unreachable = [&](node_id x) {
    return is_down(x) || std::find(skipped.begin(), skipped.end(), x) != skipped.end();
  };
  node_id leader = abstaining(now) ? no_node : self_;
  uint64_t incarnation = incarnation_;
  for (size_t i = 0; i < m.alive.size(); ++i) {
    if (m.alive[i] > leader && m.alive[i] != self_ && !unreachable(m.alive[i])) {
      leader = m.alive[i];
      incarnation = i < m.incarnations.size() ? m.incarnations[i] : 0;
    }
  }
  end_election();
  if (leader == no_node)
    return; // only resigning members left; they rejoin after abstaining
  term t{std::max(m.epoch, max_epoch()) + 1, leader, incarnation};
  if (!accept_claim(t, self_, now))
    return;
  announced_ = t;
  allow_for_announcement(t.leader, now);
  forward(ring_coordinator_msg{self_, self_, 0, t, incarnation_}, now);
}

bool ring_core::duplicate(node_id from, uint64_t incarnation, uint64_t hop) {
  // A sender's hops do not arrive in order: a hop blocked by a partition and
  // retried later arrives after the sender's next hop (a token after an
  // announcement). With only the highest hop remembered, the retried token was
  // acked but dropped as a copy, and its round died with every member waiting
  // for it (issue 11, seed 900400 of `random=6,loss=0.05,dup=0.05,
  // delay=1ms..30ms --guard`, n = 7: nobody led for 4 s after the heal). So the
  // 64 hops below the highest are remembered one by one (seq_window).
  for (auto& x : last_hop_from_) {
    if (x.from != from)
      continue;
    if (incarnation < x.incarnation)
      return true; // from an earlier life of the sender
    if (incarnation > x.incarnation) {
      x.incarnation = incarnation;
      x.hops.reset();
    }
    // Too old to tell: the round checks drop a copy.
    return x.hops.see(hop) == seq_window::verdict::copy;
  }
  last_hop_from_.push_back({from, incarnation, {}});
  last_hop_from_.back().hops.see(hop);
  return false;
}

void ring_core::on_algorithm_message(const message& m, timestamp now) {
  if (auto e = std::get_if<ring_election_msg>(&m)) {
    on_election(*e, now);
  } else if (auto c = std::get_if<ring_coordinator_msg>(&m)) {
    on_coordinator(*c, now);
  } else if (auto a = std::get_if<ring_ack_msg>(&m)) {
    on_ack(*a, now);
  }
  // Bully messages are not ours: a misconfigured peer. Ignored.
}

void ring_core::on_ack(const ring_ack_msg& a, timestamp now) {
  // The round trip counts from the first send: an ack of a retry overestimates
  // it, which errs towards longer timeouts (Karn's rule would leave no sample at
  // all when every first try times out, and the timeout would never adapt).
  auto i = std::find_if(pending_.begin(), pending_.end(), [&](const pending_hop& p) {
    return p.hop == a.hop && p.target == a.from;
  });
  if (i != pending_.end()) {
    if (i->tries == 0)
      late_sampled_ = false; // an ack in time: the next late one counts again
    // A hop sent before this member's own stall (its timers fired late) is
    // acked after it: that round trip measures the stall, not the network.
    // Seed 900547 of `random=6,loss=0.05,dup=0.05,delay=1ms..30ms --guard`
    // (n = 3): a member frozen for 400 ms took the ack of a hop sent just
    // before as its first round trip (nothing clamps the first), its hop
    // timeout grew to 1.2 s and its round timeout to 22 s, and its dead round
    // swallowed every lower round until the run ended.
    if (i->sent_at >= stall_ended())
      sample_round_trip(now - i->sent_at);
    pending_.erase(i);
    return;
  }
  auto g = std::find_if(given_up_.begin(), given_up_.end(), [&](const given_up& x) {
    return x.hop == a.hop && x.target == a.from;
  });
  if (g != given_up_.end()) {
    // Just too late this time; not next time. An ack far later than the waits
    // tells of a frozen or overloaded successor, not of the network, and would
    // stretch every timeout: it is left out.
    auto rtt = now - g->sent_at;
    // A successor resumed after a pause acks every hop it missed at once: of
    // such late acks only the first counts until an ack comes in time.
    if (rtt <= 4 * hop_timeout(cfg_.hop_retries) && (rtt_.empty() || !late_sampled_)
        && g->sent_at >= stall_ended()) {
      sample_round_trip(rtt);
      late_sampled_ = true;
    }
    given_up_.erase(g);
  }
}

void ring_core::on_election(const ring_election_msg& m, timestamp now) {
  send(m.from, ring_ack_msg{self_, m.hop});
  if (duplicate(m.from, m.from_incarnation, m.hop))
    return;
  if ((is_leader() || following_live_leader()) && m.epoch < current_term().epoch) {
    // A round begun before the current term was chosen: stale, drop it. Its
    // initiator waits for it until its round timeout, and meanwhile drops every
    // lower initiator's round (extinction); if it is the leader the term names
    // (it missed the announcement), nobody leads until then. Tell it the term
    // (issue 11, defect 1, seed 212: a 2.7 s round timeout outlasted the
    // liveness bound).
    if (m.initiator != self_)
      tell_term(m.initiator);
    return;
  }
  // One round travels as one token: a copy (a hop resent to a slow successor
  // that was then skipped, or duplicated by the network) is dropped here, so a
  // round costs at most one forward and one completion per member.
  auto inc = m.incarnations.empty() ? 0 : m.incarnations.front();
  auto& r = round_of(m.initiator);
  if (std::make_pair(inc, m.round) < std::make_pair(r.incarnation, r.round))
    return; // an older round of this initiator
  if (std::make_pair(inc, m.round) > std::make_pair(r.incarnation, r.round))
    r = {m.initiator, inc, m.round, false, false};
  observe_epoch(m.epoch);
  if (m.initiator == self_
      || std::find(m.alive.begin(), m.alive.end(), self_) != m.alive.end()) {
    if (r.finalized)
      return;
    if (m.initiator == self_ && (inc != incarnation_ || m.round != round_))
      return; // an earlier round of this member: a later one replaced it
    r.finalized = true;
    finalize(m, now, {});
    return;
  }
  if (r.forwarded)
    return;
  // Extinction: a higher initiator's round is under way, and this member joined
  // it recently. Only for extinction_window(): a round whose token was lost
  // (its hops acked, then dropped by a partition or a crash) would otherwise
  // swallow every lower round until its round timeout (seconds), and each
  // member still in some dead round blocks the next (issue 11, seed 900808:
  // no leader for 3 s after the faults healed).
  bool fresh =
      participating_ != no_node && now < participating_since_ + extinction_window();
  if (fresh && m.initiator < participating_)
    return;
  r.forwarded = true;
  if (!fresh || m.initiator >= participating_) {
    participating_ = m.initiator;
    participating_since_ = now;
  }
  if (!round_started_)
    round_started_ = now;
  ring_election_msg next = m;
  next.from = self_;
  next.from_incarnation = incarnation_;
  if (!abstaining(now)) {
    next.alive.push_back(self_);
    next.incarnations.push_back(incarnation_);
  }
  next.epoch = std::max(next.epoch, max_epoch());
  forward(std::move(next), now);
}

void ring_core::tell_term(node_id to) {
  // Best effort, not a ring hop: no ack awaited (the round timeout covers a loss).
  // The initiator field names this member, so that if the receiver passes the
  // announcement on, it ends here.
  send(to, ring_coordinator_msg{self_, self_, ++next_hop_, current_term(), incarnation_});
}

void ring_core::on_coordinator(const ring_coordinator_msg& m, timestamp now) {
  send(m.from, ring_ack_msg{self_, m.hop});
  if (duplicate(m.from, m.from_incarnation, m.hop) || m.initiator == self_)
    return; // a duplicate, or the announcement went all the way round
  if (announced_ == m.t)
    return; // a copy of an announcement this member already passed on
  if (!accept_claim(m.t, m.from, now))
    return; // stale: stop spreading it
  announced_ = m.t;
  allow_for_announcement(m.t.leader, now);
  ring_coordinator_msg next = m;
  next.from = self_;
  next.from_incarnation = incarnation_;
  forward(std::move(next), now);
}

void ring_core::on_algorithm_tick(timestamp now) {
  // Retry or skip silent successors. forward() may append to pending_.
  std::vector<pending_hop> due;
  for (auto i = pending_.begin(); i != pending_.end();) {
    if (i->deadline <= now) {
      due.push_back(std::move(*i));
      i = pending_.erase(i);
    } else {
      ++i;
    }
  }
  for (auto& p : due) {
    if (p.tries < cfg_.hop_retries && !is_down(p.target)) {
      send(p.target, p.msg);
      p.tries += 1;
      p.deadline = now + hop_timeout(p.tries);
      pending_.push_back(std::move(p));
    } else {
      mark_suspected(p.target);
      if (given_up_.size() >= 16)
        given_up_.erase(given_up_.begin());
      given_up_.push_back({p.hop, p.target, p.sent_at});
      forward(std::move(p.msg), now, p.target);
    }
  }
  if (round_started_ && now >= *round_started_ + round_timeout()) {
    end_election();
    // A follower that only passed on a round another path settled (it
    // already knew the announced term, so no announcement ended its part)
    // keeps its leader: its detector watches that leader. Electing here
    // deposed a healthy leader seconds after the faults healed (seed 284 of
    // `--algorithm ring --nodes 7 --faults 'random=5,loss=0.3' --guard`).
    bool following =
        !is_leader() && leader() != no_node && !(cfg_.preempt && leader() < self_);
    if (!following)
      start_election(election_reason::election_timeout, now);
  }
}

void ring_core::on_peer_down_hook(node_id p, timestamp now) {
  std::vector<pending_hop> lost;
  for (auto i = pending_.begin(); i != pending_.end();) {
    if (i->target == p) {
      lost.push_back(std::move(*i));
      i = pending_.erase(i);
    } else {
      ++i;
    }
  }
  for (auto& h : lost)
    forward(std::move(h.msg), now, p);
}

std::optional<timestamp> ring_core::algorithm_deadline() const {
  std::optional<timestamp> result;
  if (round_started_)
    result = *round_started_ + round_timeout(); // grows as round trips are measured
  for (auto& p : pending_)
    if (!result || p.deadline < *result)
      result = p.deadline;
  return result;
}

} // namespace conclave::election
