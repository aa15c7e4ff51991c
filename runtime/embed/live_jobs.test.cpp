// The facade's view of jobs (include/conclave/workflow.hpp): a job as the
// store holds it, and the calls before the node's workflow actors run.
#include "runtime/embed/live_jobs.hpp"

#include "protocols/workflow/lifecycle.hpp"

#include <gtest/gtest.h>

using namespace conclave;
namespace wf = conclave::workflow;
using namespace std::chrono_literals;

namespace {

wf::job_view two_step_job() {
  wf::job_spec spec;
  spec.id = wf::job_id{"j-1"};
  for (auto kind : {"greet", "exec"}) {
    wf::step_spec s;
    s.agent_kind = kind;
    s.payload = "p";
    spec.steps.push_back(s);
  }
  wf::effects e;
  return wf::make_job(spec, wf::timestamp{1'000'000'000}, e);
}

} // namespace

TEST(embedded_jobs, a_pending_job_shows_its_steps_and_what_happens_next) {
  auto s = embed::to_status(two_step_job(), wf::timestamp{2'000'000'000});
  EXPECT_EQ(s.id, "j-1");
  EXPECT_EQ(s.state, "pending");
  EXPECT_FALSE(s.final);
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].kind, "greet");
  EXPECT_EQ(s.steps[1].kind, "exec");
  EXPECT_EQ(s.steps[0].state, "pending");
  EXPECT_NE(s.explanation.find("j-1"), std::string::npos) << s.explanation;
}

TEST(embedded_jobs, a_final_job_has_no_explanation) {
  auto v = two_step_job();
  v.job.state = wf::job_state::cancelled;
  auto s = embed::to_status(v, wf::timestamp{2'000'000'000});
  EXPECT_TRUE(s.final);
  EXPECT_EQ(s.state, "cancelled");
  EXPECT_TRUE(s.explanation.empty());
}

TEST(embedded_jobs,
     calls_before_the_node_runs_wait_their_timeout_then_fail_with_a_reason) {
  embed::live_jobs jobs;
  job_request r;
  r.steps.push_back({"greet", "x"});
  auto t0 = std::chrono::steady_clock::now();
  auto a = jobs.submit(r, 30ms);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 30ms); // it waited for the node
  EXPECT_FALSE(a);
  EXPECT_NE(a.error.find("not running"), std::string::npos);
  EXPECT_FALSE(jobs.get("j-1", 1ms));
  EXPECT_FALSE(jobs.cancel("j-1", 1ms));
  EXPECT_FALSE(jobs.resubmit("j-1", 1ms));
  EXPECT_NE(jobs.list("pending", 1ms).error.find("not running"), std::string::npos);
  // A state name is checked first.
  EXPECT_NE(jobs.list("stuck", 1ms).error.find("no such state 'stuck'"),
            std::string::npos);
}

TEST(embedded_jobs, calls_after_the_node_stopped_fail_at_once) {
  embed::live_jobs jobs;
  jobs.clear();
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(jobs.get("j-1", 10s));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}
