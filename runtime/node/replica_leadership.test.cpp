#include "runtime/node/replica_leadership.hpp"

#include <gtest/gtest.h>

using namespace conclave::node;
namespace el = conclave::election;
namespace rp = conclave::replication;

namespace {

const el::node_id self{2};
const el::node_id other{3};

leadership_view leader_of(el::term t, bool acting) {
  return {self, true, acting, t, self};
}

leadership_view following(el::node_id leader, el::term t) {
  return {self, false, false, t, leader};
}

template <class T>
std::optional<T> as(const std::optional<replica_signal>& s) {
  if (!s)
    return std::nullopt;
  if (auto x = std::get_if<T>(&*s))
    return *x;
  return std::nullopt;
}

} // namespace

TEST(leadership_tracker, an_acting_leader_becomes_primary_of_its_term_once) {
  leadership_tracker tr;
  el::term t{4, self, 1};
  EXPECT_FALSE(tr.observe(leader_of(t, false))); // elected, lease not granted yet
  auto s = as<rp::become_primary_msg>(tr.observe(leader_of(t, true)));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->t, t);
  EXPECT_FALSE(tr.observe(leader_of(t, true))); // still acting: nothing new
  el::term next{5, self, 1};
  auto again = as<rp::become_primary_msg>(tr.observe(leader_of(next, true)));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->t, next);
}

TEST(leadership_tracker, a_primary_that_stops_acting_is_told_once) {
  leadership_tracker tr;
  el::term t{4, self, 1};
  ASSERT_TRUE(tr.observe(leader_of(t, true)));
  auto s = as<rp::leader_is_msg>(tr.observe(leader_of(t, false)));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->t, t);
  EXPECT_FALSE(tr.observe(leader_of(t, false)));
  // Acting again in the same term: primary again.
  EXPECT_TRUE(as<rp::become_primary_msg>(tr.observe(leader_of(t, true))));
}

TEST(leadership_tracker, another_leader_is_reported_once_per_term) {
  leadership_tracker tr;
  EXPECT_FALSE(tr.observe(following(el::no_node, el::term{}))); // nobody leads yet
  el::term t{4, other, 1};
  auto s = as<rp::leader_is_msg>(tr.observe(following(other, t)));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->t, t);
  EXPECT_FALSE(tr.observe(following(other, t)));
  el::term later{6, other, 1};
  EXPECT_TRUE(as<rp::leader_is_msg>(tr.observe(following(other, later))));
}

TEST(leadership_tracker, a_primary_deposed_by_another_leader_is_told_at_once) {
  leadership_tracker tr;
  ASSERT_TRUE(tr.observe(leader_of(el::term{4, self, 1}, true)));
  el::term t{5, other, 1};
  auto s = as<rp::leader_is_msg>(tr.observe(following(other, t)));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->t, t);
}

namespace {

rp::replica_status promised(el::term t) {
  rp::replica_status s;
  s.self = rp::node_id{2};
  s.promised = t;
  return s;
}

} // namespace

TEST(lead_above_epoch, a_candidate_acting_below_its_hosts_promise_must_lead_above_it) {
  // Restarted without memory, the candidate won epoch 2; the replicas promised
  // 7 (seed 1048 of the replication sim): the host is fenced in epoch 2.
  auto e = lead_above_epoch(el::term{2, self, 9}, promised(el::term{7, other, 1}));
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, 7u);
}

TEST(lead_above_epoch, nothing_while_the_candidate_does_not_act_or_is_not_behind) {
  el::term t{4, self, 1};
  EXPECT_FALSE(lead_above_epoch(std::nullopt, promised(el::term{7, other, 1})));
  EXPECT_FALSE(lead_above_epoch(t, promised(t)));
  EXPECT_FALSE(lead_above_epoch(t, promised(el::term{3, other, 1})));
  auto failed = promised(el::term{7, other, 1});
  failed.failed = true; // a stopped host: leading higher would not help
  EXPECT_FALSE(lead_above_epoch(t, failed));
}

// A node resumed after SIGSTOP runs its front before its candidate: the board
// must not say "acting" past the lease the candidate last reported.
TEST(leadership_board, the_acting_term_ends_with_the_reported_lease) {
  conclave::node::leadership_board b;
  conclave::election::term t{3, conclave::election::node_id{1}};
  using conclave::election::timestamp;
  b.set_acting(t, timestamp{std::chrono::milliseconds(400)});
  EXPECT_EQ(b.acting_at(timestamp{std::chrono::milliseconds(399)}), t);
  EXPECT_EQ(b.acting_at(timestamp{std::chrono::milliseconds(400)}), std::nullopt);
  EXPECT_EQ(b.acting(), t); // what the candidate last said, unbounded
  b.set_acting(t);          // no lease bound (no quorum guard)
  EXPECT_EQ(b.acting_at(timestamp{std::chrono::hours(1)}), t);
  b.set_acting(std::nullopt);
  EXPECT_EQ(b.acting_at(timestamp{0}), std::nullopt);
}
