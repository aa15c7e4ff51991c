#include "runtime/lock/duration_text.hpp"

#include <gtest/gtest.h>

namespace conclave::lock {
namespace {

using namespace std::chrono_literals;
using std::chrono::nanoseconds;

nanoseconds parsed(std::string_view text) {
  auto r = parse_duration(text);
  EXPECT_TRUE(r) << text << ": " << (r ? "" : r.error());
  return r ? r.value() : nanoseconds{-1};
}

std::string refused(std::string_view text) {
  auto r = parse_duration(text);
  EXPECT_FALSE(r) << text;
  return r ? "" : r.error();
}

TEST(DurationText, ReadsEveryUnitAndPlainSeconds) {
  EXPECT_EQ(parsed("10s"), 10s);
  EXPECT_EQ(parsed("500ms"), 500ms);
  EXPECT_EQ(parsed("2m"), 120s);
  EXPECT_EQ(parsed("250us"), 250us);
  EXPECT_EQ(parsed("7ns"), 7ns);
  EXPECT_EQ(parsed("3"), 3s);
  EXPECT_EQ(parsed("0"), 0s);
}

TEST(DurationText, ReadsDecimalsExactlyToTheNanosecond) {
  EXPECT_EQ(parsed("1.5s"), 1500ms);
  EXPECT_EQ(parsed("0.001s"), 1ms);
  EXPECT_EQ(parsed("0.000000001s"), 1ns);
  EXPECT_EQ(parsed("2.5m"), 150s);
  EXPECT_EQ(parsed("1.5us"), 1500ns);
}

TEST(DurationText, RefusesWhatIsNotADurationWithTheTextInTheMessage) {
  for (auto bad : {"", "s", "-1s", "+1s", "1.s", ".5s", "1 s", "1sec", "10S", "1h",
                   "1e3ms", "1.5.2s", "abc"}) {
    auto e = refused(bad);
    EXPECT_NE(e.find(std::string{"'"} + bad + "'"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(DurationText, RefusesValuesFinerThanANanosecondOrTooLargeForInt64) {
  EXPECT_NE(refused("1.5ns").find("finer"), std::string::npos);
  EXPECT_NE(refused("0.0000000001s").find("finer"), std::string::npos);
  EXPECT_NE(refused("9223372036854775808ns").find("too large"), std::string::npos);
  EXPECT_NE(refused("99999999999999999999999s").find("too large"), std::string::npos);
  EXPECT_NE(refused("9223372037s").find("too large"), std::string::npos);
  EXPECT_NE(refused("153722868m").find("too large"), std::string::npos);
  EXPECT_EQ(parsed("9223372036854775807ns"), nanoseconds::max());
}

TEST(DurationText, PrintsExactlyInTheLargestUnitNotAboveTheValue) {
  EXPECT_EQ(format_duration(10s), "10s");
  EXPECT_EQ(format_duration(7800ms), "7.8s");
  EXPECT_EQ(format_duration(200ms), "200ms");
  EXPECT_EQ(format_duration(50ms), "50ms");
  EXPECT_EQ(format_duration(1050us), "1.05ms");
  EXPECT_EQ(format_duration(1ns), "1ns");
  EXPECT_EQ(format_duration(0ns), "0ns");
  EXPECT_EQ(format_duration(nanoseconds{3'333'333'333}), "3.333333333s");
  EXPECT_EQ(format_duration(24h + 1ns), "86400.000000001s");
  EXPECT_EQ(format_duration(-2s), "-2s");
  EXPECT_EQ(format_duration(120s), "120s");
}

TEST(DurationText, PrintedExactValuesReadBack) {
  for (nanoseconds d : {nanoseconds{10s}, nanoseconds{7800ms}, nanoseconds{200ms},
                        nanoseconds{1500us}, nanoseconds{1ns}, nanoseconds{24h},
                        nanoseconds{3'333'333'333}, nanoseconds::max()}) {
    EXPECT_EQ(parsed(format_duration(d)), d) << format_duration(d);
  }
}

} // namespace
} // namespace conclave::lock
