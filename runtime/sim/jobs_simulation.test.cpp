// The jobs workload end to end: the real workflow actors under the fault
// language, judged by the checkers. The 5,000 randomized schedules of CI run
// through the `conclave sim --workload jobs` binary (tests/cli/CMakeLists.txt);
// these tests pin determinism, the meta-test (a broken service makes its
// checker fail) and a few named fault scenarios.
#include "runtime/sim/jobs_simulation.hpp"

#include <gtest/gtest.h>

#include <sstream>

using namespace std::chrono_literals;
namespace sim = conclave::sim;
namespace wf = conclave::workflow;

namespace {

sim::jobs_settings settings(const std::string& spec, sim::jobs_shape shape = {}) {
  sim::jobs_settings s;
  s.shape = shape;
  auto p = sim::parse_fault_spec(spec, sim::workload::jobs);
  EXPECT_TRUE(p) << p.error();
  s.plan = p.value();
  EXPECT_TRUE(sim::validate(s.plan, shape));
  return s;
}

/// Everything a report says, as text: two runs are the same if this is.
std::string describe(const sim::jobs_run_report& r) {
  std::ostringstream o;
  o << r.seed << ' ' << r.faults << ' ' << r.dispatches << ' ' << r.stale_replies << ' '
    << r.recoveries_deadline << ' ' << r.recoveries_monitor << ' ' << r.recoveries_failure
    << ' ' << r.fenced_writes << ' ' << r.messages << ' ' << r.lost << ' ' << r.duplicated
    << ' ' << r.effects << ' ' << r.settle.count() << ' ' << r.end.count() << ' '
    << r.liveness_judged;
  for (auto n : r.outcomes)
    o << ' ' << n;
  for (auto& v : r.violations)
    o << '\n' << v.checker << ": " << v.what;
  return o.str();
}

std::string complaints(const sim::jobs_run_report& r) {
  std::string s;
  for (auto& v : r.violations)
    s += "\n  " + v.checker + ": " + v.what;
  return s;
}

size_t ended(const sim::jobs_run_report& r, wf::step_state s) {
  return r.outcomes[static_cast<size_t>(s)];
}

} // namespace

TEST(jobs_simulation, the_same_seed_gives_the_same_run) {
  auto s = settings("random=5,loss=0.05,dup=0.05,delay=1ms..4ms");
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    s.seed = seed;
    auto a = describe(sim::run_jobs_simulation(s));
    auto b = describe(sim::run_jobs_simulation(s));
    ASSERT_EQ(a, b) << "seed " << seed;
  }
  // ... and another seed gives another run.
  s.seed = 1;
  auto one = describe(sim::run_jobs_simulation(s));
  s.seed = 2;
  EXPECT_NE(one, describe(sim::run_jobs_simulation(s)));
}

TEST(jobs_simulation, random_schedules_keep_every_invariant_and_reach_every_ending) {
  auto s = settings("random=5,loss=0.05,dup=0.05,delay=1ms..4ms");
  std::array<size_t, wf::step_state_count> outcomes{};
  uint64_t stale = 0, monitor = 0, deadline = 0, lost = 0, duplicated = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    s.seed = seed;
    auto r = sim::run_jobs_simulation(s);
    ASSERT_TRUE(r.violations.empty())
        << "seed " << seed << complaints(r) << "\nreplay: conclave sim --workload jobs "
        << "--faults 'random=5,loss=0.05,dup=0.05,delay=1ms..4ms' --runs 1 --seed "
        << seed;
    for (size_t k = 0; k < outcomes.size(); ++k)
      outcomes[k] += r.outcomes[k];
    stale += r.stale_replies;
    monitor += r.recoveries_monitor;
    deadline += r.recoveries_deadline;
    lost += r.lost;
    duplicated += r.duplicated;
  }
  // The schedules exercise every ending and every recovery path, or they
  // test little.
  for (auto st : {wf::step_state::processed, wf::step_state::error,
                  wf::step_state::compensated, wf::step_state::cancelled})
    EXPECT_GT(outcomes[static_cast<size_t>(st)], 0u) << wf::to_string(st);
  EXPECT_GT(stale, 0u);
  // As in `conclave node`, no supervisor monitors another node's actors:
  // recovery comes from deadlines and reported failures (the monitor path
  // has its tests in actors/workflow).
  EXPECT_EQ(monitor, 0u);
  EXPECT_GT(deadline, 0u);
  EXPECT_GT(lost, 0u);
  EXPECT_GT(duplicated, 0u);
}

// Many jobs per run and four schedulers: claims go in groups (up to 32 jobs
// per transaction, 128 in flight) from the same ready pages, each scheduler
// starting at its own offset; under the random faults no step may run twice,
// no stale reply count, and every job must end.
TEST(jobs_simulation, grouped_claims_of_four_schedulers_keep_every_invariant) {
  sim::jobs_shape shape;
  shape.jobs = 80;
  shape.steps = 2;
  shape.schedulers = 4;
  auto spec = std::string{"random=6,loss=0.05,dup=0.05,delay=1ms..30ms"};
  auto s = settings(spec, shape);
  uint64_t dispatches = 0, processed = 0;
  constexpr uint64_t seeds = 8; // ~1.5 s of CPU each on the world
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    s.seed = seed;
    auto r = sim::run_jobs_simulation(s);
    ASSERT_TRUE(r.violations.empty())
        << "seed " << seed << complaints(r) << "\nreplay: conclave sim --workload jobs "
        << "--jobs 80 --steps 2 --schedulers 4 --faults '" << spec << "' --runs 1 --seed "
        << seed;
    dispatches += r.dispatches;
    processed += ended(r, wf::step_state::processed);
  }
  EXPECT_GE(dispatches, seeds * 80u * 2u / 2u);
  EXPECT_GT(processed, seeds * 80u / 2u);
}

TEST(jobs_simulation, a_non_idempotent_service_makes_the_effect_checker_fail) {
  // Answers slower than the step timeout make the supervisor recover the step
  // and dispatch it again with the same key: an idempotent service applies it
  // once, this one every time.
  auto s = settings("slow=200ms,slow@0ms-300ms:0.5");
  s.idempotent_service = false;
  size_t failing = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    s.seed = seed;
    auto r = sim::run_jobs_simulation(s);
    for (auto& v : r.violations)
      EXPECT_EQ(v.checker, "one_effect_per_key") << v.what;
    failing += r.safety_violated() ? 1 : 0;
  }
  EXPECT_GT(failing, 0u) << "the broken service went unnoticed";
  // The same schedules with the idempotent service are clean.
  s.idempotent_service = true;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    s.seed = seed;
    auto r = sim::run_jobs_simulation(s);
    EXPECT_TRUE(r.violations.empty()) << "seed " << seed << complaints(r);
  }
}

TEST(jobs_simulation, a_service_that_rejects_everything_processes_no_job) {
  auto s = settings("reject@0ms-1s");
  auto r = sim::run_jobs_simulation(s);
  EXPECT_TRUE(r.violations.empty()) << complaints(r);
  EXPECT_EQ(ended(r, wf::step_state::processed), 0u);
  EXPECT_EQ(ended(r, wf::step_state::error) + ended(r, wf::step_state::compensated), 4u);
  EXPECT_EQ(r.effects, 0u);
}

TEST(jobs_simulation, a_cancel_of_a_hanging_job_ends_it) {
  // Job 1 hangs in its first step; the user cancels it.
  sim::jobs_shape one;
  one.jobs = 1;
  one.steps = 1;
  auto s = settings("hang@0ms-1s,cancel@20ms:1", one);
  auto r = sim::run_jobs_simulation(s);
  EXPECT_TRUE(r.violations.empty()) << complaints(r);
  EXPECT_EQ(ended(r, wf::step_state::cancelled), 1u);
}

TEST(jobs_simulation, a_crashed_agent_and_a_crashed_scheduler_are_recovered) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    auto s = settings("crash@30ms:agent1,crash@60ms:scheduler1,restart@100ms:scheduler1,"
                      "hang@0ms-100ms:0.5");
    s.seed = seed;
    auto r = sim::run_jobs_simulation(s);
    EXPECT_TRUE(r.violations.empty()) << "seed " << seed << complaints(r);
    EXPECT_TRUE(r.liveness_judged);
    size_t final_jobs = 0;
    for (auto st : {wf::step_state::processed, wf::step_state::error,
                    wf::step_state::compensated, wf::step_state::cancelled})
      final_jobs += ended(r, st);
    EXPECT_EQ(final_jobs, 4u) << "seed " << seed;
  }
}

TEST(jobs_simulation, the_supervisor_leaders_crash_hands_recovery_to_the_other) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    auto s = settings("hang@150ms-400ms,crash-leader@250ms,restart-leader@600ms");
    s.seed = seed;
    auto r = sim::run_jobs_simulation(s);
    EXPECT_TRUE(r.violations.empty()) << "seed " << seed << complaints(r);
    EXPECT_GT(r.recoveries_deadline, 0u) << "seed " << seed;
  }
}

TEST(jobs_simulation, without_a_quorum_of_live_nodes_liveness_is_not_judged) {
  // Schedulers 1 and 2 are on nodes 1 and 2 of 3: the replicated store has
  // no majority, nothing can be dispatched or read.
  auto s = settings("crash@0ms:scheduler1,crash@0ms:scheduler2");
  auto r = sim::run_jobs_simulation(s);
  EXPECT_FALSE(r.liveness_judged);
  EXPECT_TRUE(r.violations.empty()) << complaints(r);
  EXPECT_EQ(r.dispatches, 0u);
  EXPECT_EQ(r.end, r.heal + r.bound); // it waited the whole bound
}

// A candidate restarted without memory can be elected with a term lower than
// one an earlier leader's supervisor already stamped in the store: when every
// candidate restarted at once, or when the leader died before the restarted
// one heard its term. Its supervisor's first recovery is refused with
// stale_term; it tells its candidate the recorded epoch, the candidate takes a
// term above it, and the supervisor acts again. Before that fix, overdue steps
// stayed stuck (final_within_bound failed in both scenarios).
TEST(jobs_simulation, supervisors_are_not_fenced_out_after_restarts) {
  for (auto spec : {// The whole group restarts; (1, 1) after (1, 2) was stamped.
                    "hang@0ms-2s:0.5,crash@250ms:supervisor1,crash@250ms:supervisor2,"
                    "restart@260ms:supervisor1",
                    // Candidate 2 restarts and the leader dies 19 ms later.
                    "hang@0ms-2s:0.5,crash-leader@167ms,restart-leader@184ms,"
                    "crash-leader@203ms,restart-leader@283ms"}) {
    auto s = settings(spec);
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      s.seed = seed;
      auto r = sim::run_jobs_simulation(s);
      EXPECT_TRUE(r.liveness_judged) << spec << " seed " << seed;
      EXPECT_TRUE(r.violations.empty()) << spec << " seed " << seed << complaints(r);
    }
    // On the world a node's candidate keeps its term file across crashes:
    // these scenarios no longer reach the refusal (no fenced write in these
    // seeds), but they must still end every job.
  }
}

// The large CTest mix failed 3 of 1,000 seeds ("jN could not be read" for
// every job): once every job was final the run stopped early, with a crash
// applied and its restart not yet, here nodes 3 and 4 of 4 down, so the
// replicated store had no quorum and the checkers could read nothing. A run
// now stops early only once every fault was applied.
TEST(jobs_simulation, a_run_that_ends_early_is_read_after_every_restart) {
  sim::jobs_shape large;
  large.jobs = 6;
  large.steps = 4;
  large.schedulers = 3;
  large.agents = 4;
  large.supervisors = 3;
  auto s = settings("random=8,horizon=500ms", large);
  for (uint64_t seed : {2166u, 2954u, 2964u}) {
    s.seed = seed;
    auto r = sim::run_jobs_simulation(s);
    EXPECT_TRUE(r.violations.empty()) << "seed " << seed << complaints(r);
    EXPECT_TRUE(r.liveness_judged) << "seed " << seed;
  }
}

// -- the words of the world: drifting clocks, pauses, partitions, cuts and
// elections asked of a node -------------------------------------------------

TEST(jobs_simulation, the_node_words_keep_every_invariant_and_replay_identically) {
  // Each schedule names nodes (node N hosts agentN, schedulerN, supervisorN);
  // the service misbehaves meanwhile so that recovery has work to do.
  for (auto spec : {"drift=0.05,hang@0ms-200ms:0.3,pause@50ms-250ms:1",
                    "partition@50ms-300ms:1|2-3,fail@0ms-150ms:0.5",
                    "cut@50ms-300ms:1>2,cut@100ms-200ms:3>1,hang@0ms-150ms:0.3",
                    "pause-leader@100ms-300ms,hang@0ms-200ms:0.3",
                    "elect@100ms:2,elect@200ms:3,fail@0ms-150ms:0.3",
                    "crash@60ms:agent2,restart@200ms:agent2,partition@100ms-250ms:2,"
                    "drift=0.01"}) {
    auto s = settings(spec);
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      s.seed = seed;
      auto r = sim::run_jobs_simulation(s);
      EXPECT_TRUE(r.violations.empty()) << spec << " seed " << seed << complaints(r);
      EXPECT_TRUE(r.liveness_judged) << spec << " seed " << seed;
      EXPECT_EQ(describe(r), describe(sim::run_jobs_simulation(s)))
          << spec << " seed " << seed;
    }
  }
}

TEST(jobs_simulation, a_partition_and_a_pause_act_on_the_world) {
  // Without loss=, only a partition or cut drops messages.
  auto calm = sim::run_jobs_simulation(settings("hang@0ms-200ms:0.3"));
  EXPECT_EQ(calm.lost, 0u);
  auto cut =
      sim::run_jobs_simulation(settings("hang@0ms-200ms:0.3,partition@50ms-300ms:1|2-3"));
  EXPECT_TRUE(cut.violations.empty()) << complaints(cut);
  EXPECT_GT(cut.lost, 0u);
  // A pause of every node freezes the run: nothing is dispatched while it
  // lasts, so the jobs end later than without it.
  auto paused = sim::run_jobs_simulation(
      settings("pause@0ms-400ms:1,pause@0ms-400ms:2,pause@0ms-400ms:3"));
  auto free = sim::run_jobs_simulation(settings(""));
  EXPECT_TRUE(paused.violations.empty()) << complaints(paused);
  EXPECT_GT(paused.end, free.end);
  EXPECT_GE(paused.end, std::chrono::duration_cast<wf::duration>(400ms));
}

TEST(jobs_simulation, drift_changes_the_run) {
  auto a = describe(sim::run_jobs_simulation(settings("hang@0ms-200ms:0.3,drift=0.001")));
  auto b = describe(sim::run_jobs_simulation(settings("hang@0ms-200ms:0.3,drift=0.1")));
  EXPECT_NE(a, b);
}

// -- every node the node's composition and its workflow part ---------------

TEST(jobs_simulation, jobs_end_through_the_replicated_store_without_faults) {
  auto s = settings("");
  auto r = sim::run_jobs_simulation(s);
  EXPECT_TRUE(r.violations.empty()) << complaints(r);
  EXPECT_TRUE(r.liveness_judged);
  EXPECT_EQ(ended(r, wf::step_state::processed), 4u);
  // Every step of every job took effect once; the candidates and replicas
  // talked through the world's network.
  EXPECT_EQ(r.effects, 4u * 3u);
  EXPECT_GT(r.messages, 0u);
}
