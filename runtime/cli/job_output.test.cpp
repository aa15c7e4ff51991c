#include "runtime/cli/job_output.hpp"

#include "protocols/workflow/lifecycle.hpp"

#include <gtest/gtest.h>

namespace job = conclave::cli::job;
namespace wf = conclave::workflow;
using namespace std::chrono_literals;

namespace {

wf::job_view sample_job() {
  wf::job_spec spec;
  spec.id.value = "j0123abcd-1";
  for (auto payload : {"50", "echo hi\nthere"}) {
    wf::step_spec s;
    s.agent_kind = "sleep";
    s.payload = payload;
    s.timeout = 2s;
    spec.steps.push_back(s);
  }
  wf::effects e;
  return wf::make_job(spec, wf::timestamp{1s}, e);
}

size_t lines(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

} // namespace

TEST(job_output, a_table_aligns_its_columns_and_trims_trailing_spaces) {
  auto t = job::render_table({{"ID", "STATE"}, {"a-long-id", "pending"}, {"b", ""}});
  EXPECT_EQ(t, "ID         STATE\n"
               "a-long-id  pending\n"
               "b\n");
}

TEST(job_output, a_jobs_table_has_a_head_line_and_one_row_per_step_on_one_line_each) {
  auto v = sample_job();
  auto t = job::job_table(v, wf::timestamp{3s});
  EXPECT_EQ(lines(t), 1u + 1u + v.steps.size()) << t;
  EXPECT_NE(t.find("job j0123abcd-1  pending  2 steps"), std::string::npos) << t;
  EXPECT_NE(t.find("updated 2000 ms ago"), std::string::npos) << t;
  EXPECT_NE(t.find("echo hi\\nthere"), std::string::npos) << t; // escaped, one row
}

TEST(job_output, a_jobs_json_names_every_step_and_its_state) {
  auto v = sample_job();
  auto j = job::to_json(v, wf::timestamp{3s});
  EXPECT_EQ(j["id"], "j0123abcd-1");
  EXPECT_EQ(j["state"], "pending");
  EXPECT_EQ(j["final"], false);
  ASSERT_EQ(j["steps"].size(), 2u);
  EXPECT_EQ(j["steps"][1]["payload"], "echo hi\nthere");
  EXPECT_EQ(j["steps"][0]["timeout_ms"], 2000);
  EXPECT_EQ(j["steps"][0]["locked_by"], nullptr);
  EXPECT_EQ(j["steps"][0]["complete_by_ns"], nullptr);
  // The dump parses back.
  EXPECT_EQ(nlohmann::json::parse(job::dump(j)), j);
}

TEST(job_output, bytes_that_are_not_utf8_are_replaced_never_thrown) {
  auto v = sample_job();
  v.steps[0].spec.payload = "\xff\xfe binary";
  v.job.last_error = "bad \xc3";
  auto text = job::dump(job::to_json(v, wf::timestamp{0}));
  auto back = nlohmann::json::parse(text);
  EXPECT_NE(back["steps"][0]["payload"].get<std::string>().find("binary"),
            std::string::npos);
  EXPECT_EQ(lines(job::job_table(v, wf::timestamp{0})), 5u); // + last error line
}

TEST(job_output, a_list_prints_a_header_and_rows_or_a_json_array) {
  std::vector<job::list_row> rows{{wf::job_id{"a"}, wf::job_state::processed},
                                  {wf::job_id{"bb"}, wf::job_state::error}};
  EXPECT_EQ(job::list_table(rows), "ID  STATE\n"
                                   "a   processed\n"
                                   "bb  error\n");
  EXPECT_EQ(job::list_table({}), "ID  STATE\n");
  auto j = job::list_json(rows, true);
  EXPECT_EQ(j["jobs"][1]["id"], "bb");
  EXPECT_EQ(j["jobs"][1]["state"], "error");
  EXPECT_EQ(j["truncated"], true);
  EXPECT_EQ(job::list_json({}, false)["jobs"].size(), 0u);
}

TEST(job_output, an_event_is_one_line_whatever_its_detail) {
  wf::job_event e;
  e.job.value = "j";
  e.seq = 3;
  e.kind = wf::event_kind::retrying;
  e.step.value = 1;
  e.attempt.value = 2;
  e.detail = "transient: timeout\nagain";
  EXPECT_EQ(job::event_line(e), "seq 3 retrying step 1 attempt 2: transient: "
                                "timeout\\nagain");
  auto j = job::to_json(e);
  EXPECT_EQ(j["kind"], "retrying");
  EXPECT_EQ(j["seq"], 3);
}

TEST(job_output, an_explanation_is_the_protocols_line_on_one_line_and_its_fields) {
  auto v = sample_job();
  v.steps[0].last_error = "x\ny";
  auto now = wf::timestamp{2s};
  auto r = wf::explain(v, now);
  auto line = job::report_line(r, now);
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_EQ(line.rfind("job j0123abcd-1 pending", 0), 0u) << line;
  auto j = job::to_json(r, now);
  EXPECT_EQ(j["id"], "j0123abcd-1");
  EXPECT_EQ(j["next"], wf::to_string(r.next));
  EXPECT_EQ(j["step"], 0);
  EXPECT_FALSE(j["text"].get<std::string>().empty());
}
