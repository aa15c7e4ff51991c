// Retry policy: exponential growth capped by max_interval, jitter from the
// given random value, never past the deadline, non-retryable kinds and
// permanent failures never retried.
#include "protocols/workflow/retry_policy.hpp"

#include <gtest/gtest.h>

using namespace conclave::workflow;
using namespace std::chrono_literals;

namespace {

retry_policy policy() {
  retry_policy p;
  p.max_attempts = 10;
  p.initial_interval = 10ms;
  p.multiplier = 2.0;
  p.max_interval = 100ms;
  p.jitter = 0.5;
  p.non_retryable = {"card_declined"};
  return p;
}

constexpr timestamp far = timestamp{std::chrono::hours{1}};

} // namespace

TEST(retry_policy, delay_doubles_until_the_max_interval) {
  auto p = policy();
  EXPECT_EQ(base_delay(p, 1), 10ms);
  EXPECT_EQ(base_delay(p, 2), 20ms);
  EXPECT_EQ(base_delay(p, 4), 80ms);
  EXPECT_EQ(base_delay(p, 5), 100ms);
  EXPECT_EQ(base_delay(p, 1000), 100ms);
}

TEST(retry_policy, jitter_takes_off_up_to_its_fraction) {
  auto p = policy();
  auto none = next_retry(p, 2, failure_kind::transient, "busy", timestamp{0}, far, 0.0);
  ASSERT_TRUE(none.retry);
  EXPECT_EQ(none.delay, 20ms);
  auto half = next_retry(p, 2, failure_kind::transient, "busy", timestamp{0}, far, 0.5);
  EXPECT_EQ(half.delay, 15ms);
  auto most = next_retry(p, 2, failure_kind::transient, "busy", timestamp{0}, far, 0.999);
  EXPECT_GT(most.delay, 10ms - 1us);
  EXPECT_LT(most.delay, 10100us);
}

TEST(retry_policy, out_of_range_random_values_are_clamped) {
  auto p = policy();
  auto lo = next_retry(p, 1, failure_kind::transient, "", timestamp{0}, far, -3.0);
  auto hi = next_retry(p, 1, failure_kind::transient, "", timestamp{0}, far, 7.0);
  auto nan = next_retry(p, 1, failure_kind::transient, "", timestamp{0}, far,
                        std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(lo.delay, 10ms);
  EXPECT_GE(hi.delay, 5ms);
  EXPECT_EQ(nan.delay, 10ms);
}

TEST(retry_policy, never_retries_past_the_deadline) {
  auto p = policy();
  // 20 ms delay would end exactly at the deadline: give up.
  auto d = next_retry(p, 2, failure_kind::transient, "", timestamp{100ms},
                      timestamp{120ms}, 0.0);
  EXPECT_FALSE(d.retry);
  EXPECT_EQ(d.reason, retry_decision::why::deadline);
  auto ok = next_retry(p, 2, failure_kind::transient, "", timestamp{100ms},
                       timestamp{121ms}, 0.0);
  EXPECT_TRUE(ok.retry);
}

TEST(retry_policy, stops_after_max_attempts) {
  auto p = policy();
  p.max_attempts = 3;
  EXPECT_TRUE(next_retry(p, 2, failure_kind::transient, "", timestamp{0}, far, 0).retry);
  auto d = next_retry(p, 3, failure_kind::transient, "", timestamp{0}, far, 0);
  EXPECT_FALSE(d.retry);
  EXPECT_EQ(d.reason, retry_decision::why::attempts_exhausted);
}

TEST(retry_policy, permanent_failures_and_listed_kinds_are_not_retried) {
  auto p = policy();
  auto perm = next_retry(p, 1, failure_kind::permanent, "x", timestamp{0}, far, 0);
  EXPECT_FALSE(perm.retry);
  EXPECT_EQ(perm.reason, retry_decision::why::permanent);
  auto listed =
      next_retry(p, 1, failure_kind::transient, "card_declined", timestamp{0}, far, 0);
  EXPECT_FALSE(listed.retry);
  EXPECT_EQ(listed.reason, retry_decision::why::non_retryable_kind);
}

TEST(retry_policy, unusable_policies_are_rejected) {
  auto p = policy();
  EXPECT_TRUE(validate(p));
  auto q = p;
  q.max_attempts = 0;
  EXPECT_EQ(validate(q).error(), errc::bad_argument);
  q = p;
  q.multiplier = 0.5;
  EXPECT_FALSE(validate(q));
  q = p;
  q.jitter = 1.5;
  EXPECT_FALSE(validate(q));
  q = p;
  q.initial_interval = 0ms;
  EXPECT_FALSE(validate(q));
  q = p;
  q.max_interval = 1ms;
  EXPECT_FALSE(validate(q));
}
