// Behaviour shared by both algorithms: the quorum guard, participants, fencing of
// a paused leader, shutdown, configuration checks.
#include "protocols/election/candidate_core.hpp"

#include "tests/support/election_network.hpp"

#include <gtest/gtest.h>

#include <map>

#include <algorithm>

#include <random>

using namespace std::chrono_literals;
using conclave::testing::election_network;
using conclave::testing::fixed_lease;
using conclave::testing::guarded;
using conclave::testing::id;
namespace el = conclave::election;

namespace {

size_t acting_count(election_network& net) {
  size_t n = 0;
  for (auto i : net.ids())
    n += net.alive(i) && net.node(i).acting();
  return n;
}

} // namespace

class both_algorithms : public ::testing::TestWithParam<el::algorithm> {};

TEST_P(both_algorithms, guarded_leader_acts_only_after_a_majority_acknowledged) {
  election_network net(5, guarded(GetParam()));
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.node(5).is_leader(); }, 3s));
  EXPECT_FALSE(net.node(5).acting()); // heartbeats sent, no ack back yet
  // Every start promised lease_max + drift to no one (a crash may hide a
  // promise): the first leader acts once those lapse, one round later at most.
  auto cfg = guarded(GetParam());
  auto lapse = el::timestamp{cfg.guard.lease_max + cfg.guard.max_clock_drift};
  ASSERT_TRUE(net.run_until([&] { return net.node(5).acting(); },
                            lapse - net.now() + cfg.heartbeat_interval + 10ms));
}

TEST_P(both_algorithms, minority_leader_steps_down_under_the_quorum_guard) {
  election_network net(5, guarded(GetParam()));
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 3s));
  net.partition({{id(1), id(2), id(3)}, {id(4), id(5)}});
  bool overlap = false;
  auto both = [&] {
    overlap |= acting_count(net) > 1;
    return net.node(3).acting() && !net.node(5).is_leader();
  };
  ASSERT_TRUE(net.run_until(both, 3s));
  EXPECT_FALSE(overlap);
  bool quorum_lost = false;
  for (auto& e : net.events(id(5)))
    quorum_lost |= e.kind == el::event_kind::lost_leadership
                   && e.why == el::loss_reason::quorum_lost;
  EXPECT_TRUE(quorum_lost);
  // The minority keeps trying but never acts.
  for (int i = 0; i < 300; ++i) {
    net.run_for(10ms);
    EXPECT_FALSE(net.node(4).acting() || net.node(5).acting());
    EXPECT_LE(acting_count(net), 1u);
  }
  net.heal();
  ASSERT_TRUE(net.run_until(
      [&] {
        overlap |= acting_count(net) > 1;
        return net.agreed_leader() != el::no_node;
      },
      3s));
  EXPECT_FALSE(overlap);
}

TEST_P(both_algorithms, without_the_guard_a_partition_yields_two_leaders) {
  el::election_config cfg;
  cfg.algo = GetParam();
  election_network net(5, cfg);
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 3s));
  net.partition({{id(1), id(2), id(3)}, {id(4), id(5)}});
  ASSERT_TRUE(net.run_until([&] { return net.node(3).is_leader(); }, 3s));
  EXPECT_TRUE(net.node(5).acting()); // split brain: the classic algorithms' finding
  net.heal();
  ASSERT_TRUE(net.run_until([&] { return net.leaders().size() == 1; }, 3s));
}

TEST_P(both_algorithms, quorum_guard_never_lets_two_candidates_act_at_once) {
  // Random partitions, crashes and restarts (kind 2; kind 3 is a quiet
  // phase); the invariant is checked after every single event.
  expect_one_acting_under_random_faults(
      guarded(GetParam()), 4,
      [](election_network& net, std::mt19937_64& rng, uint32_t kind, el::node_id victim) {
        if (kind != 2)
          return;
        if (net.alive(victim))
          net.crash(victim, rng() % 2 == 0);
        else
          net.restart(victim);
      },
      acting_count);
}

TEST_P(both_algorithms, a_single_candidate_leads_itself) {
  election_network net(1, guarded(GetParam()));
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(1); }, 1s));
  EXPECT_TRUE(net.node(1).acting());
}

TEST_P(both_algorithms, a_single_guarded_leader_lets_time_move_on) {
  // Alone, a leader once armed its timer for the quorum deadline, which no
  // one renews and nothing handles: due at once, again and again, at one
  // instant (in a process, a core spinning on timer messages).
  election_network net(1, guarded(GetParam()));
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.node(1).acting(); }, 1s));
  size_t steps = 0;
  net.run_until([&] { return ++steps > 100000; }, 1s);
  // A second of heartbeat rounds is a few hundred events.
  EXPECT_LE(steps, 1000u);
  EXPECT_TRUE(net.node(1).acting());
}

TEST_P(both_algorithms, stop_resigns_a_leader_and_ignores_later_input) {
  el::election_config cfg;
  cfg.algo = GetParam();
  election_network net(3, cfg);
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(3); }, 3s));
  net.node(3).stop(net.now());
  EXPECT_FALSE(net.node(3).is_leader());
  EXPECT_FALSE(net.node(3).next_deadline().has_value());
  net.run_for(0ms);        // the resign messages leave
  net.crash(id(3), false); // gone from the network too
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(2); }, 100ms));
}

TEST_P(both_algorithms, a_leader_told_of_a_recorded_epoch_leads_above_it) {
  // A store fencing writes by term recorded epoch E + 5 for an earlier leader
  // (this group restarted without memory): the leader takes a higher term, its
  // followers adopt it, and it acts again.
  election_network net(3, guarded(GetParam()));
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(3); }, 3s));
  auto before = net.node(3).current_term();
  auto recorded = before.epoch + 5;
  net.node(3).observe_external_epoch(recorded, net.now());
  EXPECT_TRUE(net.node(3).is_leader());
  auto after = net.node(3).current_term();
  EXPECT_GT(after.epoch, recorded);
  EXPECT_EQ(after.leader, id(3));
  ASSERT_TRUE(net.run_until(
      [&] {
        return net.agreed_leader() == id(3) && net.node(1).current_term() == after
               && net.node(2).current_term() == after;
      },
      1s));
  bool announced = false;
  for (auto& e : net.events(id(3)))
    announced |= e.kind == el::event_kind::became_leader && e.t == after;
  EXPECT_TRUE(announced);
}

TEST_P(both_algorithms, a_follower_told_of_a_recorded_epoch_elects_above_it_later) {
  el::election_config cfg;
  cfg.algo = GetParam();
  election_network net(3, cfg);
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(3); }, 3s));
  auto leader_term = net.node(3).current_term();
  auto recorded = leader_term.epoch + 40;
  net.node(2).observe_external_epoch(recorded, net.now());
  EXPECT_FALSE(net.node(2).is_leader()); // a follower only remembers it
  EXPECT_EQ(net.node(2).current_term(), leader_term);
  net.crash(id(3));
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(2); }, 3s));
  EXPECT_GT(net.node(2).current_term().epoch, recorded);
}

INSTANTIATE_TEST_SUITE_P(election, both_algorithms,
                         ::testing::Values(el::algorithm::bully, el::algorithm::ring),
                         [](const auto& info) {
                           return std::string{el::to_string(info.param)};
                         });

TEST(candidate_core, leader_lists_silent_followers_as_suspected_and_trusts_them_again) {
  election_network net(4, el::election_config{});
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(4); }, 3s));
  net.partition({{id(1), id(2), id(4)}, {id(3)}});
  net.run_for(400ms);
  auto state_of = [&](uint64_t who) {
    for (auto& p : net.node(4).participants(net.now()))
      if (p.id == id(who))
        return p.state;
    return el::peer_state::down;
  };
  EXPECT_EQ(state_of(3), el::peer_state::suspected);
  EXPECT_EQ(state_of(1), el::peer_state::alive);
  // The silence is visible: 3 was last heard about 400 ms ago, 1 within a
  // heartbeat round, the leader itself now.
  auto heard = [&](uint64_t who) {
    for (auto& p : net.node(4).participants(net.now()))
      if (p.id == id(who))
        return net.now() - p.last_heard;
    return el::duration::max();
  };
  EXPECT_GE(heard(3), 300ms);
  EXPECT_LE(heard(1), el::election_config{}.detector.timeout);
  EXPECT_EQ(heard(4), el::duration::zero());
  net.heal();
  net.run_for(200ms);
  EXPECT_EQ(state_of(3), el::peer_state::alive);
}

TEST(candidate_core, peer_down_marks_a_participant_down) {
  election_network net(3, el::election_config{});
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(3); }, 3s));
  net.notify_down(id(3), id(1));
  auto parts = net.node(3).participants(net.now());
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].id, id(1));
  EXPECT_EQ(parts[0].state, el::peer_state::down);
}

// A peer's status is found by index when ids are dense (1..n) and by search
// otherwise: either way it must be that peer's, wherever the own id lies.
TEST(candidate_core, peer_status_is_found_by_id_in_dense_and_sparse_groups) {
  struct group {
    uint64_t self;
    std::vector<uint64_t> peers;
  };
  for (auto& g : std::vector<group>{{7, {2, 5, 9, 12}},
                                    {1, {2, 3, 4}},
                                    {4, {1, 2, 3}},
                                    {2, {1, 3, 4}},
                                    {3, {4, 5, 6}},
                                    {5, {1, 2, 3, 9, 10}},
                                    {6, {1, 2, 3, 4, 5, 7, 8}}}) {
    std::vector<el::node_id> peers;
    for (auto p : g.peers)
      peers.push_back(id(p));
    auto c = el::make_core(id(g.self), peers, el::election_config{});
    c->start(el::timestamp{0}, 1);
    for (size_t k = 0; k < g.peers.size(); ++k) {
      c->peer_down(id(g.peers[k]), el::timestamp{0});
      for (auto& p : c->participants(el::timestamp{0})) {
        if (p.id == id(g.self))
          continue;
        auto pos =
            std::find(g.peers.begin(), g.peers.end(), p.id.value) - g.peers.begin();
        EXPECT_EQ(p.state == el::peer_state::down, static_cast<size_t>(pos) <= k)
            << "self " << g.self << ", peer " << p.id.value << " after " << k + 1
            << " down";
      }
    }
  }
}

TEST(candidate_core, validate_rejects_a_lease_as_long_as_the_detector_timeout) {
  el::election_config cfg;
  cfg.guard.enabled = true;
  cfg.guard.lease = 145ms;
  cfg.guard.max_clock_drift = 10ms;
  cfg.detector.timeout = 150ms;
  auto r = el::validate(cfg);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("lease"), std::string::npos);
  cfg.guard.lease = 100ms;
  EXPECT_TRUE(el::validate(cfg));
}

TEST(candidate_core, validate_checks_every_relation_the_quorum_guard_needs) {
  el::election_config ok;
  ok.guard.enabled = true;
  ASSERT_TRUE(el::validate(ok)) << el::validate(ok).error();
  auto rejects = [&](auto change, const char* word) {
    auto cfg = ok;
    change(cfg);
    auto r = el::validate(cfg);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().find(word), std::string::npos) << r.error();
  };
  rejects([](el::election_config& c) { c.guard.lease = 0ms; }, "lease");
  rejects([](el::election_config& c) { c.guard.max_clock_drift = -1ms; }, "drift");
  rejects([](el::election_config& c) { c.guard.lease = 50ms; }, "heartbeat interval");
  rejects(
      [](el::election_config& c) {
        c.heartbeat_interval = 99500us;
        c.guard.min_renew_interval = 99500us;
      },
      "round trip");
  rejects([](el::election_config& c) { c.guard.min_renew_interval = 0ms; }, "renewal");
  rejects([](el::election_config& c) { c.detector.timeout = 110ms; }, "detector");
}

TEST(candidate_core, validate_rejects_a_detector_faster_than_heartbeats) {
  el::election_config cfg;
  cfg.heartbeat_interval = 200ms;
  cfg.detector.timeout = 150ms;
  EXPECT_FALSE(el::validate(cfg));
}

TEST(candidate_core, parse_algorithm_names_the_bad_value) {
  EXPECT_EQ(el::parse_algorithm("ring").value(), el::algorithm::ring);
  auto r = el::parse_algorithm("raft");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("raft"), std::string::npos);
}

TEST(candidate_core, a_follower_whose_timer_fires_late_does_not_blame_the_leader) {
  // A frozen follower (SIGSTOP) resumes and its detector timer fires long after its
  // time, before the leader's queued heartbeats are read: the silence was its own.
  election_network net(3, el::election_config{});
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(3); }, 3s));
  auto late = *net.node(1).next_deadline() + 1s;
  net.node(1).tick(late);
  EXPECT_EQ(net.node(1).leader(), id(3));
  EXPECT_EQ(net.node(1).stats().elections_started, 1u); // only the first election
  // On time, the same silence is suspicion.
  auto on_time = *net.node(2).next_deadline();
  net.node(2).tick(on_time);
  EXPECT_NE(net.node(2).leader(), id(3));
}

// Issue 11, defect 2 (`conclave sim --algorithm bully --nodes 5 --guard --preempt`):
// a leader that takes over while followers still promise an earlier leader's
// lease (lease + drift) must wait those promises out instead of stepping down a
// detector timeout after its takeover, and must ask again when they lapse.
TEST_P(both_algorithms, guarded_preempting_leader_acts_once_old_promises_lapse) {
  auto cfg = guarded(GetParam());
  cfg.preempt = true;
  election_network net(5, cfg);
  net.start_all(); // every start promises lease_max + drift: a crash may hide one
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 1s));
  // Acting one heartbeat round at most after the start promises lapsed.
  EXPECT_LE(net.now(), el::timestamp{cfg.guard.lease_max + cfg.guard.max_clock_drift
                                     + cfg.heartbeat_interval});
  net.run_for(2s);
  EXPECT_EQ(net.agreed_leader(), id(5));
  for (auto& e : net.events(id(5)))
    EXPECT_NE(e.kind, el::event_kind::lost_leadership);
}

TEST_P(both_algorithms, guarded_takeover_by_a_rejoining_higher_id_keeps_one_leader) {
  auto cfg = guarded(GetParam());
  cfg.preempt = true;
  election_network net(4, cfg);
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(4); }, 1s));
  net.crash(id(4));
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(3); }, 1s));
  net.restart(id(4)); // elects at once while 1 and 2 promised 3's lease
  bool overlap = false;
  ASSERT_TRUE(net.run_until(
      [&] {
        overlap |= acting_count(net) > 1;
        return net.agreed_leader() == id(4);
      },
      1s));
  EXPECT_FALSE(overlap);
  net.run_for(1s);
  EXPECT_EQ(net.agreed_leader(), id(4));
}

// Issue 15: the late-timer heuristic gave the leader a fresh timeout whenever the
// follower's timer fired late; a host whose timers always fire late (starved)
// never suspected a dead leader.
TEST(candidate_core, timers_that_always_fire_late_still_end_in_suspicion) {
  election_network net(3, el::election_config{});
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(3); }, 3s));
  net.crash(id(3), /*notify=*/false); // silent: only the detector can tell
  auto& follower = net.node(1);
  for (int i = 0; i < 5 && follower.leader() == id(3); ++i)
    follower.tick(*follower.next_deadline() + 1s); // every firing a second late
  EXPECT_NE(follower.leader(), id(3));
}

// Issue 11, defect 4: with the guard, a round trip above lease - the shortest
// renewal interval (90 ms by default) leaves gaps in acting. The envelope is
// computed and a measured round trip near it is warned about.
TEST(candidate_core, round_trips_near_the_guard_envelope_are_warned_about) {
  el::election_config cfg;
  EXPECT_EQ(el::guard_round_trip_budget(cfg), el::duration::max());
  EXPECT_TRUE(el::round_trip_warning(cfg, 40ms).empty());
  EXPECT_NE(el::round_trip_warning(cfg, 120ms).find("detector"), std::string::npos);
  cfg.guard.enabled = true;
  EXPECT_EQ(el::guard_round_trip_budget(cfg), 490ms);     // lease_max - 10 ms
  EXPECT_TRUE(el::round_trip_warning(cfg, 70ms).empty()); // the lease adapts
  cfg = fixed_lease(cfg);
  EXPECT_EQ(el::guard_round_trip_budget(cfg), 90ms);
  EXPECT_TRUE(el::round_trip_warning(cfg, 60ms).empty());
  EXPECT_NE(el::round_trip_warning(cfg, 70ms).find("quorum guard"), std::string::npos);
}

TEST(candidate_core, a_guarded_leader_measures_the_round_trip_it_is_judged_by) {
  election_network net(3, guarded(el::algorithm::bully), 40ms); // 80 ms round trip
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.node(3).is_leader(); }, 3s));
  net.run_for(1s);
  auto rtt = net.node(3).round_trips().smoothed();
  EXPECT_EQ(rtt, 80ms);
  EXPECT_TRUE(el::round_trip_warning(net.node(3).config(), rtt).empty()); // adapts
  EXPECT_FALSE(el::round_trip_warning(fixed_lease(net.node(3).config()), rtt).empty());
}

// -- pre-vote (issue 12) ----------------------------------------------------------
// Plain calls on one core: what it sends, when it raises an epoch.

namespace {

template <class T>
size_t count_sent(el::candidate_core& c) {
  size_t n = 0;
  for (auto& o : c.outbox())
    n += std::holds_alternative<T>(o.msg);
  return n;
}

/// Election-round messages of either algorithm (pre-votes excluded).
size_t election_messages(el::candidate_core& c) {
  return count_sent<el::election_msg>(c) + count_sent<el::ring_election_msg>(c)
         + count_sent<el::coordinator_msg>(c) + count_sent<el::ring_coordinator_msg>(c);
}

/// Core `self` of members 1..n following leader `leader` (term epoch 4), then
/// `detector.timeout` later suspecting it. Returns the time of suspicion.
el::timestamp follow_then_suspect(el::candidate_core& c, uint64_t leader) {
  c.start(el::timestamp{0}, 1);
  c.handle(el::heartbeat_msg{id(leader), {4, id(leader), 1}, 1}, el::timestamp{1ms});
  EXPECT_EQ(c.leader(), id(leader));
  c.outbox().clear();
  auto t = el::timestamp{1ms} + c.config().detector.timeout;
  c.tick(t);
  return t;
}

} // namespace

TEST_P(both_algorithms, a_candidate_without_a_majority_of_grants_raises_no_epoch) {
  // Node 1 of 5 is cut off: its leader 5 falls silent, nobody answers.
  auto c = el::make_core(id(1), {id(2), id(3), id(4), id(5)}, guarded(GetParam()));
  auto t = follow_then_suspect(*c, 5);
  EXPECT_EQ(count_sent<el::pre_vote_msg>(*c), 4u);
  EXPECT_EQ(election_messages(*c), 0u);
  // Ten seconds of silence, the timer firing whenever the core asks.
  auto end = t + 10s;
  uint64_t round = 0;
  while (auto due = c->next_deadline()) {
    if (*due > end)
      break;
    c->outbox().clear();
    c->tick(*due);
    ASSERT_EQ(election_messages(*c), 0u) << "an election ran without a majority";
    for (auto& o : c->outbox())
      if (auto p = std::get_if<el::pre_vote_msg>(&o.msg))
        round = p->round;
  }
  EXPECT_FALSE(c->is_leader());
  EXPECT_EQ(c->current_term().epoch, 4u);
  EXPECT_EQ(c->stats().elections_started, 0u);
  // Failed rounds double the next window (election_wait, 2x, 4x ...): about
  // log2(10 s / election_wait) rounds in ten seconds, and none raised an epoch.
  EXPECT_GE(c->stats().pre_votes_failed, 5u);
  // A grant from one peer (2 of 5 with itself) is no majority either.
  ASSERT_GE(round, 5u);
  c->handle(el::pre_vote_reply_msg{id(2), 4, round, true}, end);
  EXPECT_FALSE(c->is_leader());
  EXPECT_EQ(c->stats().elections_started, 0u);
}

// Issue 11: after a long partition in which every candidate was alone
// (`partition@500ms-6s:1|2|3|4|5 --guard`, n = 5), every pre-vote window had
// doubled to seconds and nobody asked again until one ended: no leader for
// more than 2 s after the heal, with Bully and with Ring. The request now goes
// again every election_wait within a window, to the peers that have not
// granted; the window still doubles, so slow replies still count.
TEST_P(both_algorithms,
       a_pre_vote_is_asked_again_every_election_wait_within_a_long_window) {
  auto c = el::make_core(id(1), {id(2), id(3), id(4), id(5)}, guarded(GetParam()));
  auto t = follow_then_suspect(*c, 5);
  auto wait = c->config().election_wait;
  auto last_ask = t;
  el::duration longest_silence{0};
  uint64_t round = 0;
  auto end = t + 5s;
  while (auto due = c->next_deadline()) {
    if (*due > end)
      break;
    c->outbox().clear();
    c->tick(*due);
    for (auto& o : c->outbox()) {
      if (auto p = std::get_if<el::pre_vote_msg>(&o.msg)) {
        longest_silence = std::max(longest_silence, *due - last_ask);
        last_ask = *due;
        round = p->round;
      }
    }
  }
  EXPECT_GE(c->stats().pre_votes_failed, 4u); // the windows did grow
  EXPECT_LE(longest_silence, wait) << "a peer that comes back waits for a long window";
  // The faults heal: two peers grant the request they got last. An election
  // opens at once, not when the window ends.
  c->outbox().clear();
  c->handle(el::pre_vote_reply_msg{id(2), 4, round, true}, last_ask + 2ms);
  c->handle(el::pre_vote_reply_msg{id(3), 4, round, true}, last_ask + 2ms);
  EXPECT_EQ(c->stats().elections_started, 1u);
  EXPECT_GT(election_messages(*c) + (c->is_leader() ? 1u : 0u), 0u);
}

TEST(pre_vote, a_majority_of_grants_opens_an_election_above_the_epochs_heard) {
  // Bully, highest id: with grants from 1 and 2 (3 of 5) it wins at once, in a
  // term above the highest epoch a reply reported.
  auto c =
      el::make_core(id(5), {id(1), id(2), id(3), id(4)}, guarded(el::algorithm::bully));
  auto t = follow_then_suspect(*c, 4);
  auto round = std::get<el::pre_vote_msg>(c->outbox().front().msg).round;
  c->outbox().clear();
  c->handle(el::pre_vote_reply_msg{id(1), 9, round, true}, t + 1ms);
  EXPECT_FALSE(c->is_leader());
  c->handle(el::pre_vote_reply_msg{id(1), 9, round, true}, t + 1ms); // duplicate
  EXPECT_FALSE(c->is_leader()) << "a duplicated grant counted twice";
  c->handle(el::pre_vote_reply_msg{id(3), 4, round, false}, t + 1ms); // a refusal
  EXPECT_FALSE(c->is_leader());
  c->handle(el::pre_vote_reply_msg{id(2), 4, round + 1, true}, t + 1ms); // other round
  EXPECT_FALSE(c->is_leader());
  c->handle(el::pre_vote_reply_msg{id(2), 4, round, true}, t + 2ms);
  ASSERT_TRUE(c->is_leader());
  EXPECT_EQ(c->current_term().epoch, 10u);
  EXPECT_EQ(c->stats().elections_started, 1u);
}

TEST(pre_vote, ring_sends_its_token_only_after_a_majority_granted) {
  auto c = el::make_core(id(2), {id(1), id(3)}, guarded(el::algorithm::ring));
  auto t = follow_then_suspect(*c, 3);
  EXPECT_EQ(count_sent<el::ring_election_msg>(*c), 0u);
  auto round = std::get<el::pre_vote_msg>(c->outbox().front().msg).round;
  c->outbox().clear();
  c->handle(el::pre_vote_reply_msg{id(1), 6, round, true}, t + 1ms);
  ASSERT_EQ(count_sent<el::ring_election_msg>(*c), 1u);
  auto& token = std::get<el::ring_election_msg>(c->outbox().front().msg);
  EXPECT_EQ(token.epoch, 6u); // the round starts above what the replies reported
}

TEST(pre_vote, a_follower_refuses_while_it_hears_its_leader_and_grants_after) {
  auto cfg = guarded(el::algorithm::bully);
  auto c = el::make_core(id(2), {id(1), id(3)}, cfg);
  c->start(el::timestamp{0}, 1);
  c->handle(el::heartbeat_msg{id(3), {4, id(3), 1}, 1}, el::timestamp{1ms});
  c->outbox().clear();
  auto reply = [&](el::timestamp now) {
    c->outbox().clear();
    c->handle(el::pre_vote_msg{id(1), 2, 7}, now);
    EXPECT_EQ(c->outbox().size(), 1u);
    auto r = std::get<el::pre_vote_reply_msg>(c->outbox().back().msg);
    EXPECT_EQ(r.round, 7u);
    EXPECT_EQ(r.epoch, 4u);
    return r.granted;
  };
  EXPECT_FALSE(reply(el::timestamp{20ms}));
  // The leader has been silent for the detector's timeout: no live leader.
  EXPECT_TRUE(reply(el::timestamp{1ms} + cfg.detector.timeout));
  // Answering changes nothing: still no election, no epoch.
  EXPECT_EQ(c->stats().elections_started, 0u);

  // A leader refuses.
  auto l = el::make_core(id(3), {id(1), id(2)}, cfg);
  l->start(el::timestamp{0}, 1);
  l->request_election(el::timestamp{1ms});
  ASSERT_TRUE(l->is_leader());
  l->outbox().clear();
  l->handle(el::pre_vote_msg{id(1), 0, 1}, el::timestamp{2ms});
  EXPECT_FALSE(std::get<el::pre_vote_reply_msg>(l->outbox().back().msg).granted);
}

TEST(pre_vote, the_classic_algorithms_without_the_guard_elect_without_asking) {
  el::election_config cfg; // no guard
  auto c = el::make_core(id(1), {id(2), id(3)}, cfg);
  follow_then_suspect(*c, 3);
  EXPECT_EQ(count_sent<el::pre_vote_msg>(*c), 0u);
  EXPECT_EQ(count_sent<el::election_msg>(*c), 1u); // to 2 (3 is suspected)
  // And with the guard, pre_vote = false restores the same.
  auto g = guarded(el::algorithm::bully);
  g.pre_vote = false;
  auto d = el::make_core(id(1), {id(2), id(3)}, g);
  follow_then_suspect(*d, 3);
  EXPECT_EQ(count_sent<el::pre_vote_msg>(*d), 0u);
  EXPECT_EQ(count_sent<el::election_msg>(*d), 1u);
}

TEST(pre_vote, a_pre_voting_candidate_follows_a_leader_it_hears_again) {
  auto c = el::make_core(id(1), {id(2), id(3)}, guarded(el::algorithm::bully));
  auto t = follow_then_suspect(*c, 3);
  ASSERT_TRUE(c->pre_voting());
  c->handle(el::heartbeat_msg{id(3), {4, id(3), 1}, 9}, t + 5ms);
  EXPECT_FALSE(c->pre_voting());
  EXPECT_EQ(c->leader(), id(3));
  EXPECT_EQ(c->current_term().epoch, 4u);
}

TEST(candidate_core, an_epoch_below_the_leaders_changes_nothing_one_at_or_above_it_does) {
  // Plain calls on one core (a group of one leads itself at once).
  auto core = el::make_core(id(1), {}, el::election_config{});
  core->start(el::timestamp{1ms}, 1);
  ASSERT_TRUE(core->is_leader());
  auto first = core->current_term();
  core->events().clear();
  core->observe_external_epoch(first.epoch - 1, el::timestamp{2ms});
  EXPECT_EQ(core->current_term(), first);
  EXPECT_TRUE(core->events().empty());
  core->observe_external_epoch(first.epoch, el::timestamp{3ms}); // same epoch, not above
  EXPECT_TRUE(core->is_leader());
  EXPECT_EQ(core->current_term().epoch, first.epoch + 1);
  core->observe_external_epoch(first.epoch + 10, el::timestamp{4ms});
  EXPECT_EQ(core->current_term().epoch, first.epoch + 11);
  size_t became = 0;
  for (auto& e : core->events())
    became += e.kind == el::event_kind::became_leader;
  EXPECT_EQ(became, 2u);
}

// -- false suspicions under load (issue 11, "Detecting a silent leader") ---------
// A node under load stalls: its timers fire late and what its peers sent
// waits in its sockets. Its own stall must not count against the leader, and a
// suspicion the others refute must not start an election; a real silence must
// still elect within a bound.

namespace {

template <class T>
size_t count_events(const std::vector<el::election_event>& events, el::event_kind k) {
  return static_cast<size_t>(std::count_if(events.begin(), events.end(),
                                           [&](const auto& e) { return e.kind == k; }));
}

/// The node profile `--heartbeat-ms 10 --detector phi --detector-timeout-ms 50`
/// (lease 33 ms) that suspected live leaders on a loaded host.
el::election_config fast_profile(el::algorithm a) {
  el::election_config cfg = guarded(a);
  cfg.heartbeat_interval = 10ms;
  cfg.detector.kind = el::detector_kind::phi;
  cfg.detector.timeout = 50ms;
  cfg.guard.lease = 33ms;
  return cfg;
}

} // namespace

TEST(late_timers, a_late_timers_silence_is_discounted_by_its_lateness) {
  el::election_config cfg; // fixed 150 ms detector, heartbeat 50 ms
  auto c = el::make_core(id(1), {id(2), id(3)}, cfg);
  c->start(el::timestamp{0}, 1);
  c->handle(el::heartbeat_msg{id(3), {4, id(3), 1}, 1}, el::timestamp{1ms});
  auto due = *c->next_deadline();
  ASSERT_EQ(due, el::timestamp{1ms} + cfg.detector.timeout);
  // The timer fires 30 ms late (more than half a heartbeat interval): this node
  // was not running. No suspicion; it judges again 30 ms later.
  c->events().clear();
  c->tick(due + 30ms);
  EXPECT_EQ(c->leader(), id(3));
  ASSERT_EQ(c->events().size(), 1u);
  auto& e = c->events().front();
  EXPECT_EQ(e.kind, el::event_kind::suspicion_discounted);
  EXPECT_EQ(e.lateness, 30ms);
  EXPECT_EQ(e.silence, cfg.detector.timeout + 30ms);
  EXPECT_EQ(e.threshold, cfg.detector.timeout);
  EXPECT_EQ(*c->next_deadline(), due + 60ms);
  EXPECT_EQ(c->stats().suspicions_discounted, 1u);
  // A queued heartbeat is read: the leader is trusted, nothing happened.
  c->handle(el::heartbeat_msg{id(3), {4, id(3), 1}, 2}, due + 30ms + 100us);
  EXPECT_EQ(c->leader(), id(3));
  EXPECT_EQ(c->stats().suspicions, 0u);
  EXPECT_EQ(c->stats().elections_started, 0u);
}

TEST(late_timers, a_timer_on_time_suspects_and_a_little_lateness_is_not_discounted) {
  el::election_config cfg;
  auto c = el::make_core(id(1), {id(2), id(3)}, cfg);
  c->start(el::timestamp{0}, 1);
  c->handle(el::heartbeat_msg{id(3), {4, id(3), 1}, 1}, el::timestamp{1ms});
  auto due = *c->next_deadline();
  c->tick(due + cfg.heartbeat_interval / 2); // within timer jitter
  EXPECT_NE(c->leader(), id(3));
  EXPECT_EQ(c->stats().suspicions, 1u);
  EXPECT_EQ(c->stats().suspicions_discounted, 0u);
}

TEST(late_timers, timers_that_always_fire_late_suspect_within_the_bound) {
  // A real silence seen by a node whose timers always fire 40 ms late: it
  // discounts max twice, then suspects; the delay is bounded.
  el::election_config cfg;
  auto c = el::make_core(id(1), {id(2), id(3)}, cfg);
  c->start(el::timestamp{0}, 1);
  c->handle(el::heartbeat_msg{id(3), {4, id(3), 1}, 1}, el::timestamp{1ms});
  auto first_due = *c->next_deadline();
  el::timestamp now{0};
  int firings = 0;
  while (c->leader() == id(3) && firings < 10) {
    now = *c->next_deadline() + 40ms;
    c->tick(now);
    ++firings;
  }
  EXPECT_EQ(firings, 3);
  EXPECT_EQ(c->stats().suspicions_discounted, 2u);
  EXPECT_EQ(c->stats().suspicions, 1u);
  // Bound: due + (max discounts + 1) x lateness, each discount at most a timeout.
  EXPECT_LE(now, first_due + 2 * cfg.detector.timeout + 40ms);
}

TEST(refutation, a_suspicion_a_majority_refutes_starts_no_election) {
  // Node 1 of 5 stalls and suspects leader 5 on time by its clock; the others
  // still hear 5 and refuse its pre-vote. No election, no epoch; the
  // suspicion is counted refuted once, and 5's next heartbeat is followed
  // again in the same term without counting a leader change.
  auto c =
      el::make_core(id(1), {id(2), id(3), id(4), id(5)}, guarded(el::algorithm::bully));
  auto t = follow_then_suspect(*c, 5);
  ASSERT_TRUE(c->pre_voting());
  auto round = std::get<el::pre_vote_msg>(c->outbox().front().msg).round;
  auto changes = c->stats().leader_changes;
  c->outbox().clear();
  c->events().clear();
  c->handle(el::pre_vote_reply_msg{id(2), 4, round, false}, t + 1ms);
  c->handle(el::pre_vote_reply_msg{id(2), 4, round, false}, t + 1ms); // duplicate
  c->handle(el::pre_vote_reply_msg{id(3), 4, round, false}, t + 1ms);
  EXPECT_EQ(c->stats().suspicions_refuted, 0u); // 3 of 5 could still grant
  c->handle(el::pre_vote_reply_msg{id(4), 4, round, false}, t + 1ms);
  EXPECT_EQ(c->stats().suspicions_refuted, 1u);
  EXPECT_EQ(count_events<int>(c->events(), el::event_kind::suspicion_refuted), 1u);
  EXPECT_EQ(election_messages(*c), 0u);
  c->handle(el::heartbeat_msg{id(5), {4, id(5), 1}, 2}, t + 2ms);
  EXPECT_EQ(c->leader(), id(5));
  EXPECT_EQ(c->current_term().epoch, 4u);
  EXPECT_EQ(c->stats().suspicions_refuted, 1u); // once per suspicion
  EXPECT_EQ(c->stats().leader_changes, changes);
  EXPECT_EQ(c->stats().elections_started, 0u);
}

TEST(refutation, a_suspected_leader_heard_again_refutes_the_suspicion) {
  auto c = el::make_core(id(1), {id(2), id(3)}, guarded(el::algorithm::bully));
  auto t = follow_then_suspect(*c, 3);
  auto changes = c->stats().leader_changes;
  c->handle(el::heartbeat_msg{id(3), {4, id(3), 1}, 2}, t + 1ms);
  EXPECT_EQ(c->leader(), id(3));
  EXPECT_EQ(c->stats().suspicions_refuted, 1u);
  EXPECT_EQ(c->stats().leader_changes, changes);
  EXPECT_EQ(c->stats().elections_started, 0u);
}

TEST_P(both_algorithms, one_stalled_follower_does_not_disturb_a_healthy_leader) {
  // Fast profile; follower 1 stalls for 45 ms every 200 ms (its timers fire
  // late, the leader's heartbeats queue up): the leader keeps its term.
  election_network net(5, fast_profile(GetParam()));
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 3s));
  auto t0 = net.node(5).current_term();
  std::vector<uint64_t> started;
  for (auto i : net.ids())
    started.push_back(net.node(i).stats().elections_started);
  for (int i = 0; i < 20; ++i) {
    net.pause(id(1), 45ms);
    net.run_for(200ms);
  }
  EXPECT_EQ(net.node(5).current_term(), t0);
  EXPECT_EQ(net.agreed_leader(), id(5));
  for (auto i : net.ids())
    EXPECT_EQ(net.node(i).stats().elections_started, started[i.value - 1])
        << "node " << i.value;
}

TEST_P(both_algorithms,
       a_leader_stalled_shorter_than_its_followers_detector_keeps_leading) {
  // The leader stalls for 45 ms (its followers suspect at 50 ms of silence),
  // its quorum deadline passes meanwhile (its last renewed round left earlier
  // than its last heartbeat): on resuming it reads the queued acks before
  // stepping down.
  election_network net(5, fast_profile(GetParam()));
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 3s));
  auto t0 = net.node(5).current_term();
  auto rounds = [&] {
    return net.node(5).stats().sent[el::message_index<el::heartbeat_msg>];
  };
  for (int i = 0; i < 10; ++i) {
    net.run_for(300ms);
    // Right after a round leaves, before its acks are back: the quorum
    // deadline counts from the round before (10 ms earlier), 40 ms away.
    auto before = rounds();
    ASSERT_TRUE(net.run_until([&] { return rounds() > before; }, 50ms));
    net.pause(id(5), 45ms);
  }
  net.run_for(300ms);
  EXPECT_EQ(net.node(5).current_term(), t0);
  EXPECT_EQ(net.agreed_leader(), id(5));
  for (auto& e : net.events(id(5)))
    EXPECT_NE(e.kind, el::event_kind::lost_leadership) << "term " << el::to_string(e.t);
}

TEST_P(both_algorithms, a_silent_leader_is_still_replaced_within_the_bound) {
  // All peers silent about the leader (it stopped): the fast profile elects a
  // new acting leader within the detector floor + a pre-vote + an election.
  election_network net(5, fast_profile(GetParam()));
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 3s));
  net.run_for(500ms); // phi has a history
  net.crash(id(5), /*notify=*/false);
  auto stopped = net.now();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(4); }, 1s));
  EXPECT_LE(net.now() - stopped, 100ms);
}

// Bully only: Ring under this non-transitive cut did not elect within 2 s
// (its token has to pass 4, which still follows 5; not investigated yet).
TEST(refutation, a_peer_that_alone_hears_the_leader_cannot_stall_the_majority) {
  // Leader 5 can reach only node 4 (and 4 reaches everyone): 4 refuses every
  // pre-vote, but 1, 2 and 3 are a majority without it and elect.
  election_network net(5, fast_profile(el::algorithm::bully));
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 3s));
  net.set_drop([](el::node_id from, el::node_id to, const el::message&) {
    return (from == id(5) && to.value <= 3) || (to == id(5) && from.value <= 3);
  });
  auto cut = net.now();
  ASSERT_TRUE(net.run_until(
      [&] {
        for (auto i : {id(1), id(2), id(3)})
          if (!net.node(i).is_leader() && net.node(i).leader() != net.node(3).leader())
            return false;
        auto l = net.node(1).leader();
        return l != el::no_node && l != id(5) && net.node(l).acting();
      },
      2s))
      << "the majority never elected";
  EXPECT_LE(net.now() - cut, 1s);
}

// -- heartbeat acks out of order (issue 11) ---------------------------------------

// A follower's ack of round k that arrives after its ack of round k+1 (the
// network reordered them) still counts for round k, once. It used to be
// dropped as a copy: rounds lost their majority although every follower
// answered, and the leader stopped acting (`conclave sim --algorithm bully
// --nodes 4 --seed 66 --guard --faults 'random=6,loss=0.05,dup=0.05,delay=1ms..30ms'`).
TEST(candidate_core, an_ack_overtaken_by_a_newer_one_still_renews_its_round) {
  // The fixed lease: its start promise lapses before the first election.
  auto c = el::make_core(id(5), {id(1), id(2), id(3), id(4)},
                         fixed_lease(guarded(el::algorithm::bully)));
  std::map<uint64_t, el::timestamp> sent; // heartbeat round -> when it left
  uint64_t pre_vote_round = 0;
  auto drain = [&](el::timestamp now) {
    for (auto& o : c->outbox()) {
      if (auto h = std::get_if<el::heartbeat_msg>(&o.msg))
        sent.emplace(h->seq, now);
      if (auto p = std::get_if<el::pre_vote_msg>(&o.msg))
        pre_vote_round = p->round;
    }
    c->outbox().clear();
  };
  el::timestamp now{0};
  c->start(now, 1);
  drain(now);
  while (pre_vote_round == 0) { // no leader heard: it asks for a pre-vote
    now = *c->next_deadline();
    c->tick(now);
    drain(now);
  }
  for (auto p : {1, 2})
    c->handle(el::pre_vote_reply_msg{id(p), 0, pre_vote_round, true}, now);
  drain(now);
  ASSERT_TRUE(c->is_leader()); // the highest id wins Bully at once
  auto t = c->current_term();
  ASSERT_EQ(sent.size(), 1u);
  auto first = sent.begin()->first;
  now += 1ms;
  for (auto p : {1, 2})
    c->handle(el::heartbeat_ack_msg{id(p), t, first, true}, now);
  ASSERT_TRUE(c->acting());
  // Two more rounds leave unanswered.
  while (sent.size() < 3) {
    now = *c->next_deadline();
    c->tick(now);
    drain(now);
  }
  auto second = first + 1, third = first + 2;
  ASSERT_TRUE(sent.count(second) && sent.count(third));
  // Follower 1's acks arrive in reverse order, follower 2 acks the second only:
  // the second round has self + 1 + 2, a majority of 5.
  c->handle(el::heartbeat_ack_msg{id(1), t, third, true}, now);
  c->handle(el::heartbeat_ack_msg{id(1), t, second, true}, now);
  c->handle(el::heartbeat_ack_msg{id(1), t, second, true}, now); // a copy: no vote
  c->handle(el::heartbeat_ack_msg{id(2), t, second, true}, now);
  auto lease = c->config().guard.lease;
  c->tick(sent[second] + lease - 1ms);
  EXPECT_TRUE(c->acting());
  // The third has self + 1 only (the copy above did not count twice).
  c->tick(sent[second] + lease);
  EXPECT_FALSE(c->acting());
}
