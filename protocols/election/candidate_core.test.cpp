// Behaviour shared by both algorithms: the quorum guard, participants, fencing of
// a paused leader, shutdown, configuration checks.
#include "protocols/election/candidate_core.hpp"

#include "tests/support/election_network.hpp"

#include <gtest/gtest.h>

#include <random>

using namespace std::chrono_literals;
using conclave::testing::election_network;
namespace el = conclave::election;

namespace {

el::node_id id(uint64_t x) {
  return el::node_id{x};
}

el::election_config guarded(el::algorithm a) {
  el::election_config cfg;
  cfg.algo = a;
  cfg.guard.enabled = true;
  cfg.guard.lease = 100ms;
  cfg.guard.max_clock_drift = 10ms;
  cfg.detector.timeout = 150ms;
  return cfg;
}

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
  ASSERT_TRUE(net.run_until([&] { return net.node(5).acting(); }, 100ms));
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
  // Random partitions, crashes and restarts; the invariant is checked after every
  // single event.
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    size_t n = 3 + rng() % 5;
    election_network net(n, guarded(GetParam()));
    std::mt19937_64 loss_rng(seed * 7919);
    bool lossy = true;
    net.set_drop([&](el::node_id, el::node_id, const el::message&) {
      return lossy && loss_rng() % 100 < 5; // 5 % loss while faults last
    });
    net.start_all();
    bool violated = false;
    auto check = [&] {
      violated |= acting_count(net) > 1;
      return false;
    };
    for (int phase = 0; phase < 12 && !violated; ++phase) {
      auto r = rng() % 4;
      if (r == 0) {
        std::vector<std::vector<el::node_id>> groups(2);
        for (auto i : net.ids())
          groups[rng() % 2].push_back(i);
        net.partition(groups);
      } else if (r == 1) {
        net.heal();
      } else if (r == 2) {
        auto victim = net.ids()[rng() % n];
        if (net.alive(victim))
          net.crash(victim, rng() % 2 == 0);
        else
          net.restart(victim);
      }
      net.run_until(check, std::chrono::milliseconds(50 + rng() % 400));
    }
    EXPECT_FALSE(violated) << "seed " << seed;
    // Liveness once every fault is healed.
    lossy = false;
    net.heal();
    for (auto i : net.ids())
      if (!net.alive(i))
        net.restart(i);
    EXPECT_TRUE(net.run_until(
        [&] {
          check();
          return net.agreed_leader() != el::no_node;
        },
        5s))
        << "seed " << seed;
    EXPECT_FALSE(violated) << "seed " << seed;
  }
}

TEST_P(both_algorithms, a_single_candidate_leads_itself) {
  election_network net(1, guarded(GetParam()));
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(1); }, 1s));
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
  rejects([](el::election_config& c) { c.heartbeat_interval = 99500us; }, "round trip");
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
  net.start_all(); // every start promises lease + drift: a crash may hide one
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 1s));
  // Acting one heartbeat round at most after the start promises lapsed.
  EXPECT_LE(net.now(), el::timestamp{cfg.guard.lease + cfg.guard.max_clock_drift
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

// Issue 11, defect 4: with the guard, a round trip above lease - heartbeat
// interval (50 ms by default) leaves gaps in acting. The envelope is computed
// and a measured round trip near it is warned about.
TEST(candidate_core, round_trips_near_the_guard_envelope_are_warned_about) {
  el::election_config cfg;
  EXPECT_EQ(el::guard_round_trip_budget(cfg), el::duration::max());
  EXPECT_TRUE(el::round_trip_warning(cfg, 40ms).empty());
  EXPECT_NE(el::round_trip_warning(cfg, 120ms).find("detector"), std::string::npos);
  cfg.guard.enabled = true;
  EXPECT_EQ(el::guard_round_trip_budget(cfg), 50ms);
  EXPECT_TRUE(el::round_trip_warning(cfg, 30ms).empty());
  EXPECT_NE(el::round_trip_warning(cfg, 40ms).find("quorum guard"), std::string::npos);
}

TEST(candidate_core, a_guarded_leader_measures_the_round_trip_it_is_judged_by) {
  election_network net(3, guarded(el::algorithm::bully), 30ms); // 60 ms round trip
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.node(3).is_leader(); }, 3s));
  net.run_for(1s);
  auto rtt = net.node(3).round_trips().smoothed();
  EXPECT_EQ(rtt, 60ms);
  EXPECT_FALSE(el::round_trip_warning(net.node(3).config(), rtt).empty());
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
