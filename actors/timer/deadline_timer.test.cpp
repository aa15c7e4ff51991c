#include "actors/timer/deadline_timer.hpp"

#include <gtest/gtest.h>

using conclave::deadline_timer;
using namespace std::chrono_literals;

TEST(deadline_timer, no_deadline_arms_nothing) {
  deadline_timer t;
  EXPECT_FALSE(t.arm(std::nullopt, 0ns));
  EXPECT_FALSE(t.armed_at());
}

TEST(deadline_timer, arms_for_the_delay_until_the_deadline) {
  deadline_timer t;
  auto s = t.arm(15ms, 10ms);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->delay, 5ms);
  EXPECT_EQ(t.armed_at(), std::optional{std::chrono::nanoseconds{15ms}});
}

TEST(deadline_timer, a_past_deadline_fires_at_once) {
  deadline_timer t;
  auto s = t.arm(5ms, 10ms);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->delay, 0ns);
}

TEST(deadline_timer, a_later_or_equal_deadline_keeps_the_armed_timer) {
  deadline_timer t;
  ASSERT_TRUE(t.arm(20ms, 0ns));
  EXPECT_FALSE(t.arm(20ms, 0ns));
  EXPECT_FALSE(t.arm(30ms, 0ns));
  EXPECT_EQ(t.armed_at(), std::optional{std::chrono::nanoseconds{20ms}});
}

TEST(deadline_timer, an_earlier_deadline_makes_the_armed_timer_stale) {
  deadline_timer t;
  auto first = t.arm(20ms, 0ns);
  auto second = t.arm(10ms, 0ns);
  ASSERT_TRUE(first && second);
  EXPECT_NE(first->generation, second->generation);
  EXPECT_FALSE(t.fire(first->generation));
  EXPECT_TRUE(t.armed_at());
  EXPECT_TRUE(t.fire(second->generation));
  EXPECT_FALSE(t.armed_at());
}

TEST(deadline_timer, after_firing_a_later_deadline_arms_again) {
  deadline_timer t;
  auto first = t.arm(10ms, 0ns);
  ASSERT_TRUE(first);
  ASSERT_TRUE(t.fire(first->generation));
  auto again = t.arm(30ms, 10ms);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->delay, 20ms);
  EXPECT_FALSE(t.fire(first->generation));
}
