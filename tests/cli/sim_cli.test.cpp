// The `conclave sim` command as users and scripts call it: exit statuses, the one
// line for bad input, JSON on stdout, reproducibility by seed, files under --out.
#include "tests/process/process_support.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

using conclave::process_test::has;
using conclave::process_test::line_count;
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

TEST(sim_cli, threads_beyond_the_bound_are_exit_2_with_one_line) {
  for (auto workload : {"election", "jobs", "replication", "lease"}) {
    auto r =
        run_conclave(std::string{"sim --workload "} + workload + " --threads 257", true);
    EXPECT_EQ(r.status, 2) << workload << ": " << r.out;
    EXPECT_TRUE(has(r.out, "--threads")) << r.out;
    EXPECT_EQ(line_count(r.out), 1u) << r.out;
  }
  EXPECT_EQ(run_conclave("sim --threads -1").status, 2);
  EXPECT_EQ(run_conclave("sim --threads many").status, 2);
  // The bound itself, and 0 (one per core), are taken.
  EXPECT_EQ(run_conclave("sim --runs 2 --nodes 3 --threads 256").status, 0);
  EXPECT_EQ(run_conclave("sim --runs 2 --nodes 3 --threads 0").status, 0);
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
    EXPECT_GT(a["startup"]["elections"].get<int>(), 0) << algo;
    EXPECT_TRUE(a["failover"].contains("latency_ms"));
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

TEST(sim_cli, out_writes_csv_and_svg_plots_that_say_what_they_show) {
  auto dir = std::filesystem::temp_directory_path()
             / ("conclave-sim-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto r = run_conclave("sim --nodes 4,8 --runs 3 --faults 'crash-leader@1s' --out "
                        + dir.string());
  ASSERT_EQ(r.status, 0) << r.out;
  using conclave::process_test::read_file;
  // One row per run (2 algorithms x 2 sizes x 3 runs), two elections per run.
  auto runs = read_file(dir / "runs.csv");
  EXPECT_EQ(line_count(runs), 1u + 12u) << runs;
  auto elections = read_file(dir / "elections.csv");
  EXPECT_EQ(line_count(elections), 1u + 24u) << elections;
  EXPECT_TRUE(has(elections, ",startup,") && has(elections, ",failover,"));
  auto timeline = read_file(dir / "timeline.csv");
  EXPECT_TRUE(has(timeline, "crashed")) << timeline;
  EXPECT_TRUE(has(timeline, "acting_started"));
  // Latency: one curve per algorithm, n and kind, each named.
  auto latency = read_file(dir / "election_latency.svg");
  for (auto series : {"bully, n=4, start-up (3)", "bully, n=8, failover (3)",
                      "ring, n=4, failover (3)", "ring, n=8, start-up (3)"})
    EXPECT_TRUE(has(latency, series)) << series;
  auto mpe = read_file(dir / "messages_per_election.svg");
  EXPECT_TRUE(has(mpe, "bully, failover elections (measured)"));
  EXPECT_TRUE(has(mpe, "ring, startup elections (measured)"));
  EXPECT_TRUE(has(mpe, "Bully worst case: n(n-1) + n-1"));
  // The timeline names the run it shows.
  auto tl = read_file(dir / "timeline.svg");
  EXPECT_TRUE(has(tl, "bully, n=4, seed 1, faults crash-leader@1s"))
      << tl.substr(0, 2000);
  std::filesystem::remove_all(dir);
}

TEST(sim_cli, out_with_a_relative_directory_renders_the_plots_there) {
  auto base = std::filesystem::temp_directory_path()
              / ("conclave-sim-rel-" + std::to_string(::getpid()));
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base);
  auto r = conclave::testing::run_command("cd " + base.string()
                                          + " && " CONCLAVE_BIN
                                            " sim --nodes 3 --runs 2 --faults "
                                            "'crash-leader@1s' --out simout 2>&1");
  EXPECT_EQ(r.status, 0) << r.out;
  for (auto f : {"messages_per_election.svg", "election_latency.svg", "timeline.svg"})
    EXPECT_TRUE(std::filesystem::exists(base / "simout" / f)) << f;
  EXPECT_FALSE(std::filesystem::exists(base / "simout" / "simout"));
  std::filesystem::remove_all(base);
}

TEST(sim_cli, the_table_ends_with_one_verdict_line) {
  auto ok = run_conclave("sim --nodes 5 --runs 4 --faults 'crash-leader@1s'");
  ASSERT_EQ(ok.status, 0) << ok.out;
  auto last = ok.out.substr(ok.out.rfind('\n', ok.out.size() - 2) + 1);
  EXPECT_EQ(last.rfind("OK: 0 safety violations, 0 liveness failures in 8 runs", 0), 0u)
      << last;
  EXPECT_TRUE(has(ok.out, "start-up election") && has(ok.out, "failover elections"));
  auto split = run_conclave(
      "sim --algorithm bully --nodes 5 --runs 2 --faults 'partition@1s-2s:1-2|3-5'");
  auto verdict = split.out.substr(split.out.rfind('\n', split.out.size() - 2) + 1);
  EXPECT_TRUE(has(verdict, "split brain: 2 windows (longest")) << verdict;
}

TEST(sim_cli, a_split_brain_is_reported_but_is_not_a_failure_without_the_guard) {
  auto r = run_conclave("sim --algorithm bully --nodes 5 --runs 2 "
                        "--faults 'partition@1s-2s:1-2|3-5' --json");
  ASSERT_EQ(r.status, 0);
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_GE(doc["algorithms"]["bully"]["split_brain_windows"].get<int>(), 2);
  // Every window's duration, per group size.
  auto& windows = doc["algorithms"]["bully"]["by_nodes"][0]["split_brain_window_ms"];
  EXPECT_EQ(windows.size(),
            doc["algorithms"]["bully"]["split_brain_windows"].get<size_t>());
  for (auto& w : windows)
    EXPECT_GT(w.get<double>(), 0.0);
  EXPECT_EQ(doc["verdict"].get<std::string>().rfind("OK: ", 0), 0u);
}

TEST(sim_cli, trace_prints_the_messages_and_events_of_one_run) {
  auto r = run_conclave("sim --algorithm ring --nodes 3 --runs 1 --seed 5 --trace "
                        "--faults 'crash-leader@1s,loss=0.2'");
  ASSERT_EQ(r.status, 0) << r.out;
  // The token, its acks, the announcement, a loss, the crash and its notices.
  for (auto what :
       {"ring_election_msg(", "ring_ack_msg(", "ring_coordinator_msg(", " LOST ",
        " CRASHED", "el_down", "election_started term", "became_leader term"})
    EXPECT_TRUE(r.out.find(what) != std::string::npos) << what << "\n" << r.out;
  EXPECT_EQ(r.out.find("heartbeat_msg("), std::string::npos);
  auto beats = run_conclave("sim --algorithm ring --nodes 3 --runs 1 --trace-heartbeats");
  EXPECT_NE(beats.out.find("heartbeat_msg("), std::string::npos) << beats.out;
  EXPECT_EQ(run_conclave("sim --algorithm ring --runs 2 --trace").status, 2);
  EXPECT_EQ(run_conclave("sim --runs 1 --trace").status, 2); // two algorithms
  EXPECT_EQ(run_conclave("sim --algorithm ring --runs 1 --trace --json").status, 2);
}

TEST(sim_cli, proofs_of_death_need_the_guard_and_take_one_planted_defect) {
  for (auto args : {"sim --death-proof", "sim --guard --unsafe silence-proof",
                    "sim --guard --death-proof --unsafe skip-sync"}) {
    auto r = run_conclave(args, true);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << ": " << r.out;
  }
  // The planted defect (a pause taken for a death) is caught: exit 3 and the
  // command that replays it.
  auto r = run_conclave("sim --algorithm bully --nodes 5 --runs 5 --guard --death-proof "
                        "--unsafe silence-proof --faults 'pause-leader@1s-1030ms'");
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_TRUE(has(r.out, "--death-proof --unsafe silence-proof")) << r.out;
  auto safe =
      run_conclave("sim --algorithm bully --nodes 5 --runs 5 --guard --death-proof "
                   "--faults 'pause-leader@1s-1030ms'");
  EXPECT_EQ(safe.status, 0) << safe.out;
}
