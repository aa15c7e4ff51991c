// The jobs workload on the files disk: each node's data directory on a
// simulated disk, opened at every start by the node's own storage code, as in
// the replication workload. A power loss on the leader's disk in the middle
// of the jobs, a flipped bit found by a restart, and random power losses and
// bit flips lose no step state the store acknowledged (the jobs checkers
// pass) and every job still ends; the same seed gives the same run.
#include "runtime/sim/jobs_simulation.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace sim = conclave::sim;
namespace wf = conclave::workflow;

namespace disk_jobs {

sim::jobs_settings on_files(const std::string& spec, sim::jobs_shape shape = {}) {
  sim::jobs_settings s;
  s.shape = shape;
  s.disk = sim::disk_kind::files;
  auto p = sim::parse_fault_spec(spec, sim::workload::jobs);
  EXPECT_TRUE(p) << spec << ": " << (p ? "" : p.error());
  if (p)
    s.plan = p.value();
  EXPECT_TRUE(sim::validate(s.plan, shape, s.disk)) << spec;
  sim::complete_partitions(s.plan, sim::jobs_nodes(shape));
  return s;
}

std::string told(const sim::jobs_run_report& r) {
  std::string out = "faults " + r.fault_list;
  for (auto& v : r.violations)
    out += "\n  " + v.checker + ": " + v.what;
  if (!r.disks.first_refusal.empty())
    out += "\n  refused: " + r.disks.first_refusal;
  return out;
}

size_t not_final(const sim::jobs_run_report& r) {
  size_t n = 0;
  for (size_t s = 0; s < r.outcomes.size(); ++s)
    if (!wf::is_final(static_cast<wf::step_state>(s)))
      n += r.outcomes[s];
  return n;
}

size_t jobs_read(const sim::jobs_run_report& r) {
  size_t n = 0;
  for (auto k : r.outcomes)
    n += k;
  return n;
}

std::string describe(const sim::jobs_run_report& r) {
  std::ostringstream o;
  o << r.fault_list << ' ' << r.dispatches << ' ' << r.stale_replies << ' '
    << r.recoveries_deadline << ' ' << r.recoveries_failure << ' ' << r.messages << ' '
    << r.lost << ' ' << r.effects << ' ' << r.end.count() << ' ' << r.disks.power_losses
    << ' ' << r.disks.bitflips << ' ' << r.disks.heals << ' ' << r.disks.tails_cut << ' '
    << r.disks.refused_starts;
  for (auto n : r.outcomes)
    o << ' ' << n;
  for (auto& v : r.violations)
    o << '\n' << v.checker << ": " << v.what;
  return o.str();
}

} // namespace disk_jobs

TEST(jobs_disk_simulation, a_power_loss_on_the_leader_mid_job_loses_no_step_state) {
  // Bully makes node 3 (agent3) the leader: its supervisor acts, and its
  // replica is the store's primary. The power goes during its first sync
  // after 200 ms, while jobs run; it restarts 60 ms later from what its disk
  // kept, and the steps it had in flight are recovered.
  uint64_t losses = 0, recoveries = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    auto s = disk_jobs::on_files("fsync-loss@200ms:3,restart@260ms:agent3");
    s.seed = seed;
    auto r = sim::run_jobs_simulation(s);
    EXPECT_TRUE(r.violations.empty()) << "seed " << seed << ": " << disk_jobs::told(r);
    EXPECT_TRUE(r.liveness_judged) << "seed " << seed;
    EXPECT_EQ(disk_jobs::jobs_read(r), 4u)
        << "seed " << seed << ": " << disk_jobs::told(r);
    EXPECT_EQ(disk_jobs::not_final(r), 0u)
        << "seed " << seed << ": " << disk_jobs::told(r);
    EXPECT_EQ(r.disks.refused_starts, 0u)
        << "seed " << seed << ": " << disk_jobs::told(r);
    losses += r.disks.power_losses;
    recoveries += r.recoveries_deadline + r.recoveries_failure;
  }
  // The primary syncs every committed transaction: every armed power loss
  // struck during a sync, and some struck with steps in flight.
  EXPECT_EQ(losses, 10u);
  EXPECT_GT(recoveries, 0u);
}

TEST(jobs_disk_simulation, a_power_loss_on_the_memory_disk_is_a_crash) {
  // The memory disk keeps records, not bytes, and has no page cache: the
  // word crashes the node, counts no power loss, and the jobs still end.
  auto s = disk_jobs::on_files("fsync-loss@200ms:3,restart@260ms:agent3");
  s.disk = sim::disk_kind::memory;
  auto r = sim::run_jobs_simulation(s);
  EXPECT_TRUE(r.violations.empty()) << disk_jobs::told(r);
  EXPECT_EQ(r.disks.power_losses, 0u);
  EXPECT_EQ(disk_jobs::not_final(r), 0u) << disk_jobs::told(r);
}

TEST(jobs_disk_simulation, a_flipped_bit_heals_after_a_crash_and_restart) {
  uint64_t heals = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    // Node 1 is a secondary of the store; the flip lands in its synced log,
    // the restart finds it, moves the log aside and rebuilds it from the
    // peers.
    auto s =
        disk_jobs::on_files("bitflip@250ms:1,crash@250ms:agent1,restart@300ms:agent1");
    s.seed = seed;
    auto r = sim::run_jobs_simulation(s);
    EXPECT_TRUE(r.violations.empty()) << "seed " << seed << ": " << disk_jobs::told(r);
    EXPECT_EQ(r.disks.bitflips, 1u) << "seed " << seed;
    EXPECT_EQ(r.disks.refused_starts, 0u)
        << "seed " << seed << ": " << disk_jobs::told(r);
    EXPECT_EQ(disk_jobs::not_final(r), 0u)
        << "seed " << seed << ": " << disk_jobs::told(r);
    heals += r.disks.heals;
  }
  // A flip in a record (not in the zeros after the last one) is found by the
  // start and healed: most flips land in records.
  EXPECT_GE(heals, 6u);
}

TEST(jobs_disk_simulation, random_disk_faults_keep_every_invariant) {
  // A horizon of 600 ms (the window of faults and submissions): the logs hold
  // no synced byte in the first 160 ms or so, and a power loss strikes only
  // while the node syncs, so most drawn disk faults land while jobs write.
  const std::string spec = "random=6,loss=0.02,delay=1ms..3ms,horizon=600ms";
  uint64_t runs = 0, power = 0, flips = 0, heals = 0, judged = 0, processed = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    auto s = disk_jobs::on_files(spec);
    s.seed = seed;
    auto r = sim::run_jobs_simulation(s);
    EXPECT_TRUE(r.violations.empty())
        << "seed " << seed << ": " << disk_jobs::told(r)
        << "\nreplay: conclave sim --workload jobs --disk files --faults '" << spec
        << "' --runs 1 --seed " << seed;
    ++runs;
    power += r.disks.power_losses;
    flips += r.disks.bitflips;
    heals += r.disks.heals;
    judged += r.liveness_judged ? 1 : 0;
    processed += r.outcomes[static_cast<size_t>(wf::step_state::processed)];
  }
  // Coverage floors (about half of what these seeds reach: 29 power losses,
  // 30 bits flipped, 17 heals): power losses strike, flipped bits are found
  // and healed from the peers, and most runs are judged and finish jobs.
  EXPECT_GT(power, runs / 8) << "power losses";
  EXPECT_GT(flips, runs / 8) << "bit flips";
  EXPECT_GT(heals, runs / 20) << "heals";
  EXPECT_GT(judged, runs * 9 / 10) << "runs judged";
  EXPECT_GT(processed, runs) << "jobs processed";
}

TEST(jobs_disk_simulation, the_same_seed_gives_the_same_run_on_files) {
  auto s = disk_jobs::on_files("random=6,fsync-loss@200ms:2,restart@260ms:agent2");
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    s.seed = seed;
    auto a = disk_jobs::describe(sim::run_jobs_simulation(s));
    auto b = disk_jobs::describe(sim::run_jobs_simulation(s));
    ASSERT_EQ(a, b) << "seed " << seed;
  }
}

TEST(jobs_disk_simulation, a_stall_of_every_disk_holds_the_jobs_until_it_ends) {
  // From 20 ms to 700 ms no disk completes a write or a sync: the store
  // commits nothing (a commit needs a majority's sync), so no step state is
  // written and no job can end before 700 ms; once the stall ends the jobs
  // finish. The same seeds without the stall end well before.
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    auto calm = disk_jobs::on_files("");
    calm.seed = seed;
    auto c = sim::run_jobs_simulation(calm);
    for (auto disk : {sim::disk_kind::files, sim::disk_kind::memory}) {
      auto s = disk_jobs::on_files("disk-stall@20ms-700ms:1,disk-stall@20ms-700ms:2,"
                                   "disk-stall@20ms-700ms:3");
      s.seed = seed;
      s.disk = disk;
      auto r = sim::run_jobs_simulation(s);
      EXPECT_TRUE(r.violations.empty()) << "seed " << seed << ": " << disk_jobs::told(r);
      EXPECT_EQ(disk_jobs::jobs_read(r), 4u) << "seed " << seed;
      EXPECT_EQ(disk_jobs::not_final(r), 0u)
          << "seed " << seed << ": " << disk_jobs::told(r);
      // settle: from heal (the stall's end) to the last job's end.
      EXPECT_GT(r.settle, wf::duration{0})
          << "seed " << seed << ": " << disk_jobs::told(r);
      EXPECT_LT(c.settle, std::chrono::milliseconds(700)) << "seed " << seed;
      EXPECT_NE(r.fault_list.find("disk-stall@20ms-700ms:2"), std::string::npos)
          << r.fault_list;
    }
  }
}

TEST(jobs_disk_simulation,
     a_crash_during_a_stall_drops_only_what_was_never_acknowledged) {
  // The leader's disk (node 3: primary and acting supervisor) stalls while
  // jobs run; the node dies with its held syncs and comes back. What the
  // stall held was never acknowledged: no step state the store confirmed is
  // lost, and every job still ends. Node 2's disk stalls too, so that the
  // primary's commits wait for the stalled disks.
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    auto s = disk_jobs::on_files("disk-stall@60ms-400ms:3,disk-stall@100ms-300ms:2,"
                                 "crash@200ms:agent3,restart@260ms:agent3");
    s.seed = seed;
    auto r = sim::run_jobs_simulation(s);
    EXPECT_TRUE(r.violations.empty()) << "seed " << seed << ": " << disk_jobs::told(r);
    EXPECT_EQ(disk_jobs::not_final(r), 0u)
        << "seed " << seed << ": " << disk_jobs::told(r);
    EXPECT_EQ(r.disks.refused_starts, 0u) << "seed " << seed;
  }
}
