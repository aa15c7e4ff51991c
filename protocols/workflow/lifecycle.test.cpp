// The step lifecycle with plain calls: claims, fencing by attempt, recovery by
// FailureCount, compensation in reverse completion order, cancel, resubmit, and
// the table of legal transitions.
#include "protocols/workflow/lifecycle.hpp"

#include "protocols/workflow/recovery.hpp"

#include <gtest/gtest.h>

using namespace conclave::workflow;
using namespace std::chrono_literals;

namespace {

constexpr scheduler_ref sched_a{1, 1};
constexpr scheduler_ref sched_b{2, 1};

job_spec spec(size_t steps, bool compensate = false, uint32_t threshold = 3) {
  job_spec s;
  s.id = job_id{"j1"};
  s.failure_threshold = threshold;
  for (size_t i = 0; i < steps; ++i) {
    step_spec st;
    st.agent_kind = "svc";
    st.payload = "p" + std::to_string(i);
    st.timeout = 100ms;
    if (compensate)
      st.compensation = compensation_spec{"undo", "u" + std::to_string(i)};
    s.steps.push_back(st);
  }
  return s;
}

job_view job(size_t steps, bool compensate = false, uint32_t threshold = 3) {
  effects e;
  return make_job(spec(steps, compensate, threshold), timestamp{0}, e);
}

step_outcome ok() {
  return {};
}

step_outcome permanent(std::string kind) {
  step_outcome o;
  o.ok = false;
  o.kind = failure_kind::permanent;
  o.error_kind = std::move(kind);
  return o;
}

std::vector<event_kind> kinds(const effects& e) {
  std::vector<event_kind> out;
  for (auto& ev : e.events)
    out.push_back(ev.kind);
  return out;
}

/// Claims and completes the claimable step; returns its index.
step_index run_one(job_view& v, timestamp now) {
  auto c = claim(v, sched_a, now);
  EXPECT_TRUE(c) << c.error().message();
  auto d = *c.value().dispatched;
  auto r = complete(v, d.step, d.attempt, ok(), now);
  EXPECT_TRUE(r);
  return d.step;
}

} // namespace

TEST(lifecycle, a_new_job_has_pending_steps_and_a_received_event) {
  effects e;
  auto v = make_job(spec(3), timestamp{5ms}, e);
  EXPECT_EQ(v.job.state, job_state::pending);
  EXPECT_EQ(v.steps.size(), 3u);
  for (auto& s : v.steps)
    EXPECT_EQ(s.state, step_state::pending);
  EXPECT_EQ(kinds(e), std::vector<event_kind>{event_kind::received});
  EXPECT_EQ(v.job.next_event, 2u);
}

TEST(lifecycle, a_claim_locks_sets_complete_by_and_raises_the_attempt) {
  auto v = job(2);
  auto e = claim(v, sched_a, timestamp{10ms});
  ASSERT_TRUE(e);
  auto& s = v.steps[0];
  EXPECT_EQ(s.state, step_state::processing);
  EXPECT_EQ(s.locked_by, sched_a);
  EXPECT_EQ(*s.complete_by, timestamp{110ms});
  EXPECT_EQ(s.attempt.value, 1u);
  EXPECT_EQ(v.job.state, job_state::processing);
  auto& d = *e.value().dispatched;
  EXPECT_EQ(d.idempotency_key, "j1/0");
  EXPECT_EQ(d.payload, "p0");
  EXPECT_EQ(d.deadline, timestamp{110ms});
  EXPECT_FALSE(d.compensation);
}

TEST(lifecycle, two_schedulers_never_claim_the_same_step) {
  auto v = job(2);
  ASSERT_TRUE(claim(v, sched_a, timestamp{0}));
  auto second = claim(v, sched_b, timestamp{0});
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error(), errc::not_claimable);
  EXPECT_EQ(v.steps[0].locked_by, sched_a);
  // The next step is not claimable before the first completes.
  EXPECT_EQ(v.steps[1].state, step_state::pending);
}

TEST(lifecycle, steps_run_in_order_and_the_job_completes) {
  auto v = job(3);
  for (uint32_t i = 0; i < 3; ++i)
    EXPECT_EQ(run_one(v, timestamp{1ms * i}).value, i);
  EXPECT_EQ(v.job.state, job_state::processed);
  EXPECT_EQ(v.steps[2].completed_seq, 3u);
  EXPECT_FALSE(claimable_step(v, timestamp{1s}));
}

TEST(lifecycle, a_late_reply_of_an_older_attempt_changes_nothing) {
  auto v = job(1);
  auto c1 = claim(v, sched_a, timestamp{0}).value().dispatched->attempt;
  ASSERT_TRUE(recover(v, step_index{0}, c1, recovery_cause::deadline, timestamp{100ms}));
  auto c2 = claim(v, sched_b, timestamp{101ms}).value().dispatched->attempt;
  EXPECT_EQ(c2.value, 2u);
  auto before = encode_doc(v);
  auto late = complete(v, step_index{0}, c1, ok(), timestamp{102ms});
  ASSERT_TRUE(late);
  EXPECT_TRUE(late.value().stale);
  EXPECT_TRUE(late.value().events.empty());
  EXPECT_EQ(encode_doc(v), before);
  EXPECT_EQ(v.steps[0].state, step_state::processing);
  // The current attempt still completes.
  auto cur = complete(v, step_index{0}, c2, ok(), timestamp{103ms});
  ASSERT_TRUE(cur);
  EXPECT_FALSE(cur.value().stale);
  EXPECT_EQ(v.job.state, job_state::processed);
  // And a duplicate of the current attempt's reply is stale too.
  EXPECT_TRUE(complete(v, step_index{0}, c2, ok(), timestamp{104ms}).value().stale);
}

TEST(lifecycle, a_recovery_below_the_threshold_makes_the_step_pending_again) {
  auto v = job(1);
  v.job.recovery_backoff = 50ms;
  auto a = claim(v, sched_a, timestamp{0}).value().dispatched->attempt;
  auto early = recover(v, step_index{0}, a, recovery_cause::deadline, timestamp{50ms});
  EXPECT_EQ(early.error(), errc::wrong_state);
  auto e = recover(v, step_index{0}, a, recovery_cause::deadline, timestamp{100ms});
  ASSERT_TRUE(e);
  auto& s = v.steps[0];
  EXPECT_EQ(s.state, step_state::pending);
  EXPECT_TRUE(s.locked_by.empty());
  EXPECT_FALSE(s.complete_by);
  EXPECT_EQ(s.failure_count, 1u);
  EXPECT_EQ(kinds(e.value()), std::vector<event_kind>{event_kind::retrying});
  EXPECT_FALSE(claimable_step(v, timestamp{149ms}));
  EXPECT_TRUE(claimable_step(v, timestamp{150ms}));
  // The same recovery again (a second supervisor) is stale: counted once.
  auto twice = recover(v, step_index{0}, a, recovery_cause::monitor, timestamp{100ms});
  EXPECT_TRUE(twice.value().stale);
  EXPECT_EQ(s.failure_count, 1u);
}

TEST(lifecycle, a_monitor_recovery_does_not_wait_for_the_deadline) {
  auto v = job(1);
  auto a = claim(v, sched_a, timestamp{0}).value().dispatched->attempt;
  ASSERT_TRUE(recover(v, step_index{0}, a, recovery_cause::monitor, timestamp{1ms}));
  EXPECT_EQ(v.steps[0].state, step_state::pending);
}

TEST(lifecycle, persistent_failure_ends_in_error_at_the_threshold) {
  auto v = job(2, false, 3);
  std::vector<event_kind> last;
  for (int i = 0; i < 3; ++i) {
    auto t = timestamp{1s * i};
    auto a = claim(v, sched_a, t).value().dispatched->attempt;
    step_outcome busy;
    busy.ok = false;
    busy.error_kind = "busy";
    last = kinds(complete(v, step_index{0}, a, busy, t).value());
  }
  EXPECT_EQ(v.steps[0].state, step_state::error);
  EXPECT_EQ(v.steps[0].failure_count, 3u);
  EXPECT_EQ(v.steps[1].state, step_state::cancelled);
  EXPECT_EQ(v.job.state, job_state::error);
  EXPECT_EQ(last, (std::vector<event_kind>{event_kind::step_failed, event_kind::failed}));
}

TEST(lifecycle, a_permanent_error_fails_at_once) {
  auto v = job(2);
  auto a = claim(v, sched_a, timestamp{0}).value().dispatched->attempt;
  auto e = complete(v, step_index{0}, a, permanent("card_declined"), timestamp{1ms});
  ASSERT_TRUE(e);
  EXPECT_EQ(v.steps[0].state, step_state::error);
  EXPECT_EQ(v.steps[0].failure_count, 0u);
  EXPECT_EQ(v.steps[0].last_error, "card_declined");
  EXPECT_EQ(v.job.state, job_state::error);
  EXPECT_NE(e.value().events.back().detail.find("operator"), std::string::npos);
}

TEST(lifecycle, compensation_runs_in_reverse_completion_order) {
  auto v = job(4, true);
  run_one(v, timestamp{0});
  run_one(v, timestamp{1ms});
  run_one(v, timestamp{2ms});
  auto a = claim(v, sched_a, timestamp{3ms}).value().dispatched->attempt;
  auto e = complete(v, step_index{3}, a, permanent("out_of_stock"), timestamp{4ms});
  ASSERT_TRUE(e);
  EXPECT_EQ(v.job.state, job_state::compensating);
  EXPECT_EQ(compensation_order(v),
            (std::vector<step_index>{step_index{2}, step_index{1}, step_index{0}}));
  std::vector<uint32_t> undone;
  for (int i = 0; i < 3; ++i) {
    auto c = claim(v, sched_b, timestamp{10ms});
    ASSERT_TRUE(c);
    auto d = *c.value().dispatched;
    EXPECT_TRUE(d.compensation);
    EXPECT_EQ(d.agent_kind, "undo");
    EXPECT_EQ(d.idempotency_key, "j1/" + std::to_string(d.step.value) + "/undo");
    // Only one compensation at a time.
    EXPECT_FALSE(claim(v, sched_a, timestamp{10ms}));
    ASSERT_TRUE(complete(v, d.step, d.attempt, ok(), timestamp{11ms}));
    undone.push_back(d.step.value);
  }
  EXPECT_EQ(undone, (std::vector<uint32_t>{2, 1, 0}));
  EXPECT_EQ(v.job.state, job_state::compensated);
  EXPECT_EQ(v.steps[3].state, step_state::error);
}

TEST(lifecycle, a_failing_compensation_is_retried_then_reported) {
  auto v = job(2, true, 2);
  run_one(v, timestamp{0});
  auto a = claim(v, sched_a, timestamp{1ms}).value().dispatched->attempt;
  ASSERT_TRUE(complete(v, step_index{1}, a, permanent("x"), timestamp{1ms}));
  ASSERT_EQ(v.job.state, job_state::compensating);
  // First compensation attempt lost: retried.
  auto d1 = *claim(v, sched_a, timestamp{2ms}).value().dispatched;
  ASSERT_TRUE(recover(v, d1.step, d1.attempt, recovery_cause::deadline, timestamp{1s}));
  EXPECT_EQ(v.steps[0].state, step_state::compensating);
  EXPECT_EQ(v.steps[0].compensation_failures, 1u);
  EXPECT_EQ(v.steps[0].failure_count, 0u);
  // Second lost: threshold 2 reached, the job fails with an operator event.
  auto d2 = *claim(v, sched_a, timestamp{2s}).value().dispatched;
  EXPECT_EQ(d2.attempt.value, d1.attempt.value + 1);
  auto e = recover(v, d2.step, d2.attempt, recovery_cause::deadline, timestamp{3s});
  ASSERT_TRUE(e);
  EXPECT_EQ(v.steps[0].state, step_state::error);
  EXPECT_EQ(v.job.state, job_state::error);
  EXPECT_EQ(e.value().events.back().kind, event_kind::compensation_failed);
  // Resubmit resumes the compensation.
  ASSERT_TRUE(resubmit(v, timestamp{4s}));
  EXPECT_EQ(v.job.state, job_state::compensating);
  auto d3 = *claim(v, sched_a, timestamp{4s}).value().dispatched;
  EXPECT_TRUE(d3.compensation);
  ASSERT_TRUE(complete(v, d3.step, d3.attempt, ok(), timestamp{4s}));
  EXPECT_EQ(v.job.state, job_state::compensated);
}

TEST(lifecycle, cancel_abandons_the_running_step_and_its_reply_is_stale) {
  auto v = job(3);
  run_one(v, timestamp{0});
  auto a = claim(v, sched_a, timestamp{1ms}).value().dispatched->attempt;
  auto e = cancel(v, timestamp{2ms});
  ASSERT_TRUE(e);
  EXPECT_EQ(v.job.state, job_state::cancelled);
  EXPECT_EQ(v.steps[1].state, step_state::cancelled);
  EXPECT_EQ(v.steps[2].state, step_state::cancelled);
  EXPECT_TRUE(complete(v, step_index{1}, a, ok(), timestamp{3ms}).value().stale);
  EXPECT_EQ(cancel(v, timestamp{4ms}).error(), errc::wrong_state);
}

TEST(lifecycle, cancel_compensates_completed_steps_when_declared) {
  auto v = job(3, true);
  run_one(v, timestamp{0});
  ASSERT_TRUE(cancel(v, timestamp{1ms}));
  EXPECT_EQ(v.job.state, job_state::compensating);
  auto d = *claim(v, sched_a, timestamp{2ms}).value().dispatched;
  EXPECT_EQ(d.step.value, 0u);
  EXPECT_TRUE(d.compensation);
}

TEST(lifecycle, resubmit_restarts_from_the_failed_step) {
  auto v = job(3, false, 1);
  run_one(v, timestamp{0});
  auto a = claim(v, sched_a, timestamp{1ms}).value().dispatched->attempt;
  ASSERT_TRUE(recover(v, step_index{1}, a, recovery_cause::monitor, timestamp{1ms}));
  ASSERT_EQ(v.job.state, job_state::error);
  auto fresh = job(1);
  EXPECT_EQ(resubmit(fresh, timestamp{0}).error(), errc::wrong_state);
  auto e = resubmit(v, timestamp{5ms});
  ASSERT_TRUE(e);
  EXPECT_EQ(v.job.state, job_state::pending);
  EXPECT_EQ(v.job.current.value, 1u);
  EXPECT_EQ(v.steps[1].failure_count, 0u);
  EXPECT_EQ(v.steps[0].state, step_state::processed);
  EXPECT_EQ(run_one(v, timestamp{6ms}).value, 1u);
  EXPECT_EQ(run_one(v, timestamp{7ms}).value, 2u);
  EXPECT_EQ(v.job.state, job_state::processed);
}

TEST(lifecycle, a_restarted_scheduler_resumes_its_own_locks_only) {
  auto v = job(1);
  auto a = claim(v, sched_a, timestamp{0}).value().dispatched->attempt;
  scheduler_ref reborn{sched_a.instance, sched_a.incarnation + 1};
  EXPECT_EQ(resume(v, step_index{0}, sched_b, timestamp{1ms}).error(),
            errc::not_claimable);
  EXPECT_EQ(resume(v, step_index{0}, sched_a, timestamp{1ms}).error(),
            errc::not_claimable);
  auto r = resume(v, step_index{0}, reborn, timestamp{1ms});
  ASSERT_TRUE(r);
  EXPECT_EQ(v.steps[0].locked_by, reborn);
  EXPECT_EQ(v.steps[0].attempt.value, a.value + 1);
  EXPECT_TRUE(complete(v, step_index{0}, a, ok(), timestamp{2ms}).value().stale);
}

TEST(lifecycle, the_transition_table_matches_the_diagram) {
  using S = step_state;
  EXPECT_TRUE(legal_step_transition(S::pending, S::processing));
  EXPECT_TRUE(legal_step_transition(S::processing, S::processed));
  EXPECT_TRUE(legal_step_transition(S::processing, S::pending));
  EXPECT_TRUE(legal_step_transition(S::processed, S::compensating));
  EXPECT_TRUE(legal_step_transition(S::compensating, S::compensated));
  EXPECT_TRUE(legal_step_transition(S::error, S::pending));
  EXPECT_FALSE(legal_step_transition(S::pending, S::processed));
  EXPECT_FALSE(legal_step_transition(S::processed, S::pending));
  EXPECT_FALSE(legal_step_transition(S::compensated, S::compensating));
  EXPECT_FALSE(legal_step_transition(S::cancelled, S::processing));
  EXPECT_FALSE(legal_job_transition(S::processed, S::compensating));
  EXPECT_FALSE(legal_job_transition(S::compensated, S::pending));
  int legal = 0;
  for (uint8_t a = 0; a < step_state_count; ++a)
    for (uint8_t b = 0; b < step_state_count; ++b)
      legal += legal_step_transition(S(a), S(b));
  EXPECT_EQ(legal, 14);
}
