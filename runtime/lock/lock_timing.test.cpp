#include "runtime/lock/lock_timing.hpp"

#include <gtest/gtest.h>

namespace conclave::lock {
namespace {

using namespace std::chrono_literals;
using action = expiry_schedule::action;

lock_timing checked(lock_timing_options o) {
  auto r = check_timing(o);
  EXPECT_TRUE(r) << (r ? "" : r.error());
  return r ? r.value() : lock_timing{};
}

std::string refused(lock_timing_options o) {
  auto r = check_timing(o);
  EXPECT_FALSE(r) << describe_timing(r ? r.value() : lock_timing{});
  if (r)
    return "";
  EXPECT_EQ(r.error().find('\n'), std::string::npos) << r.error();
  return r.error();
}

lock_timing_options with(nanoseconds ttl, nanoseconds grace) {
  lock_timing_options o;
  o.ttl = ttl;
  o.grace = grace;
  return o;
}

TEST(LockTiming, DefaultsAreAThirdOfTtlAndAFiftiethOrFiftyMilliseconds) {
  auto t = checked({});
  EXPECT_EQ(t.ttl, 10s);
  EXPECT_EQ(t.grace, 2s);
  EXPECT_EQ(t.renew_interval, nanoseconds{10s} / 3);
  EXPECT_EQ(t.margin, 200ms);
  EXPECT_EQ(t.renew_deadline(), 7800ms);
  EXPECT_EQ(checked(with(1s, 100ms)).margin, 50ms); // ttl / 50 = 20ms < 50ms
}

TEST(LockTiming, HelpLineShowsTheInequality) {
  EXPECT_EQ(describe_timing(checked({})),
            "ttl 10s = renew-deadline 7.8s + grace 2s + margin 200ms; "
            "renew-interval 3.333333333s < renew-deadline 7.8s");
}

TEST(LockTiming, ZeroAndOneNanosecondTtlAreRefused) {
  EXPECT_NE(refused(with(0s, 2s)).find("--ttl 0ns is too short"), std::string::npos);
  EXPECT_NE(refused(with(-5s, 2s)).find("--ttl"), std::string::npos);
  EXPECT_NE(refused(with(1ns, 0s)).find("must be longer than grace 0ns + margin 50ms"),
            std::string::npos);
}

TEST(LockTiming, GraceAtOrAboveTtlIsRefused) {
  EXPECT_NE(refused(with(10s, 10s)).find("--ttl 10s must be longer than grace 10s"),
            std::string::npos);
  EXPECT_NE(refused(with(10s, 20s)).find("must be longer"), std::string::npos);
  // Grace plus margin leaves exactly nothing.
  EXPECT_NE(refused(with(10s, 9800ms)).find("must be longer"), std::string::npos);
  EXPECT_NE(refused(with(10s, -1ns)).find("--grace -1ns is too short"),
            std::string::npos);
}

TEST(LockTiming, HugeValuesAreRefusedWithoutOverflow) {
  EXPECT_NE(refused(with(nanoseconds::max(), 2s)).find("--ttl"), std::string::npos);
  EXPECT_NE(refused(with(nanoseconds::max(), nanoseconds::max())).find("too long"),
            std::string::npos);
  EXPECT_NE(refused(with(10s, nanoseconds::max())).find("--grace"), std::string::npos);
  auto o = with(24h, 1h);
  EXPECT_TRUE(check_timing(o)); // the longest accepted ttl
  o.ttl = 24h + 1ns;
  EXPECT_NE(refused(o).find("--ttl 86400.000000001s is too long: at most 86400s"),
            std::string::npos);
  o = with(10s, 1s);
  o.margin = nanoseconds::max();
  EXPECT_NE(refused(o).find("--margin"), std::string::npos);
  o.margin.reset();
  o.renew_interval = nanoseconds::min();
  EXPECT_NE(refused(o).find("--renew-interval"), std::string::npos);
}

TEST(LockTiming, RenewIntervalMustBeShorterThanTheRenewDeadline) {
  auto o = with(10s, 2s);
  o.renew_interval = 7800ms;
  EXPECT_NE(refused(o).find(
                "--renew-interval 7.8s must be shorter than the renew deadline 7.8s"),
            std::string::npos);
  o.renew_interval = 7799ms;
  EXPECT_TRUE(check_timing(o));
  o.renew_interval = 0s;
  EXPECT_NE(refused(o).find("too short"), std::string::npos);
  // A grace that leaves less than the default interval: ttl/3 is too long.
  EXPECT_NE(refused(with(3s, 2s)).find("--renew-interval 1s must be shorter"),
            std::string::npos);
}

TEST(LockTiming, MarginBelowAMillisecondIsRefusedAndGraceZeroIsAllowed) {
  auto o = with(1s, 0s);
  o.margin = 999us;
  EXPECT_NE(refused(o).find("--margin 999us is too short: at least 1ms"),
            std::string::npos);
  o.margin = 1ms;
  EXPECT_EQ(checked(o).renew_deadline(), 999ms);
}

TEST(LockTiming, RenewBudgetEndsAtTheTerminatePointAndAtOneInterval) {
  auto t = checked(with(10s, 2s)); // term point 7.8s after the send time
  clock::time_point s{};
  auto until = s + t.ttl;
  EXPECT_EQ(t.renew_budget(s + 1s, until), t.renew_interval);
  EXPECT_EQ(t.renew_budget(s + 7s, until), 800ms);
  EXPECT_LE(t.renew_budget(s + 7800ms, until), 0s);
  EXPECT_EQ(t.self_kill_at(until), until - 100ms);
}

TEST(ExpirySchedule, TerminatesThenKillsAtTheSchedulePoints) {
  auto t = checked(with(10s, 2s));
  clock::time_point s{};
  expiry_schedule e{t, s + t.ttl};
  EXPECT_EQ(e.next(), s + 7800ms);
  EXPECT_EQ(e.due(s + 7799ms), action::none);
  EXPECT_EQ(e.due(s + 7800ms), action::terminate);
  EXPECT_EQ(e.due(s + 7900ms), action::none);
  EXPECT_EQ(e.next(), s + 9800ms);
  EXPECT_EQ(e.due(s + 9800ms), action::kill);
  EXPECT_EQ(e.due(s + 20s), action::none);
  EXPECT_EQ(e.next(), clock::time_point::max());
}

TEST(ExpirySchedule, RenewalsMoveThePointsUntilSigtermIsDue) {
  auto t = checked(with(10s, 2s));
  clock::time_point s{};
  expiry_schedule e{t, s + t.ttl};
  EXPECT_TRUE(e.extend(s + 3s + t.ttl, s + 3500ms));
  EXPECT_EQ(e.next(), s + 10800ms);
  EXPECT_TRUE(e.extend(s + 1s + t.ttl, s + 3600ms)); // an older one changes nothing
  EXPECT_EQ(e.safe_until(), s + 13s);
  // Learned after the SIGTERM point: refused even before due() was asked.
  EXPECT_FALSE(e.extend(s + 11s + t.ttl, s + 10800ms));
  EXPECT_EQ(e.due(s + 10800ms), action::terminate);
  EXPECT_FALSE(e.extend(s + 20s + t.ttl, s + 10801ms));
  EXPECT_EQ(e.due(s + 12800ms), action::kill);
}

TEST(ExpirySchedule, LateWakeUpKillsWithoutTerminating) {
  auto t = checked(with(10s, 2s));
  clock::time_point s{};
  expiry_schedule e{t, s + t.ttl};
  EXPECT_EQ(e.due(s + 1h), action::kill); // a runner back from SIGSTOP
  EXPECT_TRUE(e.terminated());
  EXPECT_TRUE(e.killed());
}

TEST(ExpirySchedule, GraceZeroKillsAtOnce) {
  auto t = checked(with(1s, 0s));
  clock::time_point s{};
  expiry_schedule e{t, s + t.ttl};
  EXPECT_EQ(e.next(), s + 950ms);
  EXPECT_EQ(e.due(s + 950ms), action::kill);
}

} // namespace
} // namespace conclave::lock
