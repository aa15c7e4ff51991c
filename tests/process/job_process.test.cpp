// `conclave job` against real processes: bad input refused before anything
// is sent (exit 2, one line), the time bound when no member answers, and
// jobs run by a 3-node cluster on loopback (the nodes' demo agents: sleep,
// fail) followed through submit --wait, get, list, watch, explain, cancel and
// resubmit.
#include "tests/process/process_support.hpp"

#include <regex>
#include <set>

using namespace conclave::process_test;
using namespace std::chrono_literals;

namespace {

void expect_bad_input(const std::string& args, const std::string& line_part) {
  auto r = run_conclave(args, true);
  EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
  EXPECT_NE(r.out.find(line_part), std::string::npos) << args << "\n" << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << "\n" << r.out;
  EXPECT_EQ(r.out.rfind("conclave: error: ", 0), 0u) << args << "\n" << r.out;
}

struct temp_spec {
  std::filesystem::path path;
  explicit temp_spec(const std::string& content) {
    path = std::filesystem::temp_directory_path()
           / ("conclave-job-" + std::to_string(::getpid()) + "-"
              + std::to_string(counter()++) + ".json");
    std::ofstream{path} << content;
  }
  ~temp_spec() { std::filesystem::remove(path); }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

nlohmann::json parse(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << text;
  return j;
}

} // namespace

TEST(job_cli, bad_input_is_one_line_and_exit_2_before_connecting) {
  // No member listens there: every case below must fail before dialing.
  std::string at = " --peers 1@127.0.0.1:" + std::to_string(free_port());
  expect_bad_input("job submit" + at, "no steps");
  expect_bad_input("job submit" + at + " :payload", "no agent kind");
  expect_bad_input("job submit" + at + " 'sl eep:1'", "space or a control character");
  expect_bad_input("job submit" + at + " --timeout 10x sleep:1", "--timeout:");
  expect_bad_input("job submit" + at + " --timeout 0 sleep:1", "timeout must be above 0");
  expect_bad_input("job submit" + at + " --attempts 0 sleep:1", "attempts");
  expect_bad_input("job submit" + at + " --failure-threshold 0 sleep:1",
                   "failure threshold");
  expect_bad_input("job submit" + at + " --attempts many sleep:1", "--attempts");
  expect_bad_input("job submit" + at + " --file /nonexistent/spec.json",
                   "--file /nonexistent/spec.json: cannot be read");
  temp_spec garbage{"{\"steps\": [{\"kind\": \"sleep\", }]}"};
  expect_bad_input("job submit" + at + " --file " + garbage.path.string(),
                   "not valid JSON (at line 1");
  temp_spec typo{R"({"steps": [{"kind": "sleep", "timeout": 5}]})"};
  expect_bad_input("job submit" + at + " --file " + typo.path.string(),
                   "unknown field 'timeout'");
  temp_spec good{R"({"steps": [{"kind": "sleep"}]})"};
  expect_bad_input("job submit" + at + " --file " + good.path.string() + " sleep:1",
                   "not both");
  expect_bad_input("job submit" + at + " --wait --wait-timeout soon sleep:1",
                   "--wait-timeout:");
  expect_bad_input("job submit sleep:1", "give --peers");
  expect_bad_input("job get x --dir /nonexistent", "no cluster in /nonexistent");
  expect_bad_input("job list" + at + " --state done", "--state: expected pending");
  expect_bad_input("job get" + at, "ID is required");
  expect_bad_input("job get x --bogus 1" + at, "--bogus");
  expect_bad_input("job frob", "unknown command 'job frob'");
  expect_bad_input("job", "subcommand");
  expect_bad_input("job watch x" + at + " --wait-timeout -1s", "--wait-timeout:");
}

TEST(job_cli, no_member_answering_ends_within_the_timeout) {
  std::string at = " --peers 1@127.0.0.1:" + std::to_string(free_port());
  for (auto cmd : {"job get x", "job list", "job explain", "job submit sleep:1"}) {
    auto start = std::chrono::steady_clock::now();
    auto r = run_conclave(std::string{cmd} + at + " --timeout-ms 700", true);
    auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(r.status, 1) << cmd << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << cmd << "\n" << r.out;
    EXPECT_LT(took, 3s) << cmd << "\n" << r.out;
  }
}

class job_cluster : public cluster_test {
protected:
  void SetUp() override {
    cluster_test::SetUp();
    auto j = up(3, "--insecure");
    ASSERT_TRUE(j.contains("leader")) << j.dump();
  }

  run_result job(const std::string& args, bool with_stderr = false) {
    return run_conclave("job " + args + " --timeout-ms 10000 --dir " + dir.string(),
                        with_stderr);
  }
};

TEST_F(job_cluster, jobs_run_to_their_final_state_and_every_command_agrees) {
  // Three short jobs and one that fails for good, each waited for.
  std::vector<std::string> ok_ids;
  for (int i = 0; i < 3; ++i) {
    auto r = job("submit --wait --wait-timeout 60s --json sleep:50");
    ASSERT_EQ(r.status, 0) << r.out;
    auto j = parse(r.out);
    EXPECT_EQ(j["state"], "processed") << r.out;
    ok_ids.push_back(j["id"].get<std::string>());
    EXPECT_TRUE(std::regex_match(ok_ids.back(), std::regex{"j[0-9a-f]{8}-1"}))
        << ok_ids.back();
  }
  EXPECT_EQ(std::set<std::string>(ok_ids.begin(), ok_ids.end()).size(), 3u);
  auto f = job("submit --id doomed --attempts 1 --wait --wait-timeout 60s --json "
               "fail:permanent");
  EXPECT_EQ(f.status, 1) << f.out;
  EXPECT_EQ(parse(f.out)["state"], "error") << f.out;

  for (auto& id : ok_ids) {
    auto g = job("get --json " + id);
    ASSERT_EQ(g.status, 0) << g.out;
    auto j = parse(g.out);
    EXPECT_EQ(j["state"], "processed");
    EXPECT_EQ(j["steps"][0]["kind"], "sleep");
    EXPECT_EQ(j["steps"][0]["payload"], "50");
  }
  auto d = parse(job("get --json doomed").out);
  EXPECT_EQ(d["state"], "error");
  EXPECT_FALSE(d["steps"][0]["last_error"].get<std::string>().empty()) << d.dump();

  auto l = job("list --json");
  ASSERT_EQ(l.status, 0) << l.out;
  std::map<std::string, std::string> listed;
  auto all = parse(l.out);
  for (auto& row : all["jobs"])
    listed[row["id"].get<std::string>()] = row["state"].get<std::string>();
  EXPECT_EQ(listed.size(), 4u) << l.out;
  for (auto& id : ok_ids)
    EXPECT_EQ(listed[id], "processed") << l.out;
  EXPECT_EQ(listed["doomed"], "error") << l.out;
  auto errors = parse(job("list --json --state error").out)["jobs"];
  ASSERT_EQ(errors.size(), 1u) << errors.dump();
  EXPECT_EQ(errors[0]["id"], "doomed");

  // Nothing unfinished: explain has nothing to say.
  auto e = job("explain");
  EXPECT_EQ(e.status, 0);
  EXPECT_EQ(e.out, "");

  // watch of a finished job prints its events and ends with its outcome.
  auto w = job("watch " + ok_ids[0]);
  EXPECT_EQ(w.status, 0) << w.out;
  EXPECT_NE(w.out.find("received"), std::string::npos) << w.out;
  EXPECT_NE(w.out.find("completed"), std::string::npos) << w.out;
  EXPECT_EQ(job("watch doomed --json").status, 1);

  // A finished job cannot be cancelled; a failed one can run again.
  auto c = job("cancel " + ok_ids[1], true);
  EXPECT_EQ(c.status, 1) << c.out;
  auto rs = job("resubmit --json doomed");
  EXPECT_EQ(rs.status, 0) << rs.out;
  EXPECT_FALSE(parse(rs.out)["state"] == "error") << rs.out;

  // Unknown jobs fail; an unknown kind is bad input and submits nothing.
  EXPECT_EQ(job("get nosuchjob").status, 1);
  auto u = job("submit teleport:x", true);
  EXPECT_EQ(u.status, 2) << u.out;
  EXPECT_NE(u.out.find("unknown agent kind 'teleport'"), std::string::npos) << u.out;
  EXPECT_EQ(std::count(u.out.begin(), u.out.end(), '\n'), 1) << u.out;
  auto after = parse(job("list --json").out)["jobs"];
  EXPECT_EQ(after.size(), 4u) << after.dump();
}

TEST_F(job_cluster, the_nodes_export_the_workflow_counters_but_not_partial_state_gauges) {
  for (int i = 0; i < 3; ++i) {
    auto r = job("submit --wait --wait-timeout 60s sleep:10 sleep:10");
    ASSERT_EQ(r.status, 0) << r.out;
  }
  bool no_gauges = false;
  auto dispatched =
      sum_metric(status(), "conclave_workflow_dispatches_total{action=\"step\"}",
                 "conclave_workflow_jobs", &no_gauges);
  EXPECT_GE(dispatched, 6.0); // every step claimed and sent, on some node
  EXPECT_TRUE(no_gauges);     // a node's own +1/-1 say nothing of the cluster's jobs
}

TEST_F(job_cluster, a_cancelled_job_stops_and_watch_reports_it) {
  auto r = job("submit --json sleep:30000");
  ASSERT_EQ(r.status, 0) << r.out;
  auto id = parse(r.out)["id"].get<std::string>();
  auto ex = job("explain " + id);
  EXPECT_EQ(ex.status, 0) << ex.out;
  EXPECT_EQ(ex.out.rfind("job " + id, 0), 0u) << ex.out;
  auto c = job("cancel --json " + id);
  ASSERT_EQ(c.status, 0) << c.out;
  EXPECT_EQ(parse(c.out)["state"], "cancelled");
  auto w = job("watch --wait-timeout 30s " + id);
  EXPECT_EQ(w.status, 1) << w.out;
  EXPECT_NE(w.out.find("cancelled"), std::string::npos) << w.out;
}

TEST_F(job_cluster, a_job_whose_kind_no_live_node_serves_waits_and_explain_says_why) {
  // Node 9 registered kind "special" once and is not a member that answers.
  auto put =
      run_conclave("kv --collection wf.agents --dir " + dir.string() + " put 9 special");
  ASSERT_EQ(put.status, 0) << put.out;
  auto r = job("submit --json special:x");
  ASSERT_EQ(r.status, 0) << r.out;
  auto id = parse(r.out)["id"].get<std::string>();
  auto ex = job("explain " + id);
  EXPECT_EQ(ex.status, 0) << ex.out;
  EXPECT_NE(ex.out.find("waits: no live agent of kind special (served by node 9, not "
                        "reachable)"),
            std::string::npos)
      << ex.out;
  auto all = job("explain --json");
  EXPECT_NE(all.out.find("\"waits_for\":\"no live agent of kind special"),
            std::string::npos)
      << all.out;
  // A job whose kinds are served waits for nothing of the kind.
  auto s = job("submit --json sleep:30000");
  ASSERT_EQ(s.status, 0) << s.out;
  auto sid = parse(s.out)["id"].get<std::string>();
  auto sx = job("explain " + sid);
  EXPECT_EQ(sx.out.find("waits:"), std::string::npos) << sx.out;
  EXPECT_EQ(job("cancel " + id).status, 0);
  EXPECT_EQ(job("cancel " + sid).status, 0);
}
