#include "runtime/node/membership.hpp"

#include <gtest/gtest.h>

using namespace conclave::node;

namespace {
membership node2() {
  return membership{"blue", 2, {1, 3}};
}
} // namespace

TEST(membership, a_configured_member_of_the_same_cluster_is_admitted) {
  EXPECT_EQ(node2().admit("blue", 1), rejection::none);
  EXPECT_EQ(node2().admit("blue", 3), rejection::none);
}

TEST(membership, another_cluster_is_refused_even_with_a_member_id) {
  EXPECT_EQ(node2().admit("red", 1), rejection::wrong_cluster);
}

TEST(membership, an_unknown_id_and_our_own_id_are_refused) {
  EXPECT_EQ(node2().admit("blue", 9), rejection::unknown_node);
  EXPECT_EQ(node2().admit("blue", 2), rejection::same_id);
}

TEST(membership, the_dialer_refuses_an_answer_from_another_member_than_expected) {
  EXPECT_EQ(node2().accept_answer("blue", 3, 3), rejection::none);
  EXPECT_EQ(node2().accept_answer("blue", 1, 3), rejection::wrong_node);
  EXPECT_EQ(node2().accept_answer("red", 3, 3), rejection::wrong_cluster);
}

TEST(membership, rejection_reasons_are_metric_labels) {
  EXPECT_EQ(to_string(rejection::wrong_cluster), "wrong_cluster");
  EXPECT_EQ(to_string(rejection::unknown_node), "unknown_node");
}
