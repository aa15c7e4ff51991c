// The replication workload on the files disk: each node's data directory on a
// simulated disk, opened at every start by the node's own storage code (the
// WAL's recovery, the damaged-log healing, the term file and the promise
// record). Power losses during a sync, bit flips in a replica's log, and the
// random disk faults lose no acknowledged write and the replicas converge;
// a flipped bit heals from the peers, also on the old primary.
#include "runtime/sim/repl_simulation.hpp"
#include "runtime/sim/world_node_options.hpp"

#include <gtest/gtest.h>

using namespace conclave::sim;

namespace disk_runs {

repl_settings on_files(const std::string& spec, size_t replicas = 3) {
  repl_settings s;
  s.replicas = replicas;
  s.disk = disk_kind::files;
  auto plan = parse_fault_spec(spec, workload::replication);
  EXPECT_TRUE(plan) << spec << ": " << (plan ? "" : plan.error());
  if (plan)
    s.plan = plan.value();
  return s;
}

std::string told(const repl_run_report& r) {
  std::string out = "faults " + r.fault_list + "\n";
  for (auto& v : r.violations)
    out += v.checker + ": " + v.what + "\n";
  return out;
}

} // namespace disk_runs

TEST(repl_disk_simulation, a_power_loss_during_a_sync_loses_no_acknowledged_write) {
  uint64_t losses = 0, cut = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    auto s = disk_runs::on_files("fsync-loss@300ms:1,restart@400ms:1,fsync-loss@500ms:3,"
                                 "restart@650ms:3,fsync-loss@800ms:2,restart@900ms:2");
    s.seed = seed;
    auto r = run_repl_simulation(s);
    EXPECT_TRUE(r.violations.empty()) << "seed " << seed << "\n" << disk_runs::told(r);
    EXPECT_EQ(r.disks.refused_starts, 0u) << r.disks.first_refusal;
    losses += r.disks.power_losses;
    cut += r.disks.tails_cut;
  }
  // Every armed power loss struck during a sync (the nodes sync constantly
  // under the clients' writes), and some left a torn tail to cut.
  EXPECT_EQ(losses, 36u);
  EXPECT_GT(cut, 0u);
}

TEST(repl_disk_simulation, a_process_crash_keeps_what_was_written_a_power_loss_may_not) {
  // The same schedule, a kill -9 and a power loss of node 1: the runs differ
  // (the page cache keeps written records; the power loss tears them), and
  // both keep every acknowledged write.
  auto crash = disk_runs::on_files("crash@400ms:1,restart@450ms:1");
  auto power = disk_runs::on_files("fsync-loss@400ms:1,restart@450ms:1");
  auto a = run_repl_simulation(crash);
  auto b = run_repl_simulation(power);
  EXPECT_TRUE(a.violations.empty()) << disk_runs::told(a);
  EXPECT_TRUE(b.violations.empty()) << disk_runs::told(b);
  EXPECT_EQ(a.disks.power_losses, 0u);
  EXPECT_EQ(b.disks.power_losses, 1u);
}

TEST(repl_disk_simulation, a_flipped_bit_in_a_secondary_log_heals_from_the_peers) {
  uint64_t heals = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    // Bully makes node 3 the first primary: node 1 is a secondary.
    auto s = disk_runs::on_files("bitflip@400ms:1,crash@400ms:1,restart@450ms:1");
    s.seed = seed;
    auto r = run_repl_simulation(s);
    EXPECT_TRUE(r.violations.empty()) << "seed " << seed << "\n" << disk_runs::told(r);
    EXPECT_EQ(r.disks.bitflips, 1u);
    EXPECT_EQ(r.disks.refused_starts, 0u) << r.disks.first_refusal;
    heals += r.disks.heals;
  }
  // A flip in a record (not in the zeros after the last one) is found by the
  // start and healed: most flips land in records.
  EXPECT_GE(heals, 6u);
}

TEST(repl_disk_simulation, a_flipped_bit_in_the_old_primary_heals_after_a_failover) {
  uint64_t heals = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    auto s = disk_runs::on_files("bitflip@400ms:3,crash@400ms:3,restart@700ms:3", 3);
    s.checkpoint_every = 25;
    s.seed = seed;
    auto r = run_repl_simulation(s);
    EXPECT_TRUE(r.violations.empty()) << "seed " << seed << "\n" << disk_runs::told(r);
    EXPECT_GE(r.failovers(), 1u) << "seed " << seed;
    heals += r.disks.heals;
  }
  EXPECT_GE(heals, 6u);
}

// Found by the files disk: a bit flipped in the last record of a replica's
// log was read as a torn write and cut at its next start, though the record
// had been synced and acknowledged; that replica then formed a sync majority
// without it and an acknowledged write was lost. One flipped bit is now rot
// (log_scan.hpp): the start refuses, and the node heals from its peers.
TEST(repl_disk_simulation, a_flip_in_the_last_acknowledged_record_is_not_cut_as_torn) {
  struct replay {
    uint64_t seed;
    const char* faults;
    unsigned fsync_ms;
    uint64_t checkpoint_every;
  };
  for (auto [seed, faults, fsync_ms, every] :
       {replay{8777, "random=4,delay=1ms..5ms,horizon=1s", 10, 0},
        replay{4097, "random=8,horizon=1s", 5, 20}}) {
    // The seed that found it and the 19 after it (random= draws every word
    // now, so the seed alone no longer replays the run that found it).
    uint64_t flips = 0;
    for (auto n = seed; n < seed + 20; ++n) {
      auto s = disk_runs::on_files(faults);
      s.seed = n;
      s.fsync = std::chrono::milliseconds(fsync_ms);
      s.checkpoint_every = every;
      auto r = run_repl_simulation(s);
      EXPECT_FALSE(r.safety_violated()) << "seed " << n << "\n" << disk_runs::told(r);
      flips += r.disks.bitflips;
    }
    EXPECT_GT(flips, 2u) << "seeds " << seed << "+ flip too few bits";
  }
}

TEST(repl_disk_simulation, random_disk_faults_keep_every_acknowledged_write) {
  repl_run_report total;
  uint64_t runs = 0, flips = 0, power = 0, heals = 0, cut = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    auto s = disk_runs::on_files("random=10,loss=0.02,horizon=1s");
    s.checkpoint_every = seed % 2 == 0 ? 20 : 0;
    s.seed = seed;
    auto r = run_repl_simulation(s);
    EXPECT_TRUE(r.violations.empty()) << "seed " << seed << "\n" << disk_runs::told(r);
    ++runs;
    flips += r.disks.bitflips;
    power += r.disks.power_losses;
    heals += r.disks.heals;
    cut += r.disks.tails_cut;
  }
  EXPECT_GT(flips, runs / 2);
  EXPECT_GT(power, runs / 4);
  EXPECT_GT(heals, runs / 6);
  EXPECT_GT(cut, 0u);
}

// Found by the files disk: a replica healed from flipped bits promised a
// newer term than the primary that then streamed it a checkpoint; the replica
// dropped the stale stream without a word, so that primary never learned it
// was fenced and the replica never caught up. It now answers with its term.
TEST(repl_disk_simulation, a_replica_of_a_newer_term_fences_a_streaming_primary) {
  uint64_t flips = 0;
  for (uint64_t seed = 4594; seed < 4614; ++seed) {
    auto s = disk_runs::on_files("random=8,horizon=1s");
    s.seed = seed;
    s.fsync = std::chrono::milliseconds(5);
    s.checkpoint_every = 20;
    auto r = run_repl_simulation(s);
    EXPECT_TRUE(r.violations.empty()) << "seed " << seed << "\n" << disk_runs::told(r);
    flips += r.disks.bitflips;
  }
  EXPECT_GT(flips, 10u) << "seeds 4594+ flip too few bits";
}

// The planted defect: a node that moved its damaged log aside rejoins
// without the amnesia mark, so its empty log counts in sync majorities. The
// checkers catch it within the first 300 schedules of a flip-heavy mix; the
// same schedules with the mark pass.
TEST(repl_disk_simulation, a_replica_that_lost_its_log_and_counts_anyway_is_caught) {
  uint64_t caught = 0, first = 0;
  for (uint64_t seed = 1; seed <= 300 && caught == 0; ++seed) {
    auto s = disk_runs::on_files("random=8,horizon=1s");
    s.seed = seed;
    s.amnesia_unmarked = true;
    if (run_repl_simulation(s).safety_violated() && caught++ == 0)
      first = seed;
  }
  ASSERT_GT(caught, 0u) << "no checker noticed an unmarked replica with a lost log";
  auto s = disk_runs::on_files("random=8,horizon=1s");
  s.seed = first;
  auto r = run_repl_simulation(s);
  EXPECT_FALSE(r.safety_violated()) << disk_runs::told(r);
}

TEST(repl_disk_simulation, a_node_whose_storage_fails_leaves_and_the_failure_is_counted) {
  // What a replica host's on_failure does on the world: the node leaves at
  // once (as `conclave node` exits 1), and a failure on a disk that lost no
  // power is counted, for the report to name it as a defect.
  world w{2, 1, {}, {}, nullptr};
  for (auto id : w.ids())
    w.spawn(id, [](world&, node_id, uint32_t) {
      node_body b;
      b.receive = [](const caf::message&) {};
      return b;
    });
  auto disk = std::make_shared<world_node_disk>(disk_kind::files,
                                                std::chrono::milliseconds(2), false, 7);
  disk_counts counts;
  auto leave = leave_on_storage_failure(w, node_id{1}, disk, counts);
  leave("a log sync failed");
  w.run_until(timestamp{std::chrono::milliseconds(1)});
  EXPECT_FALSE(w.alive(node_id{1}));
  EXPECT_TRUE(w.alive(node_id{2}));
  EXPECT_EQ(counts.storage_failures, 1u);
  EXPECT_EQ(counts.first_storage_failure, "node 1: a log sync failed");
  disk_counts sum;
  sum.add(counts, 42);
  EXPECT_EQ(sum.first_storage_failure, "seed 42: node 1: a log sync failed");
}
