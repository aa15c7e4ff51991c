#include "runtime/node/round_trip_watch.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using conclave::node::round_trip_watch;
namespace el = conclave::election;

namespace {

el::election_config guarded() {
  el::election_config cfg;  // heartbeat 50 ms, detector 150 ms
  cfg.guard.enabled = true; // lease 100 ms: budget 90 ms, warns above 67.5 ms
  cfg.guard.lease_max = cfg.guard.lease; // fixed: the budget does not grow
  return cfg;
}

} // namespace

TEST(round_trip_watch, warns_once_when_the_round_trip_nears_the_guard_budget) {
  round_trip_watch w{guarded()};
  EXPECT_FALSE(w.observe(80ms, 0)); // nothing measured yet
  EXPECT_FALSE(w.observe(1ms, 5));
  EXPECT_FALSE(w.observe(60ms, 6));
  auto first = w.observe(70ms, 7);
  ASSERT_TRUE(first);
  EXPECT_NE(first->find("quorum guard"), std::string::npos) << *first;
  EXPECT_NE(first->find("70ms"), std::string::npos) << *first;
  EXPECT_FALSE(w.observe(80ms, 8)); // same excursion: no second line
  EXPECT_FALSE(w.observe(60ms, 9)); // inside, but not clearly: still armed off
  EXPECT_FALSE(w.observe(70ms, 10));
  EXPECT_EQ(w.warnings(), 1u);
  EXPECT_FALSE(w.observe(40ms, 11)); // clearly back inside: re-armed
  EXPECT_FALSE(w.warned());
  EXPECT_TRUE(w.observe(75ms, 12));
  EXPECT_EQ(w.warnings(), 2u);
}

TEST(round_trip_watch, without_the_guard_only_the_detector_slack_counts) {
  el::election_config cfg; // slack: 150 - 50 = 100 ms
  round_trip_watch w{cfg};
  EXPECT_FALSE(w.observe(90ms, 3));
  auto warning = w.observe(110ms, 4);
  ASSERT_TRUE(warning);
  EXPECT_NE(warning->find("detector"), std::string::npos) << *warning;
}
