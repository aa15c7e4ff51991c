// Randomized schedules of the fault mixes an outside sweep used (issue 11), run
// in CI: wide delays within the documented envelope, flapping partitions, long
// pauses, heavy duplication, preempt with and without the quorum guard, pre-vote
// under flapping partitions. Every run must keep safety AND liveness (a stable
// leader after healing, no election storm). A failure prints the command that
// replays it.
//
// Mixes that failed on issue 11's defects 1 to 4 and the guarded long pauses
// run here too.
#include "runtime/sim/simulation.hpp"

#include <gtest/gtest.h>

#include <iostream>
#include <sstream>

using namespace std::chrono_literals;
namespace sim = conclave::sim;
namespace el = conclave::election;

namespace {

struct mix {
  const char* name;
  const char* spec; ///< --faults
  bool guard = false;
  bool preempt = false;
};

sim::sim_settings make(const mix& m, el::algorithm algo, size_t n, uint64_t seed) {
  sim::sim_settings s;
  s.config.algo = algo;
  s.config.preempt = m.preempt;
  if (m.guard) {
    s.config.guard.enabled = true;
    s.config.guard.lease = 100ms;
    s.config.guard.max_clock_drift = 10ms;
    s.config.detector.timeout = 150ms;
  }
  s.nodes = n;
  s.plan = sim::parse_fault_spec(m.spec).value();
  s.seed = seed;
  return s;
}

/// Flapping partitions: `k` random two-way splits, each 50-150 ms, 20-80 ms
/// apart, from 300 ms on.
void add_flapping(sim::fault_plan& plan, size_t n, uint64_t seed, int k) {
  std::mt19937_64 rng{seed * 7919};
  auto ms = [&](int lo, int hi) {
    return std::chrono::milliseconds{std::uniform_int_distribution<int>{lo, hi}(rng)};
  };
  sim::timestamp t = 300ms;
  for (int i = 0; i < k; ++i) {
    sim::fault f;
    f.what = sim::fault::kind::partition;
    f.at = t;
    f.until = t + ms(50, 150);
    f.groups.resize(2);
    for (uint64_t id = 1; id <= n; ++id)
      f.groups[std::uniform_int_distribution<int>{0, 1}(rng)].push_back(el::node_id{id});
    plan.faults.push_back(f);
    t = f.until + ms(20, 80);
  }
}

std::string replay(const mix& m, el::algorithm algo, const sim::sim_settings& s) {
  std::ostringstream o;
  o << "conclave sim --algorithm " << el::to_string(algo) << " --nodes " << s.nodes
    << " --runs 1 --seed " << s.seed << " --faults '" << m.spec << "'"
    << (m.guard ? " --guard" : "") << (m.preempt ? " --preempt" : "");
  return o.str();
}

const std::vector<el::algorithm> both{el::algorithm::bully, el::algorithm::ring};

/// Runs `seeds` schedules of the mix for each algorithm; returns the failures.
std::vector<std::string> sweep(const mix& m, uint64_t seeds, int flaps = 0,
                               const std::vector<el::algorithm>& algos = both) {
  std::vector<std::string> failures;
  for (auto algo : algos) {
    for (uint64_t seed = 1; seed <= seeds; ++seed) {
      auto s = make(m, algo, 3 + seed % 5, seed);
      if (flaps > 0)
        add_flapping(s.plan, s.nodes, seed, flaps);
      auto r = sim::run_simulation(s);
      if (r.safety_violations == 0 && r.liveness_ok)
        continue;
      failures.push_back(replay(m, algo, s) + (flaps > 0 ? " (+ flapping)" : "") + ": "
                         + (r.violations.empty() ? "?" : r.violations.back()));
    }
  }
  return failures;
}

std::string first(const std::vector<std::string>& f) {
  std::string out = std::to_string(f.size()) + " failing run(s)";
  for (size_t i = 0; i < f.size() && i < 5; ++i)
    out += "\n  " + f[i];
  return out;
}

} // namespace

TEST(fault_mixes, wide_delays_within_the_envelope_keep_safety_and_liveness) {
  for (bool guard : {false, true}) {
    mix m{"wide delays", "random=4,delay=1ms..15ms", guard};
    auto f = sweep(m, 150);
    EXPECT_TRUE(f.empty()) << first(f);
  }
}

TEST(fault_mixes, flapping_partitions_keep_safety_and_liveness) {
  for (bool guard : {false, true}) {
    mix m{"flapping", "delay=1ms..3ms", guard};
    auto f = sweep(m, 150, 12);
    EXPECT_TRUE(f.empty()) << first(f);
  }
}

TEST(fault_mixes, long_pauses_keep_safety_and_liveness) {
  mix m{"long pauses", "pause-leader@500ms-2500ms,pause@1s-3s:2,random=2", false};
  auto f = sweep(m, 150);
  EXPECT_TRUE(f.empty()) << first(f);
}

TEST(fault_mixes, heavy_duplication_and_loss_keep_safety_and_liveness) {
  for (bool guard : {false, true}) {
    mix m{"heavy duplication", "random=4,dup=0.3,loss=0.05,delay=1ms..4ms", guard};
    auto f = sweep(m, 150);
    EXPECT_TRUE(f.empty()) << first(f);
  }
}

TEST(fault_mixes, preempt_without_the_guard_keeps_safety_and_liveness) {
  mix m{"preempt", "random=4,delay=1ms..4ms", false, true};
  auto f = sweep(m, 150);
  EXPECT_TRUE(f.empty()) << first(f);
}

// -- issue 11's protocol defects, fixed: these failed before the fixes ----------

TEST(fault_mixes, preempt_with_the_guard_produces_an_acting_leader) {
  // Defect 2: the preempting higher id cannot collect a majority before its
  // quorum-lost step-down; no leader ever acts, even without faults. (With
  // random faults most runs recover by chance: random=4 fails 2 runs in 100.)
  mix m{"preempt + guard", "", true, true};
  auto f = sweep(m, 50);
  EXPECT_TRUE(f.empty()) << first(f);
}

TEST(fault_mixes, long_pauses_with_the_guard_keep_a_leader) {
  // Seen: ring n=4 seed 21. After healing, node 4 takes over from the acting
  // node 3, cannot get its lease granted while the followers' promises to 3
  // last (lease + drift), steps down on quorum loss ~150 ms later, and the
  // cycle repeats every ~260 ms (epoch +2 each time) until the run ends: the
  // livelock of defect 1 with the promise window of defect 2.
  mix m{"long pauses + guard", "pause-leader@500ms-2500ms,pause@1s-3s:2,random=2", true};
  auto f = sweep(m, 150);
  EXPECT_TRUE(f.empty()) << first(f);
}

TEST(fault_mixes, ring_survives_one_way_delays_above_20ms) {
  // Defect 3: a round trip longer than twice the hop timeout multiplied Ring's
  // election messages (before the fix, at n >= 5 a run did not finish in
  // 100 s). Two small runs.
  mix m{"ring delay", "delay=21ms..25ms", false};
  auto f = sweep(m, 2, 0, {el::algorithm::ring});
  EXPECT_TRUE(f.empty()) << first(f);
}

TEST(fault_mixes, ring_never_livelocks_after_random_faults) {
  // Defect 1: after healing, the second-highest id leads for ~1 ms, then
  // everyone adopts a term naming the highest id, which never takes it up; it
  // repeats every ~150 ms, epoch +2 each time. Seen before the Ring fix: ring
  // n=3 seed 129, n=5 seeds 204 and 844 of `random=5,loss=0.3 --guard`. The
  // last of 400 to fail, n=5 seed 212: the highest id missed the announcement
  // naming it, its own older round was dropped as stale, and its long round
  // timeout blocked every other round (ring.test.cpp,
  // a_member_that_drops_a_stale_round_tells_its_initiator_the_term).
  mix m{"ring random lossy", "random=5,loss=0.3", true};
  auto f = sweep(m, 400, 0, {el::algorithm::ring});
  EXPECT_TRUE(f.empty()) << first(f);
}

TEST(fault_mixes, pre_vote_under_flapping_partitions_keeps_safety_liveness_and_leaders) {
  // Issue 12: with the guard, pre-vote keeps candidates cut off by a flap from
  // raising their epochs, so they cannot depose a healthy leader when the flap
  // ends. Counted over the sweep, against the same schedules without pre-vote.
  uint64_t needless[2] = {0, 0};
  std::vector<std::string> failures;
  for (bool pre_vote : {true, false}) {
    mix m{"flapping + guard", "delay=1ms..3ms", true};
    for (auto algo : both) {
      for (uint64_t seed = 1; seed <= 60; ++seed) {
        auto s = make(m, algo, 3 + seed % 5, seed);
        s.config.pre_vote = pre_vote;
        add_flapping(s.plan, s.nodes, seed, 12);
        auto r = sim::run_simulation(s);
        needless[pre_vote ? 0 : 1] += r.needless_leader_changes;
        if (pre_vote && (r.safety_violations > 0 || !r.liveness_ok))
          failures.push_back(replay(m, algo, s) + " (+ flapping): "
                             + (r.violations.empty() ? "?" : r.violations.back()));
      }
    }
  }
  EXPECT_TRUE(failures.empty()) << first(failures);
  EXPECT_EQ(needless[0], 0u) << "needless leader changes with pre-vote";
  EXPECT_GT(needless[1], 0u) << "the schedules should show needless changes without it";
  std::cout << "needless leader changes in 120 flapping runs: " << needless[0]
            << " with pre-vote, " << needless[1] << " without\n";
}

TEST(fault_mixes, the_guard_keeps_a_leader_acting_with_round_trips_above_50ms) {
  // Defect 4: rounds every heartbeat interval (50 ms) renewed the 100 ms lease
  // only while round trips stayed below 50 ms; with these (52-60 ms) the leader
  // acted ~80% of the time, at a fixed 49 ms one-way delay liveness failed.
  // Now a guarded leader brings its rounds forward as the measured round trip
  // grows (guard_renewal_interval).
  for (auto spec : {"delay=26ms..30ms", "delay=40ms..44ms"}) {
    mix m{"guard delay", spec, true};
    auto f = sweep(m, 4);
    EXPECT_TRUE(f.empty()) << first(f);
  }
}

TEST(fault_mixes, the_attack_mix_keeps_safety_and_liveness) {
  // The lead's attack run on issue 11 (`random=6,loss=0.05,dup=0.05,
  // delay=1ms..15ms`, 3,000 runs): Ring with the guard had no leader for 3 s
  // after healing in 2 runs (n = 5 seed 900808, n = 7 seed 900123: dead rounds
  // swallowing every lower round by extinction until their long round
  // timeouts; tests/election_liveness replays both).
  for (bool guard : {false, true}) {
    mix m{"attack", "random=6,loss=0.05,dup=0.05,delay=1ms..15ms", guard};
    auto f = sweep(m, 600);
    EXPECT_TRUE(f.empty()) << first(f);
  }
}

TEST(fault_mixes, wide_delays_up_to_30ms_with_loss_and_duplication_keep_liveness) {
  // The lead's sweeps of issue 11 with one-way delays up to 30 ms (well inside
  // the guard's 90 ms round-trip budget) and with 20 % duplication: Ring failed
  // liveness in 3 + 3 + 1 of 3,000 runs each (tests/election_liveness replays
  // the seeds). 300 schedules per algorithm and setting here.
  for (bool guard : {false, true}) {
    mix m{"wide delays 30", "random=6,loss=0.05,dup=0.05,delay=1ms..30ms", guard};
    auto f = sweep(m, 300);
    EXPECT_TRUE(f.empty()) << first(f);
  }
  mix d{"dup 0.2", "random=6,loss=0.05,dup=0.2,delay=1ms..15ms", true};
  auto f = sweep(d, 300);
  EXPECT_TRUE(f.empty()) << first(f);
}

TEST(fault_mixes, non_transitive_cuts_with_random_faults_keep_safety_and_liveness) {
  // Links that fail one at a time: node 1 cannot reach node 3 (the leader at
  // n = 3) nor node 3 node 1 for 3 s, while each reaches everyone else; random
  // crashes, pauses and partitions on top (tests/election_liveness has the
  // cut alone and what it must not disturb).
  for (bool guard : {false, true}) {
    mix m{"non-transitive cut",
          "cut@300ms-3300ms:1>3,cut@300ms-3300ms:3>1,random=4,loss=0.02,delay=1ms..10ms",
          guard};
    auto f = sweep(m, 300);
    EXPECT_TRUE(f.empty()) << first(f);
  }
}
