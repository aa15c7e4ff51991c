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
using conclave::testing::acks_to;
using conclave::testing::election_network;
using conclave::testing::fixed_lease;
using conclave::testing::guarded;
using conclave::testing::id;
namespace el = conclave::election;

namespace {

uint64_t el_ns(el::duration d) {
  return static_cast<uint64_t>(d.count());
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
  c->use_promise_record(0ms); // a fresh member: nothing recorded
  el::timestamp now{0};
  c->start(now, 1);
  EXPECT_FALSE(c->take_promise_record());
  now += cfg.guard.lease + cfg.guard.max_clock_drift + 1ms; // start promise over
  c->tick(now);
  c->outbox().clear();
  el::term t3{1, id(3), 7};
  // The record holds no more than guard.lease yet: the first ack promises
  // that, and the candidate asks for the record to be raised first.
  c->handle(el::heartbeat_msg{id(3), t3, 1, {}, el_ns(300ms)}, now);
  auto a = acks_to(*c, id(3));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].lease_ns, el_ns(100ms));
  auto want = c->take_promise_record();
  ASSERT_TRUE(want);
  EXPECT_EQ(*want, cfg.guard.lease_max);  // one raise, to the longest lease
  EXPECT_FALSE(c->take_promise_record()); // taken once
  c->promise_recorded(*want, now);
  now += 40ms;
  el::heartbeat_msg hb{id(3), t3, 2, {}, el_ns(300ms)};
  c->handle(hb, now);
  a = acks_to(*c, id(3));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a[0].accepted);
  EXPECT_EQ(a[0].lease_ns, static_cast<uint64_t>(el::duration{300ms}.count()));
  // Its detector waits the promise out (300 + 10 + 50 ms), not 150 ms.
  EXPECT_GE(*c->next_deadline(), now + 360ms);
  // A smaller lease asked later does not shorten the promise already given.
  auto t_first = now;
  now += 10ms;
  c->handle(
      el::heartbeat_msg{
          id(3), t3, 3, {}, static_cast<uint64_t>(el::duration{100ms}.count())},
      now);
  a = acks_to(*c, id(3));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].lease_ns, static_cast<uint64_t>(el::duration{100ms}.count()));
  // Leader 2 with a higher term: refused until t_first + 300 ms + drift.
  el::term t2{2, id(2), 5};
  now = t_first + 300ms + cfg.guard.max_clock_drift - 1ms;
  c->handle(el::heartbeat_msg{id(2), t2, 1}, now);
  a = acks_to(*c, id(2));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_FALSE(a[0].accepted);
  EXPECT_EQ(a[0].busy_for_ns, static_cast<uint64_t>(el::duration{1ms}.count()));
  now += 1ms;
  c->handle(el::heartbeat_msg{id(2), t2, 2}, now);
  a = acks_to(*c, id(2));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a[0].accepted);
  EXPECT_EQ(a[0].lease_ns,
            static_cast<uint64_t>(el::duration{100ms}.count())); // asked none
  // A lease above lease_max is promised (and echoed) as lease_max only.
  el::term t4{3, id(3), 8};
  now += 1s;
  c->handle(
      el::heartbeat_msg{
          id(3), t4, 1, {}, static_cast<uint64_t>(el::duration{2s}.count())},
      now);
  a = acks_to(*c, id(3));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a[0].accepted);
  EXPECT_EQ(a[0].lease_ns, static_cast<uint64_t>(cfg.guard.lease_max.count()));
}

namespace {

/// A follower core past its start promise, with the record given (none: no
/// record kept).
std::unique_ptr<el::candidate_core> follower(const el::election_config& cfg,
                                             std::optional<el::duration> record,
                                             el::timestamp& now) {
  auto c = el::make_core(id(1), {id(2), id(3)}, cfg);
  if (record)
    c->use_promise_record(*record);
  c->start(now, 1);
  now +=
      std::max(record.value_or(0ms), cfg.guard.lease) + cfg.guard.max_clock_drift + 1ms;
  c->tick(now);
  c->outbox().clear();
  return c;
}

/// The lease `c` promises leader 3 (term 1/3) for heartbeat `seq` asking
/// `lease` at `now`; -1 ms if it sent no single ack.
std::chrono::milliseconds promised(el::candidate_core& c, el::timestamp now, uint64_t seq,
                                   el::duration lease) {
  c.handle(el::heartbeat_msg{id(3), el::term{1, id(3), 7}, seq, {}, el_ns(lease)}, now);
  auto a = acks_to(c, id(3));
  if (a.size() != 1)
    return -1ms;
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      el::duration{static_cast<int64_t>(a[0].lease_ns)});
}

} // namespace

// Without a record of its promises, a member never promises more than
// guard.lease (it could not honour a longer one after a restart) and asks for
// no write.
TEST(adaptive_lease, without_a_record_a_follower_promises_only_the_fixed_lease) {
  auto cfg = guarded(el::algorithm::bully);
  el::timestamp now{0};
  auto c = follower(cfg, std::nullopt, now);
  el::term t3{1, id(3), 7};
  for (uint64_t seq = 1; seq <= 5; ++seq, now += 50ms) {
    c->handle(el::heartbeat_msg{id(3), t3, seq, {}, el_ns(400ms)}, now);
    auto a = acks_to(*c, id(3));
    ASSERT_EQ(a.size(), 1u);
    EXPECT_TRUE(a[0].accepted);
    EXPECT_EQ(a[0].lease_ns, el_ns(100ms));
    EXPECT_FALSE(c->take_promise_record());
  }
}

namespace {

/// `c` refuses leader 2's round 1 ms before `until` (busy for that 1 ms) and
/// grants it at `until`.
void expect_refused_until(el::candidate_core& c, el::duration until) {
  el::term t2{4, id(2), 9};
  c.handle(el::heartbeat_msg{id(2), t2, 1}, el::timestamp{until - 1ms});
  auto a = acks_to(c, id(2));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_FALSE(a[0].accepted);
  EXPECT_EQ(a[0].busy_for_ns, el_ns(1ms));
  c.handle(el::heartbeat_msg{id(2), t2, 2}, el::timestamp{until});
  a = acks_to(c, id(2));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a[0].accepted);
}

} // namespace

// A restarted member keeps the promise its record allows: it refuses every
// leader until record + drift after its start, even a record longer than its
// current lease_max; a fresh record (0) keeps the start at guard.lease + drift.
TEST(adaptive_lease, a_restart_keeps_the_promise_its_record_allows) {
  auto cfg = guarded(el::algorithm::bully);
  for (auto [record, refused_until] :
       {std::pair{0ms, 110ms}, std::pair{500ms, 510ms}, std::pair{800ms, 810ms}}) {
    SCOPED_TRACE(record.count());
    auto c = el::make_core(id(1), {id(2), id(3)}, cfg);
    c->use_promise_record(record);
    c->start(el::timestamp{0}, 1);
    c->outbox().clear();
    expect_refused_until(*c, refused_until);
  }
}

// The start promise counts from when the host read the record, not from the
// later start (a node reads it, then waits up to 500 ms to link with its
// peers): nothing was promised after the read. A read time after the start
// counts from the start.
TEST(adaptive_lease, a_restart_counts_its_promise_from_the_records_read) {
  auto cfg = guarded(el::algorithm::bully); // drift 10 ms
  for (auto [read_at, refused_until] :
       {std::pair{el::timestamp{0}, 810ms}, std::pair{el::timestamp{400ms}, 1110ms}}) {
    SCOPED_TRACE(read_at.count());
    auto c = el::make_core(id(1), {id(2), id(3)}, cfg);
    c->use_promise_record(800ms, read_at);
    c->start(el::timestamp{300ms}, 1); // 300 ms after the read, or before it
    c->outbox().clear();
    expect_refused_until(*c, refused_until);
  }
}

// A write of the record that fails leaves promises at what the record held
// before; the candidate asks again after a second, not on every heartbeat.
TEST(adaptive_lease, a_failed_record_write_keeps_promises_at_the_record) {
  auto cfg = guarded(el::algorithm::bully);
  el::timestamp now{0};
  auto c = follower(cfg, 0ms, now);
  uint64_t seq = 0;
  auto ask = [&](el::duration lease) { return promised(*c, now, ++seq, lease); };
  EXPECT_EQ(ask(300ms), 100ms);
  ASSERT_EQ(c->take_promise_record(), cfg.guard.lease_max);
  c->promise_record_failed(now);
  auto failed_at = now;
  for (now += 50ms; now < failed_at + 1s; now += 50ms) {
    EXPECT_EQ(ask(300ms), 100ms);
    EXPECT_FALSE(c->take_promise_record());
  }
  EXPECT_EQ(ask(300ms), 100ms);
  ASSERT_EQ(c->take_promise_record(), cfg.guard.lease_max);
  c->promise_recorded(cfg.guard.lease_max, now);
  now += 50ms;
  EXPECT_EQ(ask(300ms), 300ms);
  // A failed lowering binds too: the record may hold the new value or the old.
  auto d = follower(cfg, 500ms, now);
  std::swap(c, d);
  seq = 0;
  EXPECT_EQ(ask(300ms), 300ms);
  for (auto end = now + 31s; now < end; now += 50ms)
    ask(100ms);
  ASSERT_EQ(c->take_promise_record(), cfg.guard.lease);
  c->promise_record_failed(now);
  now += 50ms;
  EXPECT_EQ(ask(300ms), 100ms);
}

// The record goes back down to guard.lease once no promise above it has run
// for 30 s (so that a restart is fast again); the lowering binds as soon as
// it is asked for, and a longer lease asked later raises the record again.
TEST(adaptive_lease, the_record_is_lowered_once_long_promises_have_lapsed_for_30s) {
  auto cfg = guarded(el::algorithm::bully);
  el::timestamp now{0};
  auto c = follower(cfg, 500ms, now);
  uint64_t seq = 0;
  auto ask = [&](el::duration lease) { return promised(*c, now, ++seq, lease); };
  EXPECT_EQ(ask(300ms), 300ms); // within the record: no write
  EXPECT_FALSE(c->take_promise_record());
  auto lapses = now + 300ms + cfg.guard.max_clock_drift;
  for (now += 50ms; now < lapses + 30s; now += 50ms) {
    EXPECT_EQ(ask(100ms), 100ms);
    ASSERT_FALSE(c->take_promise_record()) << (now - lapses).count();
  }
  EXPECT_EQ(ask(100ms), 100ms);
  ASSERT_EQ(c->take_promise_record(), cfg.guard.lease);
  now += 50ms;
  EXPECT_EQ(ask(300ms), 100ms);           // the lowering binds before it completes
  EXPECT_FALSE(c->take_promise_record()); // one write at a time
  c->promise_recorded(cfg.guard.lease, now);
  now += 50ms;
  EXPECT_EQ(ask(300ms), 100ms);
  ASSERT_EQ(c->take_promise_record(), cfg.guard.lease_max);
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
  while (now < el::timestamp{cfg.guard.lease + cfg.guard.max_clock_drift}
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

// The node's default timing (heartbeat 20 ms, phi with a 90 ms floor, lease
// 60 ms) on a 100 ms one-way link: a new leader's first ack comes back 200 ms
// after its first round, later than its quorum-lost step-down would have
// been. It waits the round trip its pre-vote measured before it counts its
// quorum lost, so it keeps leading and acts once the lease has adapted
// (before, no leader ever acted: each stepped down first).
TEST_P(adaptive_lease_both, a_round_trip_beyond_the_detector_floor_keeps_a_new_leader) {
  auto cfg = guarded(GetParam());
  cfg.heartbeat_interval = 20ms;
  cfg.detector.kind = el::detector_kind::phi;
  cfg.detector.timeout = 90ms;
  cfg.guard.lease = 60ms;
  election_network net(5, cfg, 100ms);
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() != el::no_node; }, 5s));
  net.run_for(3s);
  auto leader = net.agreed_leader();
  ASSERT_NE(leader, el::no_node);
  auto term = net.node(leader).current_term();
  EXPECT_GT(anyone_acting(net, 3s), 0.95);
  EXPECT_EQ(net.agreed_leader(), leader);
  EXPECT_EQ(net.node(leader).current_term(), term); // no step-down, no re-election
}

INSTANTIATE_TEST_SUITE_P(election, adaptive_lease_both,
                         ::testing::Values(el::algorithm::bully, el::algorithm::ring),
                         [](const auto& info) {
                           return std::string{el::to_string(info.param)};
                         });
