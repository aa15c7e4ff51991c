#include "tests/lock_scenario/lock_history.hpp"
#include "tests/lock_scenario/fault_log.hpp"

#include <sstream>

#include <gtest/gtest.h>

using namespace conclave::lock_scenario;

namespace {

history_report check(const std::string& text) {
  std::istringstream in(text);
  return check_history(in);
}

constexpr int64_t ms = 1'000'000;

} // namespace

TEST(lock_history, holders_one_after_another_with_growing_tokens_pass) {
  auto r = check("start 5 1000000 0 100 99\n"
                 "alive 5 6000000 0 100 99\n"
                 "end 5 9000000 0 100 99\n"
                 "start 8 10000000 1 200 199\n"
                 "alive 8 15000000 1 200 199\n" // killed: no end line
                 "start 9 16000000 2 300 299\n"
                 "end 9 20000000 2 300 299\n");
  EXPECT_TRUE(r.malformed.empty());
  EXPECT_TRUE(r.violations.empty());
  ASSERT_EQ(r.holders.size(), 3u);
  EXPECT_EQ(r.lines, 7u);
  EXPECT_EQ(r.holders[1].token, 8u);
  EXPECT_EQ(r.holders[1].last_ns, 15 * ms);
  EXPECT_FALSE(r.holders[1].ended);
  EXPECT_TRUE(r.holders[2].ended);
}

TEST(lock_history, lines_of_two_holders_interleaved_in_the_file_are_judged_by_time) {
  // Appends from two processes land in any order; only T matters.
  auto r = check("start 1 1000000\n"
                 "start 2 30000000\n"
                 "end 1 20000000\n"
                 "end 2 40000000\n");
  EXPECT_TRUE(r.violations.empty());
}

TEST(lock_history, a_holder_running_past_the_next_ones_start_is_an_overlap) {
  auto r = check("start 1 0\n"
                 "start 2 10000000\n"
                 "alive 1 13000000\n"
                 "alive 2 14000000\n");
  EXPECT_EQ(r.count(rule::overlap), 1u);
  EXPECT_EQ(r.count(rule::token_order), 0u);
  EXPECT_EQ(r.max_overlap_ns(), 3 * ms);
  // the smaller token also ran after the larger one started
  EXPECT_EQ(r.count(rule::stale_token), 1u);
}

TEST(lock_history, overlap_is_how_long_the_earlier_holder_ran_past_the_later_ones_start) {
  // Also when the later holder is gone first: the earlier one's work went on.
  auto r = check("start 1 0\n"
                 "start 2 10000000\n"
                 "end 2 12000000\n"
                 "end 1 50000000\n");
  ASSERT_EQ(r.count(rule::overlap), 1u);
  for (auto& v : r.violations) {
    if (v.broken == rule::overlap) {
      EXPECT_EQ(v.amount_ns, 40 * ms);
    }
  }
}

TEST(lock_history, a_later_start_with_a_smaller_token_breaks_token_order) {
  auto r = check("start 7 0\n"
                 "end 7 5000000\n"
                 "start 6 10000000\n"
                 "end 6 15000000\n");
  EXPECT_EQ(r.count(rule::overlap), 0u);
  EXPECT_EQ(r.count(rule::token_order), 1u);
  // token 6 ran after the larger token 7 started
  EXPECT_EQ(r.count(rule::stale_token), 1u);
}

TEST(lock_history, the_same_token_granted_twice_breaks_token_order) {
  auto r = check("start 3 0\n"
                 "end 3 5000000\n"
                 "start 3 10000000\n");
  EXPECT_EQ(r.count(rule::token_order), 1u);
  EXPECT_EQ(r.holders.size(), 1u);
}

TEST(lock_history, two_processes_with_one_token_are_two_holders_that_overlap) {
  // What etcdctl lock 3.4 did here: two waiters granted at once, one ETCD_LOCK_REV.
  auto r = check("start 10 0 2 501 500\n"
                 "start 10 1000000 1 601 600\n"
                 "end 10 8000000 1 601 600\n"
                 "end 10 9000000 2 501 500\n");
  EXPECT_EQ(r.holders.size(), 2u);
  EXPECT_EQ(r.count(rule::token_order), 1u);
  EXPECT_EQ(r.count(rule::overlap), 1u);
  EXPECT_EQ(r.count(rule::stale_token), 0u); // neither token is larger
  EXPECT_EQ(r.max_overlap_ns(), 8 * ms);
}

TEST(lock_history, a_smaller_token_alive_after_a_larger_ones_start_is_stale) {
  auto r = check("start 10 0\n"
                 "end 10 2000000\n"
                 "start 20 3000000\n"
                 "end 20 4000000\n"
                 "alive 10 7000000\n"); // token 10's probe said "end" yet ran on
  EXPECT_EQ(r.count(rule::stale_token), 1u);
  EXPECT_EQ(r.max_overlap_ns(), 4 * ms);
}

TEST(lock_history, unparsable_lines_and_lines_before_a_start_are_malformed) {
  auto r = check("start 1 0\n"
                 "alive x 5\n"
                 "alive -1 5\n"
                 "aliv 1 5\n"
                 "alive 4 9000000\n"
                 "\n");
  EXPECT_EQ(r.malformed.size(), 5u);
  EXPECT_EQ(r.holders.size(), 1u);
}

TEST(lock_history, summary_line_names_every_count) {
  auto r = check("start 1 0\nstart 2 10000000\nalive 1 13000000\n");
  std::ostringstream out;
  print_report(r, out);
  auto text = out.str();
  EXPECT_NE(text.find("violation (overlap): token 1 still ran 3.0 ms after token 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("summary holders=2 ended=0 lines=3 violations=2 overlap=1 order=0 "
                      "stale=1 max_overlap_ms=3.0 malformed=0"),
            std::string::npos)
      << text;
}

TEST(fault_log, an_overlap_follows_the_client_fault_on_the_earlier_holder) {
  auto r = check("start 1 0 0 11 10\n"
                 "start 2 3000000000 1 21 20\n" // granted while token 1 ran on
                 "end 1 4000000000 0 11 10\n");
  std::istringstream log("1000000000 client-stop pid 10 token 1 for 4000 ms\n"
                         "2000000000 member-stop etcd m2 for 1000 ms\n");
  auto by = overlaps_by_fault(r, read_faults(log));
  EXPECT_EQ(by["client-stop"], 1u);
  EXPECT_EQ(by["member-stop"], 0u);
  EXPECT_EQ(by["none"], 0u);
}

TEST(fault_log, without_a_client_fault_an_overlap_follows_the_last_recent_fault) {
  auto r = check("start 1 0\n"
                 "start 2 20000000000\n"
                 "end 1 21000000000\n"
                 "start 3 60000000000\n"
                 "end 2 61000000000\n");
  std::istringstream log("18000000000 member-kill etcd m1, restart after 2000 ms\n"
                         "19000000000 client-kill pid 7 token 9\n");
  auto by = overlaps_by_fault(r, read_faults(log));
  EXPECT_EQ(by["client-kill"], 1u); // the last fault before token 2's start
  EXPECT_EQ(by["member-kill"], 0u);
  EXPECT_EQ(by["none"], 1u); // token 3's start: no fault in the 15 s before
}
