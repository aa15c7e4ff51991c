// The quorum guard's lease adapts to the measured round trip: a leader asks
// each round for guard_lease_for(its round-trip bound), a follower promises
// exactly what it echoes (at most guard.lease_max), and the leader acts on the
// smallest lease the acks of a majority promised. Pure functions and plain
// calls on one core first, then leaders on the simulated world (virtual time).
#include "protocols/election/candidate_core.hpp"
#include "protocols/election/core_factory.hpp"

#include "tests/support/election_network.hpp"

#include <gtest/gtest.h>

#include <map>

using namespace std::chrono_literals;
using conclave::testing::election_network;
using conclave::testing::fixed_lease;
using conclave::testing::guarded;
using conclave::testing::id;
namespace el = conclave::election;

namespace {

std::vector<el::heartbeat_ack_msg> lease_acks_to(el::candidate_core& c, el::node_id to) {
  std::vector<el::heartbeat_ack_msg> out;
  for (auto& o : c.outbox())
    if (auto a = std::get_if<el::heartbeat_ack_msg>(&o.msg); a && o.to == to)
      out.push_back(*a);
  c.outbox().clear();
  return out;
}

/// Share of `span` (sampled every millisecond) in which any candidate acted.
double anyone_acting(election_network& net, el::duration span) {
  int acting = 0, total = 0;
  for (auto end = net.now() + span; net.now() < end; ++total) {
    net.run_for(1ms);
    bool any = false;
    for (auto i : net.ids())
      any = any || (net.alive(i) && net.node(i).acting());
    acting += any;
  }
  return static_cast<double>(acting) / total;
}

} // namespace

TEST(adaptive_lease, the_lease_follows_the_round_trip_within_bounds) {
  auto cfg = guarded(el::algorithm::bully); // lease 100 ms, lease_max 500 ms
  ASSERT_EQ(cfg.guard.lease_max, 500ms);
  EXPECT_EQ(el::guard_lease_for(cfg, 0ms), 100ms);  // nothing measured
  EXPECT_EQ(el::guard_lease_for(cfg, 20ms), 100ms); // small round trips: unchanged
  EXPECT_EQ(el::guard_lease_for(cfg, 50ms), 100ms);
  EXPECT_EQ(el::guard_lease_for(cfg, 80ms), 160ms);
  EXPECT_EQ(el::guard_lease_for(cfg, 300ms), 500ms); // capped
  EXPECT_EQ(el::guard_renewal_interval(cfg, 20ms), 50ms);
  EXPECT_EQ(el::guard_renewal_interval(cfg, 300ms), 50ms);  // 500 - 300, at most 50
  EXPECT_EQ(el::guard_renewal_interval(cfg, 480ms), 20ms);  // 500 - 480
  EXPECT_EQ(el::guard_follower_timeout(cfg, 100ms), 150ms); // the detector's
  EXPECT_EQ(el::guard_follower_timeout(cfg, 300ms), 360ms); // 300 + 10 + 50
  auto fixed = fixed_lease(cfg);
  EXPECT_EQ(el::guard_lease_for(fixed, 300ms), 100ms);
  EXPECT_EQ(el::guard_renewal_interval(fixed, 80ms), 20ms);
  cfg.guard.lease_max = 50ms; // below the lease: the fixed lease
  EXPECT_EQ(el::guard_lease_for(cfg, 300ms), 100ms);
  EXPECT_TRUE(el::validate(cfg));
}

// A follower promises exactly the lease it echoes, never more than its own
// lease_max, and refuses another leader until that promise has lapsed.
TEST(adaptive_lease, a_follower_promises_what_it_echoes_and_keeps_it) {
  auto cfg = guarded(el::algorithm::bully);
  auto c = el::make_core(id(1), {id(1), id(2), id(3)}, cfg);
  el::timestamp now{0};
  c->start(now, 1);
  now += cfg.guard.lease_max + cfg.guard.max_clock_drift + 1ms; // start promise over
  c->tick(now);
  c->outbox().clear();
  el::term t3{1, id(3), 7};
  el::heartbeat_msg hb{id(3), t3, 1, static_cast<uint64_t>(el::duration{300ms}.count())};
  c->handle(hb, now);
  auto a = lease_acks_to(*c, id(3));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a[0].accepted);
  EXPECT_EQ(a[0].lease_ns, static_cast<uint64_t>(el::duration{300ms}.count()));
  // Its detector waits the promise out (300 + 10 + 50 ms), not 150 ms.
  EXPECT_GE(*c->next_deadline(), now + 360ms);
  // A smaller lease asked later does not shorten the promise already given.
  auto t_first = now;
  now += 10ms;
  c->handle(
      el::heartbeat_msg{id(3), t3, 2, static_cast<uint64_t>(el::duration{100ms}.count())},
      now);
  a = lease_acks_to(*c, id(3));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].lease_ns, static_cast<uint64_t>(el::duration{100ms}.count()));
  // Leader 2 with a higher term: refused until t_first + 300 ms + drift.
  el::term t2{2, id(2), 5};
  now = t_first + 300ms + cfg.guard.max_clock_drift - 1ms;
  c->handle(el::heartbeat_msg{id(2), t2, 1}, now);
  a = lease_acks_to(*c, id(2));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_FALSE(a[0].accepted);
  EXPECT_EQ(a[0].busy_for_ns, static_cast<uint64_t>(el::duration{1ms}.count()));
  now += 1ms;
  c->handle(el::heartbeat_msg{id(2), t2, 2}, now);
  a = lease_acks_to(*c, id(2));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a[0].accepted);
  EXPECT_EQ(a[0].lease_ns,
            static_cast<uint64_t>(el::duration{100ms}.count())); // asked none
  // A lease above lease_max is promised (and echoed) as lease_max only.
  el::term t4{3, id(3), 8};
  now += 1s;
  c->handle(
      el::heartbeat_msg{id(3), t4, 1, static_cast<uint64_t>(el::duration{2s}.count())},
      now);
  a = lease_acks_to(*c, id(3));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a[0].accepted);
  EXPECT_EQ(a[0].lease_ns, static_cast<uint64_t>(cfg.guard.lease_max.count()));
}

// The leader acts on the smallest lease the acks of its majority promised,
// and never longer than it asked.
TEST(adaptive_lease, an_ack_echoing_a_smaller_lease_shortens_acting) {
  auto cfg = guarded(el::algorithm::bully);
  auto c = el::make_core(id(3), {id(1), id(2)}, cfg);
  std::map<uint64_t, std::pair<el::timestamp, uint64_t>> sent; // seq -> when, asked
  uint64_t pre_vote_round = 0;
  auto drain = [&](el::timestamp now) {
    for (auto& o : c->outbox()) {
      if (auto h = std::get_if<el::heartbeat_msg>(&o.msg))
        sent.emplace(h->seq, std::make_pair(now, h->lease_ns));
      if (auto p = std::get_if<el::pre_vote_msg>(&o.msg))
        pre_vote_round = p->round;
    }
    c->outbox().clear();
  };
  el::timestamp now{0};
  c->start(now, 1);
  drain(now);
  while (pre_vote_round == 0) {
    now = *c->next_deadline();
    c->tick(now);
    drain(now);
  }
  for (auto p : {1, 2})
    c->handle(el::pre_vote_reply_msg{id(p), 0, pre_vote_round, true}, now);
  drain(now);
  ASSERT_TRUE(c->is_leader());
  auto t = c->current_term();
  // Past its own start promise, so that its own vote counts.
  while (now < el::timestamp{cfg.guard.lease_max + cfg.guard.max_clock_drift}
         || sent.rbegin()->second.first < now) {
    now = *c->next_deadline();
    c->tick(now);
    drain(now);
  }
  auto [seq, round] = *sent.rbegin();
  auto [at, asked] = round;
  EXPECT_EQ(asked, static_cast<uint64_t>(cfg.guard.lease.count())); // no rtt yet
  now = at + 1ms;
  c->handle(el::heartbeat_ack_msg{id(1), t, seq, true, 0,
                                  static_cast<uint64_t>(el::duration{60ms}.count())},
            now);
  ASSERT_TRUE(c->acting());
  EXPECT_EQ(c->lease_expiry(), at + 60ms); // the majority's smallest promise
  // An echo above what was asked counts as what was asked.
  now = *c->next_deadline();
  c->tick(now);
  drain(now);
  auto [seq2, round2] = *sent.rbegin();
  ASSERT_GT(seq2, seq);
  now = round2.first + 1ms;
  c->handle(el::heartbeat_ack_msg{id(2), t, seq2, true, 0,
                                  static_cast<uint64_t>(el::duration{5s}.count())},
            now);
  EXPECT_EQ(c->lease_expiry(),
            round2.first + el::duration{static_cast<int64_t>(round2.second)});
}

class adaptive_lease_both : public ::testing::TestWithParam<el::algorithm> {};

// A 150 ms round trip is above the fixed 100 ms lease: a guarded leader never
// acts. With the adaptive lease (the default) it acts all the time once the
// round trip is measured.
TEST_P(adaptive_lease_both, a_150ms_round_trip_needs_the_adaptive_lease) {
  {
    election_network net(3, fixed_lease(guarded(GetParam())), 75ms);
    net.start_all();
    net.run_for(3s);
    EXPECT_EQ(anyone_acting(net, 3s), 0.0);
  }
  election_network net(3, guarded(GetParam()), 75ms);
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() != el::no_node; }, 5s));
  net.run_for(2s);
  auto leader = net.agreed_leader();
  ASSERT_NE(leader, el::no_node);
  EXPECT_EQ(anyone_acting(net, 3s), 1.0);
  EXPECT_EQ(net.agreed_leader(), leader);
  EXPECT_EQ(net.node(leader).stats().leader_changes, 1u);
}

INSTANTIATE_TEST_SUITE_P(election, adaptive_lease_both,
                         ::testing::Values(el::algorithm::bully, el::algorithm::ring),
                         [](const auto& info) {
                           return std::string{el::to_string(info.param)};
                         });
