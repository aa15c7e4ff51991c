// The "why is it stuck" view: where a job is, what happens next and when.
#include "protocols/workflow/explain.hpp"

#include "protocols/workflow/lifecycle.hpp"

#include <gtest/gtest.h>

using namespace conclave::workflow;
using namespace std::chrono_literals;

namespace {

job_view two_steps(uint32_t threshold = 3) {
  job_spec s;
  s.id = job_id{"o-1"};
  s.failure_threshold = threshold;
  s.recovery_backoff = 30ms;
  step_spec st;
  st.agent_kind = "payment";
  st.timeout = 100ms;
  s.steps = {st, st};
  effects e;
  return make_job(s, timestamp{0}, e);
}

} // namespace

TEST(explain, a_new_job_waits_for_a_scheduler) {
  auto v = two_steps();
  auto r = explain(v, timestamp{1ms});
  EXPECT_EQ(r.next, next_action::await_claim);
  EXPECT_EQ(r.step->value, 0u);
  EXPECT_NE(to_string(r, timestamp{1ms}).find("a scheduler claims it"),
            std::string::npos);
}

TEST(explain, a_running_step_names_its_lock_deadline_and_what_follows) {
  auto v = two_steps();
  ASSERT_TRUE(claim(v, scheduler_ref{4, 2}, timestamp{0}));
  auto r = explain(v, timestamp{40ms});
  EXPECT_EQ(r.next, next_action::await_agent);
  EXPECT_EQ(*r.when, timestamp{100ms});
  EXPECT_EQ(r.locked_by, (scheduler_ref{4, 2}));
  EXPECT_EQ(r.attempt.value, 1u);
  EXPECT_EQ(*r.then, recovery_action::retry);
  auto line = to_string(r, timestamp{40ms});
  EXPECT_NE(line.find("locked by scheduler 4/2"), std::string::npos) << line;
  EXPECT_NE(line.find("CompleteBy in 0.060 s"), std::string::npos) << line;
  auto late = explain(v, timestamp{150ms});
  EXPECT_EQ(late.next, next_action::overdue);
}

TEST(explain, the_last_recovery_says_it_will_fail) {
  auto v = two_steps(2);
  auto a = claim(v, scheduler_ref{1, 1}, timestamp{0}).value().dispatched->attempt;
  ASSERT_TRUE(recover(v, step_index{0}, a, recovery_cause::deadline, timestamp{100ms}));
  auto backoff = explain(v, timestamp{110ms});
  EXPECT_EQ(backoff.next, next_action::wait_backoff);
  EXPECT_EQ(*backoff.when, timestamp{130ms});
  EXPECT_NE(backoff.last_error.find("deadline"), std::string::npos);
  ASSERT_TRUE(claim(v, scheduler_ref{1, 1}, timestamp{130ms}));
  EXPECT_EQ(*explain(v, timestamp{131ms}).then, recovery_action::fail);
}

TEST(explain, a_failed_job_asks_for_an_operator) {
  auto v = two_steps(1);
  auto a = claim(v, scheduler_ref{1, 1}, timestamp{0}).value().dispatched->attempt;
  ASSERT_TRUE(recover(v, step_index{0}, a, recovery_cause::monitor, timestamp{1ms}));
  auto r = explain(v, timestamp{2ms});
  EXPECT_EQ(r.next, next_action::operator_action);
  EXPECT_EQ(r.failure_count, 1u);
  EXPECT_NE(to_string(r, timestamp{2ms}).find("operator"), std::string::npos);
}
