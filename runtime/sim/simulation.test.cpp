#include "runtime/sim/simulation.hpp"

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
  int runs = 0;
  for (uint64_t seed = 1; seed <= 2500; ++seed) {
    auto s = guarded(settings(GetParam(), 3 + seed % 7,
                              "random=5,loss=0.02,dup=0.01,delay=1ms..4ms", seed));
    auto r = sim::run_simulation(s);
    ++runs;
    ASSERT_EQ(r.safety_violations, 0u)
        << "replay: conclave sim --guard --algorithm " << el::to_string(GetParam())
        << " --nodes " << s.nodes << " --runs 1 --seed " << seed << ": "
        << r.violations[0];
    ASSERT_TRUE(r.liveness_ok) << "replay: conclave sim --guard --algorithm "
                               << el::to_string(GetParam()) << " --nodes " << s.nodes
                               << " --runs 1 --seed " << seed << ": "
                               << r.violations.back();
  }
  EXPECT_EQ(runs, 2500);
}

TEST_P(sim_both, random_faults_without_the_guard_stay_live_and_fenced) {
  for (uint64_t seed = 1; seed <= 2500; ++seed) {
    auto s =
        settings(GetParam(), 3 + seed % 7, "random=6,loss=0.02,delay=1ms..4ms", seed);
    auto r = sim::run_simulation(s);
    ASSERT_EQ(r.safety_violations, 0u) << "seed " << seed << ": " << r.violations[0];
    ASSERT_TRUE(r.liveness_ok) << "seed " << seed << " nodes " << s.nodes << ": "
                               << r.violations.back();
  }
}

INSTANTIATE_TEST_SUITE_P(sim, sim_both,
                         ::testing::Values(el::algorithm::bully, el::algorithm::ring),
                         [](const auto& info) {
                           return std::string{el::to_string(info.param)};
                         });

TEST(sim, bully_worst_case_message_count_matches_theory) {
  auto s = settings(el::algorithm::bully, 16, "elect@1ms:1");
  s.quiet_start = true;
  s.stop_at_first_agreement = true;
  auto r = sim::run_simulation(s);
  ASSERT_EQ(r.elections.size(), 1u);
  auto& e = r.elections[0];
  EXPECT_EQ(e.by_type[el::message_index<el::election_msg>], 16u * 15 / 2);
  EXPECT_EQ(e.by_type[el::message_index<el::answer_msg>], 16u * 15 / 2);
}
