// Each checker of the jobs workload against a hand-made trace: a clean one
// passes all nine, and a trace broken in one way makes exactly the checker of
// that property complain — so every checker can fail.
#include "runtime/sim/jobs_checkers.hpp"

#include "protocols/workflow/store_layout.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace std::chrono_literals;
namespace sim = conclave::sim;
namespace wf = conclave::workflow;
using wf::event_kind;

namespace {

wf::job_event event(event_kind k, uint32_t step, uint32_t attempt, bool undo = false) {
  wf::job_event e;
  e.job = wf::job_id{"j1"};
  e.kind = k;
  e.step = wf::step_index{step};
  e.attempt = wf::attempt{attempt};
  if (undo)
    e.detail = "compensation";
  return e;
}

/// A job of three steps: step 1 needed a second attempt, then step 2 failed
/// for good and steps 1 and 0 were compensated, newest first.
sim::jobs_observation clean() {
  sim::jobs_observation obs;
  sim::job_trace t;
  t.id = wf::job_id{"j1"};
  t.events = {event(event_kind::received, 0, 0),
              event(event_kind::step_started, 0, 1),
              event(event_kind::step_completed, 0, 1),
              event(event_kind::step_started, 1, 1),
              event(event_kind::retrying, 1, 1),
              event(event_kind::step_started, 1, 2),
              event(event_kind::step_completed, 1, 2),
              event(event_kind::step_started, 2, 1),
              event(event_kind::step_failed, 2, 1),
              event(event_kind::compensating, 2, 0),
              event(event_kind::step_started, 1, 3, true),
              event(event_kind::step_completed, 1, 3, true),
              event(event_kind::step_started, 0, 2, true),
              event(event_kind::step_completed, 0, 2, true),
              event(event_kind::compensated, 0, 0)};
  wf::job_view v;
  v.job.id = t.id;
  v.job.state = wf::job_state::compensated;
  v.job.updated = wf::timestamp{5ms} + 200ms; // origin 5 ms, final at run time 200 ms
  t.view = v;
  obs.jobs.push_back(t);
  obs.effects = {{"j1/0", 1}, {"j1/1", 1}, {"j1/1/undo", 1}, {"j1/0/undo", 1}};
  obs.dispatches = {{"j1 step 0 attempt 1", 1},
                    {"j1 step 1 attempt 1", 1},
                    {"j1 step 1 attempt 2", 1},
                    {"j1 undo 1 attempt 3", 1},
                    {"j1 undo 0 attempt 2", 1}};
  obs.origin = wf::timestamp{5ms};
  obs.heal = wf::timestamp{100ms};
  obs.bound = 500ms;
  obs.listed.emplace();
  (*obs.listed)[static_cast<uint8_t>(wf::job_state::compensated)] = {t.id};
  obs.index_rows.emplace();
  (*obs.index_rows)[wf::layout::state] = {
      wf::layout::state_key(wf::job_state::compensated, t.id)};
  return obs;
}

std::vector<sim::jobs_violation> check(const sim::jobs_observation& obs) {
  return sim::run_checkers(sim::standard_jobs_checkers(), obs);
}

/// The names of the checkers that complained.
std::set<std::string> who(const std::vector<sim::jobs_violation>& vs) {
  std::set<std::string> names;
  for (auto& v : vs)
    names.insert(v.checker);
  return names;
}

} // namespace

TEST(jobs_checkers, a_clean_trace_passes_all_nine) {
  EXPECT_EQ(sim::standard_jobs_checkers().size(), 9u);
  auto vs = check(clean());
  for (auto& v : vs)
    ADD_FAILURE() << v.checker << ": " << v.what;
}

TEST(jobs_checkers, a_job_not_final_at_heal_plus_bound_is_a_liveness_failure) {
  auto obs = clean();
  obs.jobs[0].view->job.state = wf::job_state::processing;
  (*obs.listed)[static_cast<uint8_t>(wf::job_state::compensated)].clear();
  (*obs.listed)[static_cast<uint8_t>(wf::job_state::processing)] = {obs.jobs[0].id};
  obs.index_rows.reset(); // a view without steps: its rows are not the point here
  auto vs = check(obs);
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_EQ(vs[0].checker, "final_within_bound");
  EXPECT_FALSE(vs[0].safety);
  EXPECT_NE(vs[0].what.find("still processing"), std::string::npos) << vs[0].what;
  // ... unless liveness is not judged (no majority up with its log).
  obs.judge_liveness = false;
  EXPECT_TRUE(check(obs).empty());
}

TEST(jobs_checkers, a_job_final_only_after_the_bound_is_a_liveness_failure) {
  auto obs = clean();
  obs.jobs[0].view->job.updated = obs.origin + obs.heal + obs.bound + 1ms;
  EXPECT_EQ(who(check(obs)), std::set<std::string>{"final_within_bound"});
  obs.jobs[0].view.reset();
  EXPECT_EQ(who(check(obs)), std::set<std::string>{"final_within_bound"});
}

TEST(jobs_checkers, a_step_completed_for_two_attempts_is_caught) {
  auto obs = clean();
  auto& ev = obs.jobs[0].events;
  // Step 0 is claimed again and completes a second time.
  ev.insert(ev.begin() + 3, {event(event_kind::step_started, 0, 2),
                             event(event_kind::step_completed, 0, 2)});
  auto vs = check(obs);
  EXPECT_EQ(who(vs), std::set<std::string>{"one_completion_per_step"});
  EXPECT_NE(vs[0].what.find("attempts 1, 2"), std::string::npos) << vs[0].what;
  EXPECT_TRUE(vs[0].safety);
}

TEST(jobs_checkers, a_late_reply_of_an_older_attempt_accepted_is_caught) {
  auto obs = clean();
  // Step 1's completion is recorded for attempt 1 while attempt 2 runs.
  obs.jobs[0].events[6] = event(event_kind::step_completed, 1, 1);
  auto vs = check(obs);
  EXPECT_EQ(who(vs), std::set<std::string>{"no_stale_completion"});
  EXPECT_NE(vs[0].what.find("attempt 1 while attempt 2"), std::string::npos)
      << vs[0].what;
}

TEST(jobs_checkers, compensation_in_the_order_of_completion_is_caught) {
  auto obs = clean();
  auto& ev = obs.jobs[0].events;
  // Undo step 0 first, then step 1: the forward order, not its reverse.
  std::swap(ev[10], ev[12]);
  std::swap(ev[11], ev[13]);
  auto vs = check(obs);
  EXPECT_EQ(who(vs), std::set<std::string>{"reverse_compensation"});
  EXPECT_NE(vs[0].what.find("expected 1,0"), std::string::npos) << vs[0].what;
}

TEST(jobs_checkers, a_key_applied_twice_or_never_is_caught) {
  auto obs = clean();
  obs.effects["j1/1"] = 2; // a service that applied a retry again
  auto vs = check(obs);
  EXPECT_EQ(who(vs), std::set<std::string>{"one_effect_per_key"});
  EXPECT_NE(vs[0].what.find("j1/1 took effect 2 times"), std::string::npos) << vs[0].what;
  obs = clean();
  obs.effects.erase("j1/0/undo"); // recorded compensated, never applied
  vs = check(obs);
  EXPECT_EQ(who(vs), std::set<std::string>{"one_effect_per_key"});
  EXPECT_NE(vs[0].what.find("never took effect"), std::string::npos) << vs[0].what;
}

TEST(jobs_checkers, one_attempt_dispatched_twice_is_caught) {
  // Two schedulers that both hold one claim (a lost update on the job row)
  // dispatch the same attempt; with an idempotent service nothing else shows.
  auto obs = clean();
  obs.dispatches["j1 step 1 attempt 2"] = 2;
  auto vs = check(obs);
  EXPECT_EQ(who(vs), std::set<std::string>{"one_dispatch_per_attempt"});
  ASSERT_FALSE(vs.empty());
  EXPECT_NE(vs[0].what.find("j1 step 1 attempt 2 dispatched 2 times"), std::string::npos)
      << vs[0].what;
  EXPECT_TRUE(vs[0].safety);
}

TEST(jobs_checkers, a_list_by_state_that_disagrees_with_the_documents_is_caught) {
  auto listed_as = [](wf::job_state s) { return static_cast<uint8_t>(s); };
  // Missing from its own state's list.
  auto obs = clean();
  (*obs.listed)[listed_as(wf::job_state::compensated)].clear();
  auto vs = check(obs);
  EXPECT_EQ(who(vs), std::set<std::string>{"list_by_state"});
  ASSERT_FALSE(vs.empty());
  EXPECT_NE(vs[0].what.find("j1 is compensated but not listed"), std::string::npos)
      << vs[0].what;
  EXPECT_TRUE(vs[0].safety);
  // Also listed under another state of its class (an unfiltered active class).
  obs = clean();
  obs.jobs[0].view->job.state = wf::job_state::pending;
  obs.judge_liveness = false;
  (*obs.listed)[listed_as(wf::job_state::compensated)].clear();
  (*obs.listed)[listed_as(wf::job_state::pending)] = {obs.jobs[0].id};
  (*obs.listed)[listed_as(wf::job_state::processing)] = {obs.jobs[0].id};
  obs.index_rows.reset();
  vs = check(obs);
  EXPECT_EQ(who(vs), std::set<std::string>{"list_by_state"});
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_NE(vs[0].what.find("j1 listed as processing but is pending"), std::string::npos)
      << vs[0].what;
  // Twice in one list, and a job the run never submitted.
  obs = clean();
  (*obs.listed)[listed_as(wf::job_state::compensated)] = {obs.jobs[0].id, obs.jobs[0].id,
                                                          wf::job_id{"ghost"}};
  vs = check(obs);
  ASSERT_EQ(vs.size(), 2u);
  auto said = vs[0].what + " | " + vs[1].what;
  EXPECT_NE(said.find("j1 listed 2 times"), std::string::npos) << said;
  EXPECT_NE(said.find("ghost listed as compensated but not a job of the run"),
            std::string::npos)
      << said;
  // Not read: nothing to judge.
  obs = clean();
  obs.listed.reset();
  obs.index_rows.reset();
  EXPECT_TRUE(check(obs).empty());
}

// A stale row of the active class is filtered out of every list, and a stale
// ready or due row only costs polls: only the index rows show them.
TEST(jobs_checkers, an_index_row_stale_or_missing_is_caught) {
  auto obs = clean();
  auto id = obs.jobs[0].id;
  (*obs.index_rows)[wf::layout::state].push_back(
      wf::layout::state_key(wf::job_state::pending, id));
  (*obs.index_rows)[wf::layout::ready].push_back(
      wf::layout::ready_key(wf::timestamp{1ms}, id));
  auto vs = check(obs);
  EXPECT_EQ(who(vs), std::set<std::string>{"indexes_in_step"});
  ASSERT_EQ(vs.size(), 2u);
  EXPECT_EQ(vs[0].what, "wf.state: 1 stale row(s), 0 missing, of 1 the documents imply");
  EXPECT_EQ(vs[1].what, "wf.ready: 1 stale row(s), 0 missing, of 0 the documents imply");
  (*obs.index_rows)[wf::layout::state].clear();
  (*obs.index_rows)[wf::layout::ready].clear();
  vs = check(obs);
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_EQ(vs[0].what, "wf.state: 0 stale row(s), 1 missing, of 1 the documents imply");
  EXPECT_TRUE(vs[0].safety);
}

TEST(jobs_checkers, a_recovery_past_the_attempt_fence_is_caught) {
  auto obs = clean();
  auto& ev = obs.jobs[0].events;
  // A late recovery of step 1's attempt 1 lands while attempt 2 runs.
  ev.insert(ev.begin() + 6, event(event_kind::retrying, 1, 1));
  auto vs = check(obs);
  EXPECT_EQ(who(vs), std::set<std::string>{"recovery_of_current_attempt"});
  ASSERT_FALSE(vs.empty());
  EXPECT_NE(vs[0].what.find("attempt 1 while attempt 2"), std::string::npos)
      << vs[0].what;
  EXPECT_TRUE(vs[0].safety);
  // The same attempt recovered twice.
  obs = clean();
  obs.jobs[0].events.insert(obs.jobs[0].events.begin() + 5,
                            event(event_kind::retrying, 1, 1));
  vs = check(obs);
  EXPECT_EQ(who(vs), std::set<std::string>{"recovery_of_current_attempt"});
  ASSERT_FALSE(vs.empty());
  EXPECT_NE(vs[0].what.find("twice for attempt 1"), std::string::npos) << vs[0].what;
}
