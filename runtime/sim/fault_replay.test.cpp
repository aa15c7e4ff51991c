// The fault language in the election workload: the drawn faults of a
// random= run, printed by the one printer, replay the same run; drift= sets
// the clocks of the candidates.
#include "runtime/sim/fault_plan.hpp"
#include "runtime/sim/simulation.hpp"

#include <gtest/gtest.h>

namespace sim = conclave::sim;
namespace el = conclave::election;

namespace {

sim::sim_settings settings(el::algorithm algo, const std::string& spec, uint64_t seed) {
  sim::sim_settings s;
  s.config.algo = algo;
  s.nodes = 5;
  auto plan = sim::parse_fault_spec(spec, sim::workload::election);
  EXPECT_TRUE(plan) << spec << ": " << plan.error();
  s.plan = plan.value();
  s.seed = seed;
  return s;
}

/// Everything a run reports that the faults decide.
std::string digest(const sim::run_report& r) {
  std::string d = std::to_string(r.elections.size()) + " elections:";
  for (auto& e : r.elections)
    d += " " + std::to_string(e.latency.count()) + "/" + std::to_string(e.messages);
  d += "; safety " + std::to_string(r.safety_violations) + ", split "
       + std::to_string(r.split_brain_time.count()) + ", stale "
       + std::to_string(r.stale_leader_windows) + ", live "
       + std::to_string(r.liveness_ok) + ", changes " + std::to_string(r.leader_changes)
       + ", sent " + std::to_string(r.messages_sent) + ", delivered "
       + std::to_string(r.messages_delivered) + ", events " + std::to_string(r.events)
       + ", end " + std::to_string(r.end.count());
  return d;
}

} // namespace

TEST(election_faults, the_printed_drawn_faults_of_a_random_run_replay_it) {
  const std::string spec = "random=5,loss=0.02,dup=0.01,delay=1ms..4ms,horizon=1500ms";
  size_t faults = 0;
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    for (uint64_t seed = 1; seed <= 25; ++seed) {
      auto drawn_run = settings(algo, spec, seed);
      // The faults the run draws from its seed (as run_simulation does).
      auto drawn = drawn_run.plan;
      std::mt19937_64 rng{seed};
      sim::add_random_faults(drawn, drawn_run.nodes, rng, sim::workload::election);
      faults += drawn.faults.size();
      auto replay = settings(algo, sim::replay_spec(drawn), seed);
      EXPECT_EQ(replay.plan.random_faults, 0u);
      EXPECT_EQ(digest(sim::run_simulation(drawn_run)),
                digest(sim::run_simulation(replay)))
          << "seed " << seed << ": " << sim::replay_spec(drawn);
    }
  }
  EXPECT_GE(faults, 250u);
}

TEST(election_faults, drift_sets_the_rate_error_of_every_clock) {
  // Heartbeats every 50 ms of the leader's clock, suspicion after 75 ms of
  // silence on a follower's clock: with every clock at the same rate
  // (drift=0) the first leader stays for good. With rates up to 50% apart, a
  // slow leader's heartbeats (up to 100 ms apart) reach fast followers that
  // give up after 50 ms: healthy leaders are suspected and replaced.
  // Elections and leader changes over 40 runs.
  auto churn = [](const std::string& spec) {
    uint64_t n = 0;
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      auto s = settings(el::algorithm::bully, spec, seed);
      s.config.detector.timeout = std::chrono::milliseconds(75);
      auto r = sim::run_simulation(s);
      n += r.elections.size() + r.leader_changes;
    }
    return n;
  };
  EXPECT_EQ(churn("drift=0"), 40u); // one election per run, no change after it
  EXPECT_GT(churn("drift=0.5"), 40u);
}
