// `conclave sim --workload replication` as users and scripts call it: bad
// input is exit 2 with one line, the same seed prints the same report, JSON is
// one document, and a failing run (a broken fixture) prints a replay command
// that reproduces it.
#include "tests/process/process_support.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <string>

using conclave::process_test::has;
using conclave::process_test::line_count;
using conclave::process_test::run_conclave;

TEST(sim_repl_cli, bad_input_is_exit_2_with_one_line) {
  for (auto args : {"sim --workload replication --faults 'crash@1s:4'",
                    "sim --workload replication --faults 'crash@1s:agent1'",
                    "sim --workload replication --replicas 0",
                    "sim --workload replication --replicas 10",
                    "sim --workload replication --clients 0",
                    "sim --workload replication --weak-share 1.5",
                    "sim --workload replication --fsync-us 0",
                    "sim --workload replication --unsafe sometimes",
                    "sim --workload replication --nodes 3",
                    "sim --workload replication --algorithm ring",
                    "sim --workload replication --jobs 3", "sim --replicas 3",
                    "sim --workload jobs --unsafe skip-sync",
                    "sim --workload replication --batch-bytes 67108865",
                    "sim --workload replication --window-bytes -1",
                    "sim --workload lease --window-bytes 600",
                    "sim --workload jobs --batch-bytes 200", "sim --window-bytes 600"}) {
    auto r = run_conclave(args, true);
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
    EXPECT_EQ(line_count(r.out), 1u) << args << ": " << r.out;
    EXPECT_TRUE(has(r.out, "conclave: error: ")) << args << ": " << r.out;
  }
}

TEST(sim_repl_cli, the_same_seed_prints_the_same_report) {
  auto args = "sim --workload replication --runs 20 --seed 11 "
              "--faults 'random=4,loss=0.05,dup=0.05,delay=1ms..4ms,horizon=1s'";
  auto a = run_conclave(args);
  auto b = run_conclave(args);
  ASSERT_EQ(a.status, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  EXPECT_TRUE(has(a.out, "OK: 0 safety violations, 0 liveness failures in 20 runs"))
      << a.out;
  EXPECT_TRUE(has(a.out, ", lost 0 (must be 0)")) << a.out;
}

TEST(sim_repl_cli, json_is_one_document_with_the_documented_fields) {
  auto r = run_conclave("sim --workload replication --replicas 5 --runs 5 --seed 3 "
                        "--faults 'random=3,horizon=1s' --json");
  ASSERT_EQ(r.status, 0) << r.out;
  auto doc = nlohmann::json::parse(r.out); // throws (and fails) if not pure JSON
  EXPECT_EQ(doc["workload"], "replication");
  EXPECT_EQ(doc["runs"], 5);
  EXPECT_EQ(doc["safety_violations"], 0);
  EXPECT_EQ(doc["liveness_failures"], 0);
  EXPECT_EQ(doc["commits_lost"], 0);
  EXPECT_GT(doc["commits_acked"]["strong"].get<int>(), 0);
  EXPECT_GE(doc["sync_phases"]["count"].get<int>(), 5);
  EXPECT_TRUE(doc["messages"].contains("duplicated"));
  EXPECT_GT(doc["samples"]["on_acting_primary"].get<int>(), 0);
  EXPECT_TRUE(doc["failures"].empty());
}

TEST(sim_repl_cli, a_failing_run_prints_a_replay_command_that_reproduces_it) {
  // Primaries that skip the sync phase lose acknowledged commits: exit 3,
  // and each failing run says how to replay it.
  auto r = run_conclave("sim --workload replication --unsafe skip-sync --runs 10 "
                        "--seed 1 --faults 'random=4,horizon=1s'");
  ASSERT_EQ(r.status, 3) << r.out;
  EXPECT_TRUE(has(r.out, "FAILED: ")) << r.out;
  auto at = r.out.find("replay: conclave ");
  ASSERT_NE(at, std::string::npos) << r.out;
  auto start = at + std::string{"replay: conclave "}.size();
  auto replay = r.out.substr(start, r.out.find('\n', start) - start);
  EXPECT_TRUE(has(replay, "--runs 1 --seed ")) << replay;
  EXPECT_TRUE(has(replay, "--unsafe skip-sync")) << replay;
  auto again = run_conclave(replay);
  EXPECT_EQ(again.status, 3) << again.out;
  auto seed = replay.substr(replay.rfind(' ') + 1);
  auto block = [&](const std::string& out) {
    auto f = out.find("FAILED seed " + seed + " ");
    return f == std::string::npos ? std::string{}
                                  : out.substr(f, out.find("  replay:", f) - f);
  };
  EXPECT_FALSE(block(r.out).empty()) << r.out;
  EXPECT_EQ(block(again.out), block(r.out));
}

TEST(sim_repl_cli, a_flow_control_failure_replays_with_its_batch_and_window) {
  // Primaries that ignore their window: exit 3, and the replay command keeps
  // the batch and window that made the window bind.
  auto r =
      run_conclave("sim --workload replication --unsafe ignore-window --runs 20 "
                   "--seed 11001 --batch-bytes 200 --window-bytes 600 "
                   "--faults 'random=6,loss=0.2,dup=0.1,delay=1ms..10ms,horizon=1s'");
  ASSERT_EQ(r.status, 3) << r.out;
  EXPECT_TRUE(has(r.out, "flow_control_holds: ")) << r.out;
  auto at = r.out.find("replay: conclave ");
  ASSERT_NE(at, std::string::npos) << r.out;
  auto start = at + std::string{"replay: conclave "}.size();
  auto replay = r.out.substr(start, r.out.find('\n', start) - start);
  EXPECT_TRUE(has(replay, "--batch-bytes 200 --window-bytes 600")) << replay;
  EXPECT_EQ(run_conclave(replay).status, 3) << replay;
  // The same runs with the window honoured pass.
  auto honest = run_conclave("sim --workload replication --runs 20 --seed 11001 "
                             "--batch-bytes 200 --window-bytes 600 --faults "
                             "'random=6,loss=0.2,dup=0.1,delay=1ms..10ms,horizon=1s'");
  EXPECT_EQ(honest.status, 0) << honest.out;
}
