// Each liveness defect of issue 11 as the `conclave sim` run that showed it, driven
// through the simulation API (runtime/sim/simulation.hpp). Every test here failed
// before its fix; the cheaper, mechanism-level tests sit beside the cores
// (protocols/election/*.test.cpp).
#include "runtime/sim/simulation.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
namespace sim = conclave::sim;
namespace el = conclave::election;

namespace {

/// The settings `conclave sim` uses for these flags.
sim::sim_settings settings(el::algorithm algo, size_t n, const char* spec, uint64_t seed,
                           bool guard = false, bool preempt = false) {
  sim::sim_settings s;
  s.config.algo = algo;
  s.config.guard.enabled = guard;
  s.config.preempt = preempt;
  s.nodes = n;
  auto plan = sim::parse_fault_spec(spec);
  EXPECT_TRUE(plan) << plan.error();
  s.plan = plan.value();
  s.seed = seed;
  return s;
}

std::string what_failed(const sim::run_report& r) {
  std::string out;
  for (auto& v : r.violations)
    out += v + "\n";
  return out;
}

} // namespace

// conclave sim --algorithm ring --faults 'random=5' --nodes 3 --runs 1 --seed 3756
TEST(election_liveness, ring_settles_after_the_faults_of_seed_3756_heal) {
  auto r = sim::run_simulation(settings(el::algorithm::ring, 3, "random=5", 3756));
  EXPECT_TRUE(r.liveness_ok) << what_failed(r);
  EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
}

// conclave sim --algorithm bully --nodes 5 --runs 1 --seed 1 --guard --preempt, and
// the same for Ring at n = 2..5 and Bully at n = 4..6 (every one failed).
TEST(election_liveness, guard_with_preempt_produces_an_acting_leader) {
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    for (size_t n = 2; n <= 6; ++n) {
      auto r = sim::run_simulation(settings(algo, n, "", 1, /*guard=*/true,
                                            /*preempt=*/true));
      EXPECT_TRUE(r.liveness_ok) << el::to_string(algo) << " n=" << n << "\n"
                                 << what_failed(r);
      EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
      EXPECT_EQ(r.elections.size(), 1u) << el::to_string(algo) << " n=" << n;
    }
  }
}

TEST(election_liveness, guard_with_preempt_survives_random_faults) {
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      auto r = sim::run_simulation(settings(algo, 5, "random=5", seed, true, true));
      EXPECT_TRUE(r.liveness_ok) << el::to_string(algo) << " seed " << seed << "\n"
                                 << what_failed(r);
      EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
    }
  }
}

// conclave sim --algorithm ring --nodes 3 --faults delay=21ms (228,452 messages,
// epoch 1,046), and the same at 25 ms and 60 ms for n = 3, 5, 9.
TEST(election_liveness, ring_with_a_slow_network_elects_once_without_a_storm) {
  for (auto spec : {"delay=21ms", "delay=25ms", "delay=60ms"}) {
    for (size_t n : {3, 5, 9}) {
      auto r = sim::run_simulation(settings(el::algorithm::ring, n, spec, 1));
      EXPECT_TRUE(r.liveness_ok) << spec << " n=" << n << "\n" << what_failed(r);
      EXPECT_EQ(r.elections.size(), 1u) << spec << " n=" << n;
      EXPECT_EQ(r.leader_changes, 0u) << spec << " n=" << n;
      // One election (at most 2n(n-1) tries of tokens and announcements, as many
      // acks) plus heartbeats and their acks for the rest of the run.
      auto beats = 2 * (n - 1) * static_cast<uint64_t>(r.end / 50ms + 1);
      EXPECT_LE(r.messages_sent, 4 * n * (n - 1) * 2 + beats) << spec << " n=" << n;
    }
  }
}

// The lead's attack run (`--algorithm ring --guard --nodes 3,5,7 --runs 1000
// --seed 900000 --faults 'random=6,loss=0.05,dup=0.05,delay=1ms..15ms'`): Ring
// with the guard had no leader for 3 s after every fault healed. Seed 900808
// (n = 5): a dead round of the highest id swallowed every lower round until its
// 3.7 s round timeout (extinction without end). Seed 900123 (n = 7): a resumed
// successor's burst of late acks stretched a member's hop timeout to the 2 s cap,
// and its dead round swallowed every lower one for the rest of the run.
TEST(election_liveness, ring_with_the_guard_settles_after_the_faults_of_the_attack_run) {
  for (auto [n, seed] : {std::pair<size_t, uint64_t>{5, 900808}, {7, 900123}}) {
    auto r = sim::run_simulation(settings(el::algorithm::ring, n,
                                          "random=6,loss=0.05,dup=0.05,delay=1ms..15ms",
                                          seed, /*guard=*/true));
    EXPECT_TRUE(r.liveness_ok) << "seed " << seed << "\n" << what_failed(r);
    EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
    EXPECT_GT(r.leader_time_fraction_after_heal, 0.5) << "seed " << seed;
  }
}

// Every candidate alone for 5.5 s with the guard: each pre-vote round failed and
// doubled the next one's window (up to 64 x election_wait = 9.6 s), and after the
// heal nobody asked again until the first window ended: no leader within the
// bound, Bully and Ring alike (found while attacking the Ring fix above). The
// request now goes again every election_wait within a window.
TEST(election_liveness, a_long_partition_of_everyone_heals_into_a_leader_with_the_guard) {
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      auto r = sim::run_simulation(
          settings(algo, 5, "partition@500ms-6s:1|2|3|4|5", seed, /*guard=*/true));
      EXPECT_TRUE(r.liveness_ok) << el::to_string(algo) << " seed " << seed << "\n"
                                 << what_failed(r);
      EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
    }
  }
}

// Issue 11, "Detecting a silent leader": on a loaded host a node's process
// stalls for tens of milliseconds at a time (its timers fire late, what its
// peers sent waits in its sockets). The fast node profile (heartbeat 10 ms,
// phi with a 50 ms floor, lease 33 ms) must not let such stalls, of a follower
// or of the leader itself, shorter than the detector floor, replace a healthy
// leader; and random faults with stalls mixed in must still settle.
namespace {

sim::sim_settings fast_profile(el::algorithm algo, const std::string& spec,
                               uint64_t seed) {
  auto s = settings(algo, 5, spec.c_str(), seed, /*guard=*/true);
  s.config.heartbeat_interval = 10ms;
  s.config.detector.kind = el::detector_kind::phi;
  s.config.detector.timeout = 50ms;
  s.config.guard.lease = 33ms;
  return s;
}

/// `count` stalls of `who` ("2", or "leader"), `length` ms each, one every
/// `every` ms from 1 s on.
std::string stalls(const std::string& who, int count, int length, int every) {
  std::string spec;
  for (int i = 0; i < count; ++i) {
    auto from = 1000 + i * every;
    auto kind = who == "leader" ? std::string{"pause-leader@"} : std::string{"pause@"};
    spec += (spec.empty() ? "" : ",") + kind + std::to_string(from) + "ms-"
            + std::to_string(from + length) + "ms"
            + (who == "leader" ? std::string{} : ":" + who);
  }
  return spec;
}

} // namespace

TEST(election_liveness, stalls_shorter_than_the_detector_floor_replace_no_leader) {
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    // A leader stall plus the heartbeat interval it may start in must stay
    // below the 50 ms floor, or the silence is real for everyone: 35 ms.
    for (auto who : {"2", "4", "leader"}) {
      auto length = std::string{who} == "leader" ? 35 : 40;
      auto r = sim::run_simulation(fast_profile(algo, stalls(who, 20, length, 150), 1));
      EXPECT_TRUE(r.liveness_ok) << el::to_string(algo) << " " << who << "\n"
                                 << what_failed(r);
      EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
      EXPECT_EQ(r.elections.size(), 1u) << el::to_string(algo) << " stalls of " << who;
      EXPECT_EQ(r.leader_changes, 0u) << el::to_string(algo) << " stalls of " << who;
    }
  }
}

TEST(election_liveness, random_faults_with_stalling_nodes_settle) {
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      auto spec =
          "random=5," + stalls("3", 10, 40, 170) + "," + stalls("leader", 5, 45, 330);
      auto r = sim::run_simulation(fast_profile(algo, spec, seed));
      EXPECT_TRUE(r.liveness_ok) << el::to_string(algo) << " seed " << seed << "\n"
                                 << what_failed(r);
      EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
    }
  }
}

// The lead's sweeps of issue 11 (3,000 runs each: `--nodes 3,5,7,9 --runs 750
// --seed 900000`), Ring, the attack mix with one-way delays up to 30 ms (with
// and without the guard) and with 20% duplication (guard). Each seed failed
// liveness before: 900400 (a retried token dropped as a copy: hop duplicates
// were judged by the sender's highest hop only), 900547 (a member took its
// own 400 ms stall as its first round trip), 900029 and 900645 (the first
// round-trip sample, from a successor resumed after a pause, was not
// clamped), 900646 (the guarded leader spaced its rounds for a round trip
// shorter than the network had shown and stopped acting), 900238 and 900127
// (same causes; fixed with them). 900606 (n = 9) was listed too but no longer
// failed on this tree before these fixes; it stays as a replay. ring.test.cpp
// and guard_timing's comments name the core test of each cause.
TEST(election_liveness, ring_settles_after_the_faults_of_the_wide_delay_and_dup_sweeps) {
  constexpr auto delay30 = "random=6,loss=0.05,dup=0.05,delay=1ms..30ms";
  constexpr auto dup20 = "random=6,loss=0.05,dup=0.2,delay=1ms..15ms";
  struct seed_case {
    size_t n;
    uint64_t seed;
    bool guard;
    const char* spec;
  };
  for (auto c :
       {seed_case{3, 900547, true, delay30}, seed_case{3, 900646, true, delay30},
        seed_case{7, 900400, true, delay30}, seed_case{9, 900606, true, delay30},
        seed_case{7, 900029, false, delay30}, seed_case{7, 900645, false, delay30},
        seed_case{9, 900238, false, delay30}, seed_case{7, 900127, true, dup20}}) {
    auto r =
        sim::run_simulation(settings(el::algorithm::ring, c.n, c.spec, c.seed, c.guard));
    EXPECT_TRUE(r.liveness_ok) << "seed " << c.seed << " n=" << c.n << "\n"
                               << what_failed(r);
    EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
  }
}

// A non-transitive partition: one follower (node 1) cannot reach the leader
// (the highest id) in either direction but reaches everyone else, for 19.5 s.
// With the guard, the follower's pre-votes are refused by the peers that still
// hear the leader, so the first leader keeps acting through the cut: one leader
// task, no leader change, no new epoch forced on it, no split brain. (Without
// the guard, Ring re-elects the same leader in a new term every ~550 ms while
// the cut lasts, docs/design/election.md "Non-transitive partitions"; Bully does not.)
TEST(election_liveness, a_follower_cut_off_from_the_leader_alone_does_not_disturb_it) {
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    for (size_t n : {3, 5}) {
      auto top = std::to_string(n);
      auto spec = "cut@500ms-20s:1>" + top + ",cut@500ms-20s:" + top
                  + ">1,loss=0.01,delay=1ms..5ms";
      for (uint64_t seed = 1; seed <= 10; ++seed) {
        auto r = sim::run_simulation(settings(algo, n, spec.c_str(), seed, true));
        auto what = std::string{el::to_string(algo)} + " n=" + top + " seed "
                    + std::to_string(seed);
        EXPECT_TRUE(r.liveness_ok) << what << "\n" << what_failed(r);
        EXPECT_EQ(r.safety_violations, 0u) << what << "\n" << what_failed(r);
        EXPECT_EQ(r.leader_task_starts, 1u) << what;
        EXPECT_EQ(r.leader_changes, 0u) << what;
        EXPECT_EQ(r.needless_leader_changes, 0u) << what;
        EXPECT_EQ(r.split_brain_windows, 0u) << what;
      }
    }
  }
}

// conclave sim --algorithm ring --preempt --nodes 64 --runs 1 --seed 4 --faults
// 'random=30,loss=0.05,delay=1ms..5ms' (and seed 7 with --guard): the highest
// id restarted its preempting round on every heartbeat of the lower leader (a
// new token replaced the one under way), and a round of 128 hops never
// finished within a 50 ms heartbeat interval: no leader after the heal.
TEST(election_liveness, ring_preempting_at_64_candidates_finishes_its_round) {
  constexpr auto spec = "random=30,loss=0.05,delay=1ms..5ms";
  for (auto [seed, guard] : {std::pair<uint64_t, bool>{4, false}, {7, true}}) {
    auto r = sim::run_simulation(
        settings(el::algorithm::ring, 64, spec, seed, guard, /*preempt=*/true));
    EXPECT_TRUE(r.liveness_ok) << "seed " << seed << "\n" << what_failed(r);
    EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
  }
}

// conclave sim --algorithm ring --nodes 16 --seed 106 --faults
// 'random=20,loss=0.3,dup=0.1,delay=1ms..20ms': under 30 % loss the hop
// timeouts grew to 170-490 ms, and a member in a round whose token died
// dropped every lower round for 2n hop timeouts (5-15 s): no round finished
// within the liveness bound. Extinction now lasts 2n measured round trips.
TEST(election_liveness, ring_under_heavy_loss_at_16_candidates_settles) {
  auto r = sim::run_simulation(settings(
      el::algorithm::ring, 16, "random=20,loss=0.3,dup=0.1,delay=1ms..20ms", 106));
  EXPECT_TRUE(r.liveness_ok) << what_failed(r);
  EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
}

// The quorum guard at the default settings on a slow, lossy network: one-way
// delays of 100 ms (200 ms round trips, twice the fixed 100 ms lease) with 10 %
// loss and random faults. With a fixed lease every run failed (the leader
// acted in bursts at best and stepped down); the lease now follows the
// measured round trip (docs/design/election.md, "Adaptive lease").
// conclave sim --guard --nodes 5 --faults 'random=10,loss=0.1,delay=100ms' --runs 20
TEST(election_liveness, the_guard_settles_at_100ms_one_way_with_10_percent_loss) {
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      auto r = sim::run_simulation(
          settings(algo, 5, "random=10,loss=0.1,delay=100ms", seed, /*guard=*/true));
      EXPECT_TRUE(r.liveness_ok) << el::to_string(algo) << " seed " << seed << "\n"
                                 << what_failed(r);
      EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
    }
  }
}
