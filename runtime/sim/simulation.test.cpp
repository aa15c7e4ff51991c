#include "runtime/sim/simulation.hpp"

#include "protocols/election/type_ids.hpp"
#include "runtime/sim/election_host.hpp"
#include "runtime/sim/world.hpp"

#include <caf/actor_system_config.hpp>

#include <gtest/gtest.h>

using namespace std::chrono_literals;
namespace sim = conclave::sim;
namespace el = conclave::election;

namespace {

sim::sim_settings settings(el::algorithm algo, size_t n, const char* spec,
                           uint64_t seed = 1) {
  sim::sim_settings s;
  s.config.algo = algo;
  s.nodes = n;
  auto plan = sim::parse_fault_spec(spec);
  EXPECT_TRUE(plan) << plan.error();
  s.plan = plan.value();
  s.seed = seed;
  return s;
}

sim::sim_settings guarded(sim::sim_settings s) {
  s.config.guard.enabled = true;
  s.config.guard.lease = 100ms;
  s.config.guard.max_clock_drift = 10ms;
  s.config.detector.timeout = 150ms;
  return s;
}

} // namespace

class sim_both : public ::testing::TestWithParam<el::algorithm> {};

TEST_P(sim_both, a_quiet_group_elects_once_and_stays_put) {
  auto r = sim::run_simulation(settings(GetParam(), 5, ""));
  EXPECT_EQ(r.elections.size(), 1u);
  EXPECT_TRUE(r.liveness_ok);
  EXPECT_EQ(r.safety_violations, 0u);
  EXPECT_EQ(r.split_brain_windows, 0u);
  EXPECT_GT(r.messages_delivered, 0u);
}

TEST_P(sim_both, the_same_seed_gives_the_same_run) {
  auto spec = "random=6,loss=0.05,delay=1ms..8ms,dup=0.02";
  auto a = sim::run_simulation(settings(GetParam(), 6, spec, 77));
  auto b = sim::run_simulation(settings(GetParam(), 6, spec, 77));
  auto c = sim::run_simulation(settings(GetParam(), 6, spec, 78));
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.messages_sent, b.messages_sent);
  EXPECT_EQ(a.elections.size(), b.elections.size());
  EXPECT_EQ(a.leader_changes, b.leader_changes);
  EXPECT_NE(a.events, c.events); // another seed, another schedule
}

TEST_P(sim_both, crashing_the_leader_causes_one_more_election_and_a_new_leader) {
  auto r = sim::run_simulation(settings(GetParam(), 5, "crash-leader@1s"));
  ASSERT_EQ(r.elections.size(), 2u);
  EXPECT_EQ(r.leader_changes, 1u);
  EXPECT_TRUE(r.liveness_ok);
  // Noticed through the dropped connection (1 ms), not the 150 ms detector.
  EXPECT_LT(r.elections[1].latency, 100ms);
}

TEST_P(sim_both, a_partition_without_the_guard_shows_split_brain_and_heals) {
  auto r = sim::run_simulation(settings(GetParam(), 5, "partition@1s-2s:1-2|3-5"));
  EXPECT_GE(r.split_brain_windows, 1u);
  EXPECT_GT(r.split_brain_time, 0ms);
  EXPECT_EQ(r.safety_violations, 0u); // split brain is a finding, not a violation
  EXPECT_TRUE(r.liveness_ok);
}

TEST_P(sim_both, a_partition_with_the_guard_never_has_two_acting_leaders) {
  auto r =
      sim::run_simulation(guarded(settings(GetParam(), 5, "partition@1s-2s:1-2|3-5")));
  EXPECT_EQ(r.split_brain_windows, 0u);
  EXPECT_EQ(r.safety_violations, 0u) << (r.violations.empty() ? "" : r.violations[0]);
  EXPECT_TRUE(r.liveness_ok);
}

TEST_P(sim_both, a_paused_leader_is_replaced_and_steps_down_when_it_wakes) {
  auto r = sim::run_simulation(settings(GetParam(), 5, "pause-leader@1s-2s"));
  EXPECT_TRUE(r.liveness_ok);
  EXPECT_EQ(r.leader_changes, 1u);
  EXPECT_EQ(r.safety_violations, 0u);
}

TEST_P(sim_both, a_paused_follower_with_the_highest_id_does_not_take_over_on_resume) {
  // On SIGCONT its own detector timer fires before the leader's queued heartbeats
  // are read; the silence it measured was its own.
  auto r = sim::run_simulation(
      settings(GetParam(), 5, "crash@1s:5,restart@2s:5,pause@3s-4s:5"));
  EXPECT_TRUE(r.liveness_ok);
  EXPECT_EQ(r.leader_changes, 1u); // 5 -> 4 at the crash, and no more
  EXPECT_EQ(r.split_brain_windows, 0u);
}

TEST_P(sim_both, a_crashed_and_restarted_leader_rejoins_without_taking_over) {
  auto r = sim::run_simulation(settings(GetParam(), 5, "crash@1s:5,restart@2s:5"));
  EXPECT_TRUE(r.liveness_ok);
  EXPECT_EQ(r.leader_changes, 1u); // 5 -> 4, and 4 stays
}

TEST_P(sim_both, random_faults_with_the_guard_keep_safety_and_liveness) {
  // The property test: many schedules, every fault kind, loss and duplication.
  for (uint64_t seed = 1; seed <= 2500; ++seed) {
    auto s = guarded(settings(GetParam(), 3 + seed % 7,
                              "random=5,loss=0.02,dup=0.01,delay=1ms..4ms", seed));
    auto r = sim::run_simulation(s);
    ASSERT_EQ(r.safety_violations, 0u)
        << "replay: conclave sim --guard --algorithm " << el::to_string(GetParam())
        << " --nodes " << s.nodes << " --runs 1 --seed " << seed << ": "
        << r.violations[0];
    ASSERT_TRUE(r.liveness_ok) << "replay: conclave sim --guard --algorithm "
                               << el::to_string(GetParam()) << " --nodes " << s.nodes
                               << " --runs 1 --seed " << seed << ": "
                               << r.violations.back();
    // Leader tasks ran and never outlived their leadership.
    ASSERT_GT(r.leader_task_starts, 0u) << "seed " << seed;
    ASSERT_LE(r.task_overrun_max, sim::task_stop_bound(s.config)) << "seed " << seed;
  }
}

TEST_P(sim_both, random_faults_without_the_guard_stay_live_and_fenced) {
  for (uint64_t seed = 1; seed <= 2500; ++seed) {
    auto s =
        settings(GetParam(), 3 + seed % 7, "random=6,loss=0.02,delay=1ms..4ms", seed);
    auto r = sim::run_simulation(s);
    ASSERT_EQ(r.safety_violations, 0u) << "seed " << seed << ": " << r.violations[0];
    ASSERT_TRUE(r.liveness_ok) << "seed " << seed << " nodes " << s.nodes << ": "
                               << r.violations.back();
    ASSERT_EQ(r.split_brain_durations.size(), r.split_brain_windows) << "seed " << seed;
    ASSERT_EQ(r.stale_leader_durations.size(), r.stale_leader_windows) << "seed " << seed;
  }
}

TEST_P(sim_both, a_quiet_run_has_a_leader_almost_all_the_time_and_no_late_elections) {
  auto r = sim::run_simulation(settings(GetParam(), 5, ""));
  EXPECT_TRUE(r.liveness_ok);
  EXPECT_EQ(r.elections_after_stable, 0u);
  // Leaderless only during the start-up wait and election (~150 ms of the run).
  EXPECT_GT(r.leader_time_fraction, 0.7);
  EXPECT_LT(r.leader_time_fraction, 1.0);
  // Without faults, "after healing" is the whole run.
  EXPECT_DOUBLE_EQ(r.leader_time_fraction_after_heal, r.leader_time_fraction);
  ASSERT_EQ(r.elections.size(), 1u);
  EXPECT_TRUE(r.elections[0].startup);
}

TEST_P(sim_both, a_failover_election_is_not_counted_as_a_startup_election) {
  auto r = sim::run_simulation(settings(GetParam(), 5, "crash-leader@1s"));
  ASSERT_EQ(r.elections.size(), 2u);
  EXPECT_TRUE(r.elections[0].startup);
  EXPECT_FALSE(r.elections[1].startup);
}

TEST_P(sim_both, a_resumed_deposed_leader_is_reported_as_a_stale_claimant) {
  // Without the guard the paused leader is replaced; on SIGCONT it still
  // believes it leads until a heartbeat ack tells it of the higher term.
  auto r = sim::run_simulation(settings(GetParam(), 5, "pause-leader@1s-2s"));
  EXPECT_TRUE(r.liveness_ok);
  ASSERT_GE(r.stale_leader_windows, 1u);
  ASSERT_EQ(r.stale_leader_durations.size(), r.stale_leader_windows);
  for (auto d : r.stale_leader_durations) {
    EXPECT_GT(d, 0ms);
    EXPECT_LT(d, 200ms);
  }
}

TEST_P(sim_both, clocks_drifting_within_the_guards_bound_keep_safety) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    auto s = guarded(settings(GetParam(), 5, "random=4,delay=1ms..3ms", seed));
    s.clock_rate_error = 0.02; // 2 % * 2 clocks * 110 ms < 10 ms drift bound
    auto r = sim::run_simulation(s);
    ASSERT_EQ(r.safety_violations, 0u) << "seed " << seed << ": " << r.violations[0];
  }
}

TEST_P(sim_both, clocks_drifting_far_beyond_the_guards_bound_break_it_and_are_seen) {
  // The checker reads true time, the candidates their own clocks: a leader whose
  // clock runs slow acts past the moment its followers' (fast) clocks released
  // their promises. That the checker catches it shows the drift is simulated.
  uint64_t violations = 0;
  for (uint64_t seed = 1; seed <= 200 && violations == 0; ++seed) {
    auto s = guarded(settings(GetParam(), 5,
                              "pause-leader@1s-1300ms,partition@2s-3s:1-2|3-5,"
                              "partition@4s-5s:1-3|4-5",
                              seed));
    // 0.45 sufficed before the guard's new leaders waited out earlier
    // promises (issue 11, defect 2); that wait absorbs more drift, so the
    // rate error here is larger still.
    s.clock_rate_error = 0.9;
    violations += sim::run_simulation(s).safety_violations;
  }
  EXPECT_GT(violations, 0u);
}

// Issue 12: node 1 of 5 is cut off for 2 s (13 detector timeouts). With the
// guard and pre-vote it never gets a majority to take part, so it raises no
// epoch; when the partition heals the majority's leader (5) keeps leading.
// Without pre-vote, the same schedule shows the defect the test is for.
TEST_P(sim_both, a_node_cut_off_for_long_comes_back_without_deposing_the_leader) {
  auto run = [&](bool pre_vote) {
    auto s = guarded(settings(GetParam(), 5, "partition@1s-3s:1|2-5"));
    s.config.pre_vote = pre_vote;
    s.record_timeline = true;
    return sim::run_simulation(s);
  };
  auto r = run(true);
  EXPECT_EQ(r.safety_violations, 0u) << (r.violations.empty() ? "" : r.violations[0]);
  EXPECT_TRUE(r.liveness_ok);
  EXPECT_EQ(r.needless_leader_changes, 0u);
  EXPECT_EQ(r.leader_changes, 0u); // 5 leads from start-up to the end
  uint64_t leader_epoch = 0, isolated_epoch = 0, became_leader = 0;
  for (auto& e : r.timeline) {
    if (e.what == "became_leader") {
      ++became_leader;
      leader_epoch = std::max(leader_epoch, e.t.epoch);
      EXPECT_EQ(e.node, el::node_id{5}) << "at " << e.at.count() << " ns";
    }
    if (e.node == el::node_id{1})
      isolated_epoch = std::max(isolated_epoch, e.t.epoch);
  }
  EXPECT_EQ(became_leader, 1u);
  EXPECT_LE(isolated_epoch, leader_epoch) << "the cut-off node's epoch grew";

  auto classic = run(false);
  EXPECT_EQ(classic.safety_violations, 0u);
  EXPECT_GT(classic.needless_leader_changes, 0u)
      << "without pre-vote the cut-off node should elect itself";
}

INSTANTIATE_TEST_SUITE_P(sim, sim_both,
                         ::testing::Values(el::algorithm::bully, el::algorithm::ring),
                         [](const auto& info) {
                           return std::string{el::to_string(info.param)};
                         });

namespace {

sim::run_report one_election(el::algorithm algo, size_t n, const char* spec) {
  auto s = settings(algo, n, spec);
  s.quiet_start = true;
  s.stop_at_first_agreement = false;
  return sim::run_simulation(s);
}

uint64_t count(const sim::election_record& e, size_t type) {
  return e.by_type[type];
}

} // namespace

class textbook : public ::testing::TestWithParam<int> {};

TEST_P(textbook, bully_lowest_initiator_pays_the_worst_case_and_the_opening_step_counts) {
  const auto n = static_cast<uint64_t>(GetParam());
  auto r = one_election(el::algorithm::bully, n, "elect@1s:1");
  ASSERT_EQ(r.elections.size(), 1u);
  auto& e = r.elections[0];
  // Node 1's own n-1 election messages (sent in the step that opens the
  // election) are counted.
  EXPECT_EQ(count(e, el::message_index<el::election_msg>), n * (n - 1) / 2);
  EXPECT_EQ(count(e, el::message_index<el::answer_msg>), n * (n - 1) / 2);
  // Textbook worst case: n(n-1) elections and answers + n-1 coordinator messages.
  // conclave's leader also answers each election that reaches it after it won
  // with a coordinator message (n-2 of them here).
  EXPECT_EQ(count(e, el::message_index<el::coordinator_msg>), (n - 1) + (n - 2));
  EXPECT_EQ(e.messages, n * (n - 1) + (n - 1) + (n - 2));
}

TEST_P(textbook, ring_round_is_n_election_hops_and_n_coordinator_hops_plus_acks) {
  const auto n = static_cast<uint64_t>(GetParam());
  auto r = one_election(el::algorithm::ring, n, "elect@1s:1");
  ASSERT_EQ(r.elections.size(), 1u);
  auto& e = r.elections[0];
  EXPECT_EQ(count(e, el::message_index<el::ring_election_msg>), n);
  // The whole coordinator round, also the hops after the group agreed.
  EXPECT_EQ(count(e, el::message_index<el::ring_coordinator_msg>), n);
  EXPECT_EQ(count(e, el::message_index<el::ring_ack_msg>), 2 * n);
  EXPECT_EQ(e.messages, 2 * n + 2 * n); // textbook 2n, plus one ack per hop
}

INSTANTIATE_TEST_SUITE_P(n, textbook, ::testing::Values(2, 3, 5, 8, 16));

namespace {

struct counting_observer final : sim::election_observer {
  explicit counting_observer(bool every) : every(every) {}
  void after_event(sim::timestamp now) override {
    ++calls;
    instants += now != last;
    last = now;
  }
  unsigned frequent_hooks() const override {
    return every ? unsigned{every_after_event} : 0u;
  }
  bool every;
  uint64_t calls = 0;
  uint64_t instants = 0;
  sim::timestamp last{-1};
};

} // namespace

// The host passes after_event on after every event to observers that need
// it, and to the others only when time moved or something they look at
// changed (a message storm at one instant changes little: the checkers'
// verdicts after such events are those after the previous one).
TEST(election_host, quiet_events_at_one_instant_skip_only_observers_that_allow_it) {
  sim::world w{9, 1, {}, {}, [](caf::actor_system_config& cfg) {
                 cfg.add_message_types<caf::id_block::conclave_election>();
               }};
  sim::election_host_options ho;
  ho.config.algo = el::algorithm::bully;
  sim::election_host host{w, ho};
  counting_observer every{true}, quiet{false};
  host.add_observer(&every);
  host.add_observer(&quiet);
  host.start_all();
  w.run_until(sim::timestamp{2s});
  EXPECT_EQ(every.calls, w.events());
  EXPECT_LT(quiet.calls, w.events());
  // Never skipped when time moved.
  EXPECT_EQ(quiet.instants, every.instants);
  EXPECT_GT(quiet.calls, quiet.instants); // and not when something changed
}
