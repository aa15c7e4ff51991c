#include "runtime/sim/fault_plan.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
namespace sim = conclave::sim;
using sim::fault;

TEST(fault_spec, parses_the_documented_example) {
  auto r = sim::parse_fault_spec(
      "crash-leader@1s,partition@2s-4s:1-3|4-5,loss=0.01,delay=1ms..5ms");
  ASSERT_TRUE(r) << r.error();
  auto& p = r.value();
  ASSERT_EQ(p.faults.size(), 2u);
  EXPECT_EQ(p.faults[0].what, fault::kind::crash_leader);
  EXPECT_EQ(p.faults[0].at, sim::timestamp{1s});
  EXPECT_EQ(p.faults[1].what, fault::kind::partition);
  EXPECT_EQ(p.faults[1].until, sim::timestamp{4s});
  ASSERT_EQ(p.faults[1].groups.size(), 2u);
  EXPECT_EQ(p.faults[1].groups[0].size(), 3u);
  EXPECT_EQ(p.faults[1].groups[1].front().value, 4u);
  EXPECT_DOUBLE_EQ(p.loss, 0.01);
  EXPECT_EQ(p.delay_min, 1ms);
  EXPECT_EQ(p.delay_max, 5ms);
  EXPECT_EQ(p.heal_time(), sim::timestamp{4s});
}

TEST(fault_spec, parses_every_kind) {
  auto r = sim::parse_fault_spec("crash@100ms:2, restart@300ms:2,pause@1s-1500ms:3,"
                                 "pause-leader@2s-3s,restart-leader@4s,elect@50us:1,"
                                 "cut@1s-2s:1+2>3,dup=0.5,random=3,horizon=5s,heal@6s");
  ASSERT_TRUE(r) << r.error();
  auto& p = r.value();
  EXPECT_EQ(p.faults.size(), 7u);
  EXPECT_EQ(p.faults.front().what, fault::kind::elect); // sorted by time
  EXPECT_EQ(p.random_faults, 3u);
  EXPECT_EQ(p.horizon, 5s);
  EXPECT_EQ(p.heal_time(), sim::timestamp{6s});
  EXPECT_DOUBLE_EQ(p.dup, 0.5);
}

TEST(fault_spec, an_empty_spec_has_no_faults) {
  auto r = sim::parse_fault_spec("");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r.value().faults.empty());
  EXPECT_EQ(r.value().heal_time(), sim::timestamp{0});
}

struct bad_spec {
  const char* spec;
  const char* mentions;
};

class fault_spec_errors : public ::testing::TestWithParam<bad_spec> {};

TEST_P(fault_spec_errors, bad_specs_are_rejected_with_a_clear_reason) {
  auto r = sim::parse_fault_spec(GetParam().spec);
  ASSERT_FALSE(r) << GetParam().spec;
  EXPECT_NE(r.error().find(GetParam().mentions), std::string::npos) << r.error();
}

INSTANTIATE_TEST_SUITE_P(
    all, fault_spec_errors,
    ::testing::Values(
        bad_spec{"crash@1:3", "unit"}, bad_spec{"explode@1s", "unknown fault"},
        bad_spec{"crash@1s", ":NODE"}, bad_spec{"partition@2s-1s:1|2", "ends before"},
        bad_spec{"partition@1s-2s:1-3", "two groups"}, bad_spec{"loss=2", "probability"},
        bad_spec{"delay=5ms..1ms", "reversed"}, bad_spec{"speed=3", "unknown setting"},
        bad_spec{"crash@1s:3,,", "empty item"}, bad_spec{"pause@1s:2", "window"},
        bad_spec{"cut@1s-2s:1>2>3", "exactly two"}, bad_spec{"crash", "KIND@TIME"}));

TEST(fault_spec, validate_rejects_nodes_outside_the_group) {
  auto r = sim::parse_fault_spec("crash@1s:7");
  ASSERT_TRUE(r);
  EXPECT_TRUE(sim::validate(r.value(), 7));
  auto v = sim::validate(r.value(), 5);
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().find("node 7"), std::string::npos);
}

TEST(fault_spec, random_faults_all_heal_before_the_horizon) {
  auto r = sim::parse_fault_spec("random=20,horizon=3s");
  ASSERT_TRUE(r);
  auto plan = r.value();
  std::mt19937_64 rng{42};
  sim::add_random_faults(plan, 5, rng);
  EXPECT_GE(plan.faults.size(), 20u);
  int crashes = 0, restarts = 0;
  for (auto& f : plan.faults) {
    EXPECT_LE(f.at, sim::timestamp{3s});
    EXPECT_LE(f.until, sim::timestamp{3s});
    crashes += f.what == fault::kind::crash || f.what == fault::kind::crash_leader;
    restarts += f.what == fault::kind::restart || f.what == fault::kind::restart_leader;
  }
  EXPECT_EQ(crashes, restarts);
}
