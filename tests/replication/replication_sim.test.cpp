// Thousands of seeded schedules of the replication simulation
// (replication_sim.hpp), and meta-tests that break a rule on purpose to show
// the checkers can fail.
//
// Replay one schedule (CONCLAVE_REPLICATION_RUNS=N and CONCLAVE_REPLICATION_FIRST=F
// run other seeds than CI's):
//   CONCLAVE_REPLICATION_SEED=S CONCLAVE_REPLICATION_TRACE=1
//   build/bin/conclave_replication_sim_test --gtest_filter='replication_sim.NAME'
#include "tests/replication/replication_sim.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace conclave::replication;
using namespace conclave::replication::sim;

namespace {

std::optional<uint64_t> env_u64(const char* name) {
  if (auto* v = std::getenv(name))
    return std::strtoull(v, nullptr, 10);
  return std::nullopt;
}

/// The command that replays `seed` in the running test.
std::string replay(uint64_t seed) {
  std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return "CONCLAVE_REPLICATION_SEED=" + std::to_string(seed)
         + " CONCLAVE_REPLICATION_TRACE=1 build/bin/conclave_replication_sim_test"
           " --gtest_filter='replication_sim."
         + test + "'";
}

/// Runs seeds first..first+count-1 (or only $CONCLAVE_REPLICATION_SEED) and
/// fails with the replay command of every failing seed (at most 5 listed).
void run_many(sim_options base, uint64_t first, uint64_t count) {
  if (auto seed = env_u64("CONCLAVE_REPLICATION_SEED")) {
    first = *seed;
    count = 1;
    base.trace = env_u64("CONCLAVE_REPLICATION_TRACE").value_or(0) != 0;
  } else if (auto runs = env_u64("CONCLAVE_REPLICATION_RUNS")) {
    // A longer hunt than CI's: CONCLAVE_REPLICATION_RUNS=N [CONCLAVE_REPLICATION_FIRST=F]
    count = *runs;
    first = env_u64("CONCLAVE_REPLICATION_FIRST").value_or(first);
  }
  uint64_t failures = 0;
  uint64_t acked = 0;
  uint64_t primaries = 0;
  uint64_t crashes = 0;
  uint64_t snapshots = 0;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    base.seed = seed;
    auto r = run_schedule(base);
    acked += r.acked;
    primaries += r.primaries;
    crashes += r.crashes;
    snapshots += r.snapshots;
    if (count == 1)
      std::printf("%s\n", r.summary().c_str());
    if (!r.ok() && ++failures <= 5)
      ADD_FAILURE() << r.summary() << "\n  replay: " << replay(seed);
  }
  // The schedules must exercise what the checkers judge.
  EXPECT_GT(acked, count);
  EXPECT_GT(primaries, count);
  if (count > 100) {
    EXPECT_GT(crashes, count);
    EXPECT_GT(snapshots, 0u);
  }
  EXPECT_EQ(failures, 0u) << "of " << count << " schedules";
}

// 10,000 schedules in four ctest entries of 2,500, so that each stays well
// inside a minute on a loaded machine.
sim_options replicas(size_t n) {
  sim_options o;
  o.replicas = n;
  return o;
}

TEST(replication_sim, three_replicas_keep_every_acknowledged_commit_seeds_1_2500) {
  run_many(replicas(3), 1, 2500);
}

TEST(replication_sim, three_replicas_keep_every_acknowledged_commit_seeds_2501_5000) {
  run_many(replicas(3), 2501, 2500);
}

TEST(replication_sim, five_replicas_keep_every_acknowledged_commit_seeds_1_2500) {
  run_many(replicas(5), 1, 2500);
}

TEST(replication_sim, five_replicas_keep_every_acknowledged_commit_seeds_2501_5000) {
  run_many(replicas(5), 2501, 2500);
}

// A harsher mix, fewer seeds: a primary change at half of the checks, 20 % loss,
// 10 % duplication, delays up to 10 ms, small batches and windows.
sim_options storm(size_t n) {
  auto o = replicas(n);
  o.change_primary = 0.5;
  o.loss = 0.2;
  o.dup = 0.1;
  o.delay_max = std::chrono::milliseconds(10);
  o.core.max_batch_bytes = 200;
  o.core.max_inflight_bytes = 600;
  // Catching a majority up through 600-byte windows at up to 20 ms a round trip
  // takes a while: judge liveness over a longer healed stretch.
  o.heal_for = std::chrono::milliseconds(600);
  return o;
}

TEST(replication_sim, storm_with_three_replicas_keeps_every_acknowledged_commit) {
  run_many(storm(3), 100001, 500);
}

TEST(replication_sim, storm_with_five_replicas_keeps_every_acknowledged_commit) {
  run_many(storm(5), 200001, 500);
}

// Crashes that also lose the whole log (a damaged log moved aside): the node
// rejoins amnesiac and must never count in a sync majority until rebuilt.
sim_options amnesia(size_t n) {
  auto o = replicas(n);
  o.amnesia = 0.4;
  return o;
}

TEST(replication_sim, three_replicas_with_lost_logs_keep_every_acknowledged_commit) {
  run_many(amnesia(3), 300001, 1500);
}

TEST(replication_sim, five_replicas_with_lost_logs_keep_every_acknowledged_commit) {
  run_many(amnesia(5), 400001, 1000);
}

TEST(replication_sim, same_seed_gives_the_same_run) {
  sim_options o;
  o.replicas = 5;
  o.seed = 42;
  auto a = run_schedule(o);
  auto b = run_schedule(o);
  EXPECT_EQ(a.summary(), b.summary());
  o.seed = 43;
  EXPECT_NE(run_schedule(o).summary(), a.summary());
}

/// The first seed in 1..limit whose run a checker fails, or 0.
uint64_t first_failing_seed(sim_options o, uint64_t limit, std::string* example) {
  for (uint64_t seed = 1; seed <= limit; ++seed) {
    o.seed = seed;
    auto r = run_schedule(o);
    if (!r.ok()) {
      *example = r.summary();
      return seed;
    }
  }
  return 0;
}

TEST(replication_sim_meta,
     checker_catches_acknowledgements_before_a_majority_is_durable) {
  sim_options o;
  o.replicas = 3;
  o.weak_acks_counted_as_strong = true;
  std::string example;
  auto seed = first_failing_seed(o, 300, &example);
  EXPECT_NE(seed, 0u) << "no checker noticed acknowledgements before the quorum";
  std::printf("broken rule (ack before quorum) caught: %s\n", example.c_str());
}

TEST(replication_sim_meta, checker_catches_a_primary_that_skips_the_sync_phase) {
  sim_options o;
  o.replicas = 3;
  o.core.unsafe_skip_sync = true;
  std::string example;
  auto seed = first_failing_seed(o, 300, &example);
  EXPECT_NE(seed, 0u) << "no checker noticed a primary that skips the sync phase";
  std::printf("broken rule (no sync phase) caught: %s\n", example.c_str());
}

TEST(replication_sim_meta,
     checker_catches_a_replica_that_lost_its_log_and_counts_anyway) {
  auto o = amnesia(3);
  o.amnesia_unmarked = true;
  std::string example;
  auto seed = first_failing_seed(o, 1500, &example);
  EXPECT_NE(seed, 0u) << "no checker noticed an unmarked replica with a lost log";
  std::printf("broken rule (lost log counted in a sync) caught: %s\n", example.c_str());
}

} // namespace
