// Runs of the replication workload: the real replica hosts and candidates in
// virtual time. A quiet run and runs under faults pass every checker; the
// same seed gives the same report; and the two broken fixtures (no sync
// phase, a disk that acknowledges before it is durable) are caught.
#include "runtime/sim/repl_simulation.hpp"

#include <gtest/gtest.h>

using namespace conclave::sim;

namespace {

repl_settings with_faults(const std::string& spec, size_t replicas = 3) {
  repl_settings s;
  s.replicas = replicas;
  auto plan = parse_fault_spec(spec, workload::replication);
  EXPECT_TRUE(plan) << spec << ": " << (plan ? "" : plan.error());
  if (plan)
    s.plan = plan.value();
  return s;
}

std::string complaints(const repl_run_report& r) {
  std::string out;
  for (auto& v : r.violations)
    out += v.checker + ": " + v.what + "\n";
  return out;
}

} // namespace

TEST(repl_simulation, a_quiet_run_commits_and_passes_every_checker) {
  auto r = run_repl_simulation(with_faults(""));
  EXPECT_TRUE(r.violations.empty()) << complaints(r);
  EXPECT_GT(r.strong_acked, 0u);
  EXPECT_EQ(r.lost, 0u);
  EXPECT_GE(r.syncs, 1u);
  EXPECT_GT(r.messages, 0u);
  EXPECT_GT(r.acting_reads, 10u); // the linearizability checker has reads to judge
}

TEST(repl_simulation, the_same_seed_gives_the_same_run) {
  auto s = with_faults("random=3,loss=0.05,dup=0.05,delay=1ms..4ms,horizon=1s");
  s.seed = 7;
  auto a = run_repl_simulation(s);
  auto b = run_repl_simulation(s);
  EXPECT_EQ(a.fault_list, b.fault_list);
  EXPECT_EQ(a.writes, b.writes);
  EXPECT_EQ(a.strong_acked, b.strong_acked);
  EXPECT_EQ(a.messages, b.messages);
  EXPECT_EQ(a.sync_durations, b.sync_durations);
  EXPECT_EQ(a.end, b.end);
  s.seed = 8;
  auto c = run_repl_simulation(s);
  EXPECT_NE(a.fault_list + std::to_string(a.messages),
            c.fault_list + std::to_string(c.messages));
}

TEST(repl_simulation, the_primary_crashes_and_a_new_one_keeps_every_acked_commit) {
  auto r = run_repl_simulation(with_faults("crash-leader@400ms,restart-leader@700ms"));
  EXPECT_TRUE(r.violations.empty()) << complaints(r) << r.fault_list;
  EXPECT_GE(r.failovers(), 1u);
}

TEST(repl_simulation, crashes_under_load_drop_unsynced_records_and_lose_no_ack) {
  // Syncs take 5 ms: a crash under a steady write load finds records appended
  // and not yet durable, and drops them; no acknowledged commit goes with them.
  auto s = with_faults("crash@300ms:1,restart@350ms:1,crash@400ms:2,restart@450ms:2,"
                       "crash-leader@600ms,restart-leader@650ms");
  s.fsync = std::chrono::milliseconds(5);
  uint64_t dropped = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    s.seed = seed;
    auto r = run_repl_simulation(s);
    EXPECT_TRUE(r.violations.empty()) << "seed " << seed << ": " << complaints(r);
    dropped += r.unsynced_lost;
  }
  EXPECT_GT(dropped, 0u);
}

TEST(repl_simulation,
     a_candidate_restarted_without_memory_leads_above_the_replicas_term) {
  // Replicas 1 and 2 promise term 2/2 while 3 is down; then 1 and 2 crash and
  // 1 and 3 come back with candidates that remember nothing. Candidate 3 wins
  // epoch 1, its replica (which last promised 1/3) starts a sync phase, and
  // replica 1 fences it with 2/2. The bridge must have candidate 3 lead above
  // epoch 2, or the acting leader never serves (found by seed 1048 of
  // random=4,loss=0.05,dup=0.05,delay=1ms..3ms).
  auto r = run_repl_simulation(with_faults(
      "crash@300ms:3,crash@600ms:1,crash@600ms:2,restart@700ms:1,restart@700ms:3"));
  EXPECT_TRUE(r.liveness_judged);
  EXPECT_TRUE(r.violations.empty()) << complaints(r);
  EXPECT_TRUE(r.recovery.has_value());
}

TEST(repl_simulation, five_replicas_survive_a_partition_and_crashes) {
  auto r = run_repl_simulation(with_faults(
      "partition@300ms-700ms:1-2|3-5,crash@500ms:5,restart@900ms:5,loss=0.05", 5));
  EXPECT_TRUE(r.violations.empty()) << complaints(r) << r.fault_list;
}

TEST(repl_simulation, seeded_random_faults_pass) {
  auto s = with_faults("random=4,loss=0.05,dup=0.05,delay=1ms..3ms,horizon=1s");
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    s.seed = seed;
    auto r = run_repl_simulation(s);
    EXPECT_TRUE(r.violations.empty())
        << "seed " << seed << ": " << complaints(r) << r.fault_list;
  }
}

TEST(repl_simulation, a_replica_down_past_a_checkpoint_catches_up_by_a_streamed_one) {
  // Replica 3 is down while the others commit and checkpoint every 10
  // records: it comes back behind the primary's checkpoint.
  auto s = with_faults("crash@200ms:3,restart@600ms:3");
  s.checkpoint_every = 10;
  uint64_t installs = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    s.seed = seed;
    auto r = run_repl_simulation(s);
    EXPECT_TRUE(r.violations.empty()) << "seed " << seed << ": " << complaints(r);
    EXPECT_GT(r.checkpoints, 0u);
    installs += r.installs;
  }
  EXPECT_GT(installs, 0u);
}

// -- meta-tests: broken fixtures must be caught -----------------------------

TEST(repl_simulation, an_install_that_keeps_the_old_state_is_caught) {
  auto s = with_faults("crash@200ms:3,restart@600ms:3");
  s.checkpoint_every = 10;
  s.bad_install = true;
  size_t caught = 0;
  for (uint64_t seed = 1; seed <= 10 && caught == 0; ++seed) {
    s.seed = seed;
    if (run_repl_simulation(s).safety_violated())
      ++caught;
  }
  EXPECT_GT(caught, 0u);
}

TEST(repl_simulation, a_primary_that_skips_the_sync_phase_is_caught) {
  auto s = with_faults("random=4,horizon=1s");
  s.skip_sync = true;
  size_t caught = 0;
  for (uint64_t seed = 1; seed <= 40 && caught == 0; ++seed) {
    s.seed = seed;
    if (run_repl_simulation(s).safety_violated())
      ++caught;
  }
  EXPECT_GT(caught, 0u);
}

TEST(repl_simulation, a_disk_that_acknowledges_before_it_is_durable_is_caught) {
  // Replica 1 is cut off; replicas 2 and 3 commit alone, then both crash at
  // once: what they had reported synced but not made durable is gone.
  auto s = with_faults("partition@300ms-700ms:1|2-3,crash@500ms:2,crash@500ms:3,"
                       "restart@550ms:2,restart@550ms:3");
  s.lying_disk = true;
  s.fsync = std::chrono::milliseconds(20);
  size_t caught = 0;
  for (uint64_t seed = 1; seed <= 20 && caught == 0; ++seed) {
    s.seed = seed;
    if (run_repl_simulation(s).safety_violated())
      ++caught;
  }
  EXPECT_GT(caught, 0u);
  // The honest disk under the same faults keeps every acked commit.
  s.lying_disk = false;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    s.seed = seed;
    auto r = run_repl_simulation(s);
    EXPECT_FALSE(r.safety_violated()) << "seed " << seed << ": " << complaints(r);
  }
}

// The history clients' operations are judged by the linearizability checker
// in every run: a quiet run gives it gets, puts, removes, enqueues and
// dequeues with answers, and it finds them linearizable.
TEST(repl_simulation, every_run_checks_the_history_clients_for_linearizability) {
  auto r = run_repl_simulation(with_faults(""));
  EXPECT_TRUE(r.violations.empty()) << complaints(r);
  EXPECT_GT(r.history_ops, 50u);
  EXPECT_EQ(r.history_undecided, 0u);
}

// A planted defect: replica fronts pass a primary's reads on without
// checking that their candidate acts. A primary cut off by a partition keeps
// serving its old state while the majority commits: the linearizability
// checker finds the stale read. The same run with the check in place passes.
TEST(repl_simulation, a_primary_that_reads_without_its_lease_is_caught) {
  auto s = with_faults("random=4,loss=0.02,dup=0.02,delay=1ms..3ms");
  s.reads_without_lease = true;
  // The first seed whose run plants a stale read (within 100 seeds).
  repl_run_report bad;
  bool stale_read = false;
  for (s.seed = 1; s.seed <= 100 && !stale_read; ++s.seed) {
    bad = run_repl_simulation(s);
    for (auto& v : bad.violations)
      stale_read = stale_read || v.checker == "linearizable";
  }
  --s.seed;
  ASSERT_TRUE(stale_read) << "no stale read planted in seeds 1..100";
  s.reads_without_lease = false;
  auto good = run_repl_simulation(s);
  EXPECT_TRUE(good.violations.empty()) << "seed " << s.seed << ": " << complaints(good);
}

// restart-leader means the same in every workload: the latest leader that
// crash-leader took and no restart-leader restarted yet. Two leaders crashed,
// then two restart-leaders: both nodes are back (the world workloads used to
// restart the second one twice and leave the first down for good).
TEST(repl_simulation, two_crashed_leaders_are_both_restarted) {
  auto s = with_faults("crash-leader@300ms,crash-leader@900ms,restart-leader@1500ms,"
                       "restart-leader@1600ms");
  for (s.seed = 1; s.seed <= 5; ++s.seed) {
    auto r = run_repl_simulation(s);
    EXPECT_TRUE(r.violations.empty()) << "seed " << s.seed << ": " << complaints(r);
    EXPECT_EQ(r.down_at_end, 0u) << "seed " << s.seed;
  }
  // Control: a crash nobody restarts shows.
  s = with_faults("crash-leader@300ms");
  EXPECT_EQ(run_repl_simulation(s).down_at_end, 1u);
}

// Found by the one world: a primary paused past its lease answered a read
// queued during the pause as soon as it resumed, before its candidate ran and
// saw the lease end: a stale read. The front now reads the lease's end from
// the board, against the candidate's clock.
TEST(repl_simulation, a_primary_resumed_after_its_lease_serves_no_stale_read) {
  auto s = with_faults("random=4,loss=0.02,dup=0.02,delay=1ms..3ms");
  s.checkpoint_every = 20;
  for (uint64_t seed : {14, 80, 120}) {
    s.seed = seed;
    auto r = run_repl_simulation(s);
    EXPECT_TRUE(r.violations.empty()) << "seed " << seed << "\n" << complaints(r);
  }
}

TEST(repl_simulation, on_the_memory_disk_fsync_loss_is_a_crash_that_loses_the_unsynced) {
  // The memory disk has no OS cache: a crash already loses what no completed
  // sync covered, so power loss and a crash give the same run.
  auto crash = with_faults("crash@400ms:1,restart@450ms:1,crash-leader@600ms");
  auto power = with_faults("fsync-loss@400ms:1,restart@450ms:1,crash-leader@600ms");
  for (auto* s : {&crash, &power}) {
    s->fsync = std::chrono::milliseconds(5);
    s->disk = disk_kind::memory;
  }
  auto a = run_repl_simulation(crash);
  auto b = run_repl_simulation(power);
  EXPECT_TRUE(b.violations.empty()) << complaints(b);
  EXPECT_NE(b.fault_list.find("fsync-loss@400ms:1"), std::string::npos) << b.fault_list;
  EXPECT_EQ(a.writes, b.writes);
  EXPECT_EQ(a.strong_acked, b.strong_acked);
  EXPECT_EQ(a.unsynced_lost, b.unsynced_lost);
  EXPECT_EQ(a.messages, b.messages);
}

TEST(repl_simulation, stalled_disks_hold_commits_and_a_crash_in_a_stall_loses_no_ack) {
  // The disks of two of three replicas stall for 400 ms: no majority can make
  // a commit durable meanwhile, so fewer writes are acknowledged than in the
  // same run without the stall; then the stalled primary crashes inside a
  // second stall, losing every record its disk held back, and no
  // acknowledged write goes with them.
  auto quiet = with_faults("");
  auto stalled = with_faults("disk-stall@300ms-700ms:1,disk-stall@300ms-700ms:2");
  for (auto* s : {&quiet, &stalled})
    s->fsync = std::chrono::milliseconds(2);
  auto q = run_repl_simulation(quiet);
  auto r = run_repl_simulation(stalled);
  EXPECT_TRUE(r.violations.empty()) << complaints(r);
  EXPECT_LT(r.strong_acked, q.strong_acked);
  EXPECT_GT(r.strong_acked, 0u);
  EXPECT_NE(r.fault_list.find("disk-stall@300ms-700ms:1"), std::string::npos);

  uint64_t lost_to_crashes = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    auto s = with_faults("disk-stall@300ms-800ms:1,disk-stall@300ms-800ms:2,"
                         "disk-stall@300ms-800ms:3,crash-leader@500ms,"
                         "restart-leader@900ms");
    s.fsync = std::chrono::milliseconds(2);
    s.seed = seed;
    auto x = run_repl_simulation(s);
    EXPECT_TRUE(x.violations.empty()) << "seed " << seed << ": " << complaints(x);
    EXPECT_EQ(x.lost, 0u);
    lost_to_crashes += x.unsynced_lost;
  }
  EXPECT_GT(lost_to_crashes, 0u); // the crash found records the stall held back
}

TEST(repl_simulation, a_stall_with_the_same_seed_replays_the_same_run) {
  auto s = with_faults("disk-stall@200ms-600ms:2,random=3,loss=0.02,horizon=1s");
  s.seed = 11;
  auto a = run_repl_simulation(s);
  auto b = run_repl_simulation(s);
  EXPECT_EQ(a.fault_list, b.fault_list);
  EXPECT_EQ(a.strong_acked, b.strong_acked);
  EXPECT_EQ(a.messages, b.messages);
  EXPECT_EQ(a.unsynced_lost, b.unsynced_lost);
  EXPECT_TRUE(a.violations.empty()) << complaints(a);
}
