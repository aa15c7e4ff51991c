#include "runtime/cluster/cluster.hpp"

#include <gtest/gtest.h>

using namespace conclave::cluster;

namespace {

node_view node(uint64_t id, uint64_t leader, uint64_t term, int64_t since = 0) {
  node_view v;
  v.id = id;
  v.alive = true;
  v.reported = true;
  v.leader = leader;
  v.term = term;
  v.term_leader = leader;
  v.is_leader = id == leader;
  v.acting = v.is_leader;
  v.leader_since_us = since;
  return v;
}

} // namespace

TEST(cluster, all_live_nodes_naming_one_leader_that_claims_it_agree) {
  auto a = agreed_leader({node(1, 3, 2, 10), node(2, 3, 2, 30), node(3, 3, 2, 20)});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->leader, 3u);
  EXPECT_EQ(a->term, 2u);
  EXPECT_EQ(a->members, 3u);
  EXPECT_EQ(a->latest_change_us, 30);
}

TEST(cluster, a_different_term_or_a_silent_node_is_no_agreement) {
  EXPECT_FALSE(agreed_leader({node(1, 3, 2), node(2, 3, 1), node(3, 3, 2)}));
  auto silent = node(2, 0, 0);
  EXPECT_FALSE(agreed_leader({node(1, 3, 2), silent, node(3, 3, 2)}));
}

TEST(cluster, dead_stopped_and_ignored_nodes_do_not_count) {
  auto dead = node(3, 3, 1);
  dead.alive = false;
  auto stopped = node(4, 3, 1);
  stopped.stopped = true;
  auto a = agreed_leader({node(1, 2, 2), node(2, 2, 2), dead, stopped});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->leader, 2u);
  EXPECT_TRUE(agreed_leader({node(1, 2, 2), node(2, 2, 2), node(3, 3, 1)}, {3}));
}

TEST(cluster, a_leaving_node_does_not_block_agreement) {
  auto leaving = node(3, 3, 1);
  leaving.reported = false; // its status says running: false
  leaving.leaving = true;
  auto a = agreed_leader({node(1, 2, 2), node(2, 2, 2), leaving});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->leader, 2u);
}

TEST(cluster, same_epoch_with_another_leader_is_no_agreement) {
  auto other = node(1, 3, 2);
  other.term_leader = 2; // term 2/2, not 2/3
  EXPECT_FALSE(agreed_leader({other, node(2, 3, 2), node(3, 3, 2)}));
}

TEST(cluster, a_leader_nobody_claims_is_no_agreement) {
  EXPECT_FALSE(agreed_leader({node(1, 3, 2), node(2, 3, 2)}));
}

TEST(cluster, a_leader_outside_its_lease_is_no_agreement_yet) {
  auto waiting = node(3, 3, 2);
  waiting.acting = false; // elected, no majority acknowledgement yet
  EXPECT_FALSE(agreed_leader({node(1, 3, 2), node(2, 3, 2), waiting}));
}

TEST(cluster, signals_parse_by_name_and_number) {
  EXPECT_EQ(parse_signal("KILL"), SIGKILL);
  EXPECT_EQ(parse_signal("sigstop"), SIGSTOP);
  EXPECT_EQ(parse_signal("CONT"), SIGCONT);
  EXPECT_EQ(parse_signal("15"), SIGTERM);
  EXPECT_EQ(parse_signal("HUP"), 0);
}

// With the quorum guard a new leader acts only once a majority granted its
// lease: a failover ends then, not at the last adoption (issue 11).
TEST(cluster, a_failover_ends_when_the_new_leader_acts) {
  auto leader = node(3, 3, 2, 1'000);
  leader.acting_since_us = 45'000; // waited for the old leader's promises
  auto a = agreed_leader({node(1, 3, 2, 2'000), node(2, 3, 2, 3'000), leader});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->latest_change_us, 45'000);
  leader.acting_since_us = 500; // acted before the last follower adopted it
  a = agreed_leader({node(1, 3, 2, 2'000), node(2, 3, 2, 3'000), leader});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->latest_change_us, 3'000);
}
