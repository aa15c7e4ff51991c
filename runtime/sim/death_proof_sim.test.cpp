// Proofs of death in the simulated world (docs/design/election.md, "Proofs of
// death"): a crash sends each peer the proof of the crashed incarnation
// through the network; a pause, partition or cut sends nothing. Random fault
// schedules of crashes, restarts, pauses and partitions keep safety with the
// proofs on; a crash of the leader fails over faster; and the planted defect
// (a pause taken for a death) is caught by the safety checker.
#include "runtime/sim/simulation.hpp"

#include <gtest/gtest.h>

#include <sstream>

using namespace std::chrono_literals;
namespace sim = conclave::sim;
namespace el = conclave::election;

namespace {

sim::sim_settings make(el::algorithm algo, const std::string& spec, size_t n,
                       uint64_t seed, bool proofs) {
  sim::sim_settings s;
  s.config.algo = algo;
  s.config.guard.enabled = true;
  s.config.guard.death_proof = proofs;
  s.nodes = n;
  s.plan = sim::parse_fault_spec(spec).value();
  sim::complete_partitions(s.plan, n);
  s.seed = seed;
  return s;
}

std::string replay(el::algorithm algo, const sim::sim_settings& s,
                   const std::string& spec) {
  std::ostringstream o;
  o << "conclave sim --algorithm " << el::to_string(algo) << " --nodes " << s.nodes
    << " --runs 1 --seed " << s.seed << " --faults '" << spec
    << "' --guard --death-proof";
  return o.str();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

TEST(death_proof_sim, random_crashes_pauses_and_partitions_keep_safety) {
  const std::string spec = "random=8,loss=0.02,delay=1ms..5ms";
  std::vector<std::string> failures;
  for (auto algo : {el::algorithm::bully, el::algorithm::ring})
    for (uint64_t seed = 1; seed <= 150; ++seed) {
      auto s = make(algo, spec, 3 + seed % 5, seed, true);
      auto r = sim::run_simulation(s);
      if (r.safety_violations != 0 || !r.liveness_ok)
        failures.push_back(replay(algo, s, spec) + ": "
                           + (r.violations.empty() ? "?" : r.violations.back()));
    }
  EXPECT_TRUE(failures.empty()) << failures.size() << " failing, first: " << failures[0];
}

TEST(death_proof_sim, a_crashed_leader_is_replaced_without_its_lease_wait) {
  std::vector<double> with, without;
  for (uint64_t seed = 1; seed <= 20; ++seed)
    for (bool proofs : {true, false}) {
      auto s = make(el::algorithm::bully, "crash-leader@1s", 5, seed, proofs);
      auto r = sim::run_simulation(s);
      ASSERT_EQ(r.safety_violations, 0u);
      for (auto& e : r.elections)
        if (!e.startup)
          (proofs ? with : without)
              .push_back(std::chrono::duration<double, std::milli>(e.latency).count());
    }
  ASSERT_FALSE(with.empty());
  ASSERT_FALSE(without.empty());
  // A pre-vote, an election and one heartbeat round at 1 ms per hop, against
  // the rest of a 100 ms lease.
  EXPECT_LT(median(with), 20.0);
  EXPECT_GT(median(without), median(with) + 30.0);
}

TEST(death_proof_sim, a_pause_taken_for_a_death_is_caught) {
  // The leader stops for 30 ms: with the defect its peers elect and act at
  // once, and it resumes inside its lease.
  const std::string spec = "pause-leader@1s-1030ms";
  uint64_t violations = 0, safe_violations = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    auto s = make(el::algorithm::bully, spec, 5, seed, true);
    safe_violations += sim::run_simulation(s).safety_violations;
    s.unsafe_silence_proofs = true;
    violations += sim::run_simulation(s).safety_violations;
  }
  EXPECT_EQ(safe_violations, 0u);
  EXPECT_GT(violations, 0u);
}

// The chaos bench's slow SIGKILL rounds: a higher follower stopped (SIGSTOP)
// when the leader dies. The leader's heartbeats named it silent, so the Bully
// round does not wait answer_timeout for it: the failover costs what it costs
// with a lower follower stopped. `pause@1s-3s:4` stops node 4 of 5 (the
// leader is 5).
TEST(death_proof_sim, a_stopped_higher_follower_does_not_slow_a_failover) {
  // From the crash to the first new leader acting.
  auto failover_ms = [](const std::string& spec, uint64_t seed) {
    auto s = make(el::algorithm::bully, spec, 5, seed, true);
    s.record_timeline = true;
    auto r = sim::run_simulation(s);
    EXPECT_EQ(r.safety_violations, 0u) << spec << " seed " << seed;
    auto crash = el::timestamp{1500ms};
    for (auto& e : r.timeline)
      if (e.at >= crash && e.what == "acting_started")
        return std::chrono::duration<double, std::milli>(e.at - crash).count();
    ADD_FAILURE() << "no leader acted after the crash: " << spec << " seed " << seed;
    return 1e9;
  };
  std::vector<double> higher, lower;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    higher.push_back(
        failover_ms("pause@1s-3s:4,crash-leader@1500ms,delay=1ms..3ms", seed));
    lower.push_back(
        failover_ms("pause@1s-3s:2,crash-leader@1500ms,delay=1ms..3ms", seed));
  }
  el::election_config defaults;
  using ms = std::chrono::duration<double, std::milli>;
  auto answer_ms = ms(defaults.answer_timeout).count();
  EXPECT_LT(median(higher), answer_ms)
      << "the new leader waited for the stopped follower's answer";
  EXPECT_LT(median(higher), median(lower) + 10.0);
}
