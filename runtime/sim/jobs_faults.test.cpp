#include "runtime/sim/jobs_faults.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
namespace sim = conclave::sim;
using sim::jobs_fault;
using kind = jobs_fault::kind;
using role = jobs_fault::role;

TEST(jobs_fault_spec, parses_every_kind_of_the_jobs_workload) {
  auto r = sim::parse_jobs_fault_spec(
      "crash@100ms:agent2,restart@150ms:agent2,crash@10ms:scheduler1,"
      "restart@20ms:scheduler1,crash@30ms:supervisor2,restart@40ms:supervisor2,"
      "crash@50ms:service,restart@60ms:service,crash-leader@70ms,restart-leader@80ms,"
      "fail@1ms-2ms,reject@3ms-4ms:0.25,hang@5ms-6ms:0.5,slow@7ms-8ms:1,cancel@9ms:3,"
      "loss=0.1,dup=0.2,delay=1ms..4ms,slow=20ms,random=2,horizon=400ms,heal@500ms");
  ASSERT_TRUE(r) << r.error();
  auto& p = r.value();
  ASSERT_EQ(p.faults.size(), 15u);
  // Sorted by time: fail@1ms first, restart@150ms last.
  EXPECT_EQ(p.faults.front().what, kind::fail);
  EXPECT_EQ(p.faults.front().until, sim::timestamp{2ms});
  EXPECT_DOUBLE_EQ(p.faults.front().probability, 1.0);
  EXPECT_EQ(p.faults.back().what, kind::restart);
  EXPECT_EQ(p.faults.back().target, role::agent);
  EXPECT_EQ(p.faults.back().number, 2u);
  auto find = [&](kind k) {
    for (auto& f : p.faults)
      if (f.what == k)
        return f;
    ADD_FAILURE() << "missing kind " << static_cast<int>(k);
    return jobs_fault{};
  };
  EXPECT_DOUBLE_EQ(find(kind::reject).probability, 0.25);
  EXPECT_DOUBLE_EQ(find(kind::hang).probability, 0.5);
  EXPECT_EQ(find(kind::slow).at, sim::timestamp{7ms});
  EXPECT_EQ(find(kind::cancel).number, 3u);
  EXPECT_EQ(find(kind::crash_leader).target, role::supervisor);
  int scheduler_crashes = 0, service_faults = 0;
  for (auto& f : p.faults) {
    scheduler_crashes += f.target == role::scheduler;
    service_faults += f.target == role::service && f.what == kind::crash;
  }
  EXPECT_EQ(scheduler_crashes, 2);
  EXPECT_EQ(service_faults, 1);
  EXPECT_DOUBLE_EQ(p.loss, 0.1);
  EXPECT_DOUBLE_EQ(p.dup, 0.2);
  EXPECT_EQ(p.delay_min, 1ms);
  EXPECT_EQ(p.delay_max, 4ms);
  EXPECT_EQ(p.slow, 20ms);
  EXPECT_EQ(p.random_faults, 2u);
  EXPECT_EQ(p.horizon, 400ms);
  EXPECT_EQ(p.heal_time(), sim::timestamp{500ms});
}

TEST(jobs_fault_spec, heals_when_the_last_fault_ends_by_default) {
  auto r = sim::parse_jobs_fault_spec("hang@10ms-90ms,crash@50ms:agent1");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r.value().heal_time(), sim::timestamp{90ms});
  auto empty = sim::parse_jobs_fault_spec("");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty.value().faults.empty());
  EXPECT_EQ(empty.value().horizon, 300ms);
}

struct bad_jobs_spec {
  const char* spec;
  const char* mentions;
};

class jobs_fault_spec_errors : public ::testing::TestWithParam<bad_jobs_spec> {};

TEST_P(jobs_fault_spec_errors, bad_specs_are_rejected_with_a_clear_reason) {
  auto r = sim::parse_jobs_fault_spec(GetParam().spec);
  ASSERT_FALSE(r) << GetParam().spec;
  EXPECT_NE(r.error().find(GetParam().mentions), std::string::npos) << r.error();
  EXPECT_EQ(r.error().find('\n'), std::string::npos) << r.error();
}

INSTANTIATE_TEST_SUITE_P(
    jobs, jobs_fault_spec_errors,
    ::testing::Values(
        bad_jobs_spec{"crash@1s", "agentN"}, bad_jobs_spec{"crash@1s:3", "agentN"},
        bad_jobs_spec{"crash@1s:agent0", "agentN"},
        bad_jobs_spec{"restart@1s:robot1", "'robot1'"},
        bad_jobs_spec{"crash@1:agent1", "needs a unit"},
        bad_jobs_spec{"crash-leader@1s:agent1", "takes no target"},
        bad_jobs_spec{"fail@1s", "window"},
        bad_jobs_spec{"hang@2s-1s", "ends before it starts"},
        bad_jobs_spec{"slow@1s-2s:1.5", "probability"},
        bad_jobs_spec{"cancel@1s:0", "job number"},
        bad_jobs_spec{"cancel@1s", "job number"},
        bad_jobs_spec{"pause@1s-2s:1", "election workload"},
        bad_jobs_spec{"partition@1s-2s:1|2", "election workload"},
        bad_jobs_spec{"explode@1s", "unknown fault 'explode'"},
        bad_jobs_spec{"loss=2", "loss"}, bad_jobs_spec{"delay=0ms", "positive"},
        bad_jobs_spec{"slow=0ms", "positive"}, bad_jobs_spec{"random=x", "random"},
        bad_jobs_spec{"nodes=3", "unknown setting 'nodes'"},
        bad_jobs_spec{"crash@1s:agent1,,", "empty item"}));

TEST(jobs_fault_spec, numbers_are_checked_against_the_shape) {
  sim::jobs_shape shape; // 4 jobs, 2 schedulers, 3 agents, 2 supervisors
  auto check = [&](const char* spec) {
    auto p = sim::parse_jobs_fault_spec(spec);
    EXPECT_TRUE(p) << spec;
    return sim::validate(p.value(), shape);
  };
  EXPECT_TRUE(check("crash@1s:agent3,crash@1s:scheduler2,crash@1s:supervisor2,"
                    "cancel@1s:4,crash@1s:service"));
  auto bad = check("crash@1s:agent4");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("agent4"), std::string::npos) << bad.error();
  EXPECT_FALSE(check("restart@1s:scheduler3"));
  EXPECT_FALSE(check("crash@1s:supervisor3"));
  auto job = check("cancel@1s:5");
  ASSERT_FALSE(job);
  EXPECT_NE(job.error().find("jobs 1..4"), std::string::npos) << job.error();
}

TEST(jobs_fault_spec, random_faults_are_drawn_from_the_seed_and_heal_by_the_horizon) {
  sim::jobs_shape shape;
  auto draw = [&](uint64_t seed) {
    auto p = sim::parse_jobs_fault_spec("random=40,horizon=200ms").value();
    std::mt19937_64 rng{seed};
    sim::add_random_faults(p, shape, rng);
    return p;
  };
  auto a = draw(7);
  auto b = draw(7);
  ASSERT_EQ(a.faults.size(), b.faults.size());
  for (size_t i = 0; i < a.faults.size(); ++i) {
    EXPECT_EQ(a.faults[i].what, b.faults[i].what);
    EXPECT_EQ(a.faults[i].at, b.faults[i].at);
    EXPECT_EQ(a.faults[i].number, b.faults[i].number);
  }
  EXPECT_GE(a.faults.size(), 40u); // crashes come with their restarts
  EXPECT_TRUE(sim::validate(a, shape));
  std::map<std::pair<int, uint64_t>, int> down; // (role, number) → crashes - restarts
  std::set<kind> kinds;
  for (auto& f : a.faults) {
    kinds.insert(f.what);
    EXPECT_LE(f.at, sim::timestamp{200ms});
    EXPECT_LE(f.until, sim::timestamp{200ms});
    if (f.what == kind::crash)
      ++down[{static_cast<int>(f.target), f.number}];
    if (f.what == kind::restart)
      --down[{static_cast<int>(f.target), f.number}];
  }
  for (auto& [who, n] : down)
    EXPECT_EQ(n, 0) << "role " << who.first << " number " << who.second;
  // 40 draws over 9 kinds reach (nearly) all of them.
  EXPECT_GE(kinds.size(), 8u);
}
