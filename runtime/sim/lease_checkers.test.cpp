// The lease checkers on hand-written histories: each stays quiet on a good
// one and complains about the one property a bad one breaks.
#include "runtime/sim/lease_checkers.hpp"

#include <gtest/gtest.h>

using namespace conclave::sim;
using namespace std::chrono_literals;
namespace rp = conclave::replication;

namespace {

lease_observation one_lease(uint32_t limit = 1) {
  lease_observation o;
  o.leases.push_back({"m", limit});
  o.heal = 0ms;
  o.bound = 10s;
  return o;
}

lease_belief belief(size_t client, rp::timestamp from, rp::timestamp until,
                    uint64_t token = 1, size_t lease = 0) {
  return {client, lease, "c" + std::to_string(client), token, from, until};
}

lease_grant grant(size_t client, const std::string& holder, uint64_t token,
                  rp::timestamp sent, rp::timestamp acked) {
  return {client, 0, holder, token, sent, acked};
}

std::vector<repl_violation> check_leases(const lease_observation& o) {
  return run_lease_checkers(standard_lease_checkers(), o);
}

size_t count(const std::vector<repl_violation>& vs, const std::string& checker) {
  return static_cast<size_t>(
      std::count_if(vs.begin(), vs.end(), [&](auto& v) { return v.checker == checker; }));
}

} // namespace

TEST(lease_checkers, beliefs_one_after_another_pass) {
  auto o = one_lease();
  o.beliefs = {belief(0, 10ms, 300ms), belief(1, 300ms, 600ms), belief(0, 600ms, 900ms)};
  o.grants = {grant(0, "a", 5, 9ms, 10ms)};
  EXPECT_TRUE(check_leases(o).empty());
  EXPECT_EQ(max_believers(o, 0), 1u);
}

TEST(lease_checkers, two_believers_of_a_mutex_overlapping_by_one_microsecond_are_caught) {
  auto o = one_lease();
  o.beliefs = {belief(0, 10ms, 300ms + 1us), belief(1, 300ms, 600ms)};
  o.grants = {grant(1, "b", 5, 250ms, 300ms)};
  auto vs = check_leases(o);
  ASSERT_EQ(count(vs, "mutual_exclusion"), 1u);
  EXPECT_TRUE(vs.front().safety);
  EXPECT_NE(vs.front().what.find("2 clients believe they hold m"), std::string::npos)
      << vs.front().what;
  EXPECT_EQ(max_believers(o, 0), 2u);
}

TEST(lease_checkers, a_renewal_extends_the_same_clients_belief_without_a_complaint) {
  auto o = one_lease();
  // Client 0 renews while it believes: its beliefs overlap each other.
  o.beliefs = {belief(0, 10ms, 310ms), belief(0, 110ms, 410ms), belief(0, 210ms, 510ms),
               belief(1, 510ms, 800ms)};
  o.grants = {grant(0, "a", 5, 9ms, 10ms)};
  EXPECT_TRUE(check_leases(o).empty());
  // ... but a belief of another client inside the extended one is caught.
  o.beliefs.push_back(belief(2, 400ms, 450ms, 9));
  EXPECT_EQ(count(check_leases(o), "mutual_exclusion"), 1u);
}

TEST(lease_checkers, a_semaphore_allows_limit_believers_and_not_one_more) {
  auto o = one_lease(2);
  o.beliefs = {belief(0, 0ms, 100ms), belief(1, 50ms, 150ms), belief(2, 100ms, 200ms)};
  o.grants = {grant(0, "a", 5, 0ms, 0ms)};
  EXPECT_TRUE(check_leases(o).empty());
  EXPECT_EQ(max_believers(o, 0), 2u);
  o.beliefs.push_back(belief(3, 120ms, 130ms));
  EXPECT_EQ(count(check_leases(o), "mutual_exclusion"), 1u);
  EXPECT_EQ(max_believers(o, 0), 3u);
}

TEST(lease_checkers, beliefs_of_different_leases_do_not_count_together) {
  auto o = one_lease();
  o.leases.push_back({"n", 1});
  o.beliefs = {belief(0, 0ms, 100ms, 1, 0), belief(1, 50ms, 150ms, 2, 1)};
  o.grants = {grant(0, "a", 1, 0ms, 0ms)};
  EXPECT_TRUE(check_leases(o).empty());
}

TEST(lease_checkers, empty_beliefs_answered_too_late_count_for_nothing) {
  auto o = one_lease();
  o.beliefs = {belief(0, 10ms, 300ms), belief(1, 200ms, 200ms), belief(1, 250ms, 240ms)};
  o.grants = {grant(0, "a", 1, 0ms, 10ms)};
  EXPECT_TRUE(check_leases(o).empty());
}

TEST(lease_checkers, a_later_grant_with_a_smaller_token_is_caught) {
  auto o = one_lease();
  o.grants = {grant(0, "a", 7, 0ms, 10ms), grant(1, "b", 9, 20ms, 30ms)};
  EXPECT_TRUE(check_leases(o).empty());
  o.grants.push_back(grant(2, "c", 8, 40ms, 50ms));
  auto vs = check_leases(o);
  EXPECT_EQ(count(vs, "tokens_grow"), 1u);
  // Concurrent requests may be granted in either order; the same holder may
  // be answered its own token again (a retried acquire).
  o = one_lease();
  o.grants = {grant(0, "a", 9, 0ms, 30ms), grant(1, "b", 7, 10ms, 20ms),
              grant(0, "a", 9, 40ms, 50ms)};
  EXPECT_TRUE(check_leases(o).empty());
}

TEST(lease_checkers, no_grant_after_heal_fails_liveness_unless_not_judged) {
  auto o = one_lease();
  o.heal = 1s;
  o.bound = 2s;
  o.grants = {grant(0, "a", 1, 0ms, 10ms), grant(1, "b", 2, 3500ms, 3500ms)};
  auto vs = check_leases(o);
  ASSERT_EQ(count(vs, "granted_after_heal"), 1u);
  EXPECT_FALSE(vs.front().safety);
  o.grants.push_back(grant(1, "b", 3, 2500ms, 2900ms));
  EXPECT_TRUE(check_leases(o).empty());
  o.grants.pop_back();
  o.judge_liveness = false;
  EXPECT_TRUE(check_leases(o).empty());
}
