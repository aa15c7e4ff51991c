// The `conclave sim` command as users and scripts call it: exit statuses, the one
// line for bad input, JSON on stdout, reproducibility by seed, files under --out.
#include "tests/process/process_support.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

using conclave::process_test::run_conclave;

TEST(sim_cli, a_bad_fault_spec_is_exit_2_with_one_line) {
  auto r = run_conclave("sim --faults 'explode@1s'", true);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("explode"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

TEST(sim_cli, a_bad_flag_is_exit_2) {
  EXPECT_EQ(run_conclave("sim --nodes 0").status, 2);
  EXPECT_EQ(run_conclave("sim --algorithm raft").status, 2);
  EXPECT_EQ(run_conclave("sim --bogus").status, 2);
  EXPECT_EQ(run_conclave("sim --faults 'crash@1s:9' --nodes 5").status, 2);
}

TEST(sim_cli, json_is_one_document_with_the_documented_figures) {
  auto r = run_conclave("sim --algorithm all --nodes 5 --runs 20 --seed 7 --guard "
                        "--faults 'random=4,loss=0.01' --json");
  ASSERT_EQ(r.status, 0) << r.out;
  auto doc = nlohmann::json::parse(r.out); // throws (and fails) if not pure JSON
  for (auto algo : {"bully", "ring"}) {
    auto& a = doc["algorithms"][algo];
    EXPECT_EQ(a["runs"], 20) << algo;
    EXPECT_EQ(a["safety_violations"], 0) << algo;
    EXPECT_EQ(a["liveness_failures"], 0) << algo;
    EXPECT_EQ(a["seed"], 7) << algo;
    EXPECT_GT(a["elections"].get<int>(), 0) << algo;
    EXPECT_TRUE(a["messages_per_election"].contains("mean"));
    EXPECT_TRUE(a["election_latency_ms"].contains("p99"));
    EXPECT_TRUE(a.contains("split_brain_windows"));
  }
}

TEST(sim_cli, the_same_seed_prints_the_same_report) {
  auto args =
      "sim --nodes 6 --runs 10 --seed 99 --faults 'random=3,delay=1ms..5ms' --json";
  auto a = run_conclave(args);
  auto b = run_conclave(args);
  ASSERT_EQ(a.status, 0);
  EXPECT_EQ(a.out, b.out);
}

TEST(sim_cli, out_writes_csv_and_svg_plots) {
  auto dir = std::filesystem::temp_directory_path()
             / ("conclave-sim-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto r = run_conclave("sim --nodes 4,8 --runs 3 --faults 'crash-leader@1s' --out "
                        + dir.string());
  ASSERT_EQ(r.status, 0) << r.out;
  for (auto f : {"runs.csv", "elections.csv", "timeline.csv", "messages_per_election.svg",
                 "election_latency.svg", "timeline.svg"})
    EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  std::filesystem::remove_all(dir);
}

TEST(sim_cli, a_split_brain_is_reported_but_is_not_a_failure_without_the_guard) {
  auto r = run_conclave("sim --algorithm bully --nodes 5 --runs 2 "
                        "--faults 'partition@1s-2s:1-2|3-5' --json");
  ASSERT_EQ(r.status, 0);
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_GE(doc["algorithms"]["bully"]["split_brain_windows"].get<int>(), 2);
}
