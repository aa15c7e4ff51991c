// `conclave sim --workload jobs` as users and scripts call it: bad input is
// exit 2 with one line, the same seed prints the same report, JSON is one
// document, and a failing run prints a replay command that reproduces it.
#include "tests/process/process_support.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <string>

using conclave::process_test::has;
using conclave::process_test::line_count;
using conclave::process_test::run_conclave;

TEST(sim_jobs_cli, bad_input_is_exit_2_with_one_line) {
  for (auto args :
       {"sim --workload jobs --faults 'crash@1s:robot1'",
        "sim --workload jobs --faults 'pause@1s-2s:4'",
        "sim --workload jobs --faults 'bitflip@1s:4'",
        "sim --workload jobs --disk memory --faults 'bitflip@1s:1'",
        "sim --workload jobs --disk floppy", "sim --workload jobs --fsync-us 100",
        "sim --workload jobs --faults 'crash@1s:agent9'",
        "sim --workload jobs --faults 'cancel@1s:5'", "sim --workload jobs --jobs 0",
        "sim --workload jobs --steps 65", "sim --workload jobs --service sometimes",
        "sim --workload jobs --nodes 3", "sim --workload jobs --guard", "sim --jobs 3",
        "sim --workload tasks"}) {
    auto r = run_conclave(args, true);
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
    EXPECT_EQ(line_count(r.out), 1u) << args << ": " << r.out;
    EXPECT_TRUE(has(r.out, "conclave: error: ")) << args << ": " << r.out;
  }
}

TEST(sim_jobs_cli, the_same_seed_prints_the_same_report) {
  auto args = "sim --workload jobs --runs 30 --seed 11 "
              "--faults 'random=5,loss=0.05,dup=0.05,delay=1ms..4ms'";
  auto a = run_conclave(args);
  auto b = run_conclave(args);
  ASSERT_EQ(a.status, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  EXPECT_TRUE(has(a.out, "OK: 0 safety violations, 0 liveness failures in 30 runs"))
      << a.out;
  EXPECT_TRUE(has(a.out, "jobs: 120 in 30 runs: processed ")) << a.out;
}

TEST(sim_jobs_cli, json_is_one_document_with_the_documented_fields) {
  auto r = run_conclave("sim --workload jobs --runs 20 --seed 3 --faults 'random=4' "
                        "--json");
  ASSERT_EQ(r.status, 0) << r.out;
  auto doc = nlohmann::json::parse(r.out); // throws (and fails) if not pure JSON
  EXPECT_EQ(doc["workload"], "jobs");
  EXPECT_EQ(doc["runs"], 20);
  EXPECT_EQ(doc["jobs"], 80);
  EXPECT_EQ(doc["safety_violations"], 0);
  EXPECT_EQ(doc["liveness_failures"], 0);
  int final_jobs = 0;
  for (auto k : {"processed", "error", "compensated", "cancelled"})
    final_jobs += doc["outcomes"][k].get<int>();
  EXPECT_EQ(final_jobs, 80);
  EXPECT_EQ(doc["outcomes"]["not_final"], 0);
  EXPECT_TRUE(doc["recoveries"].contains("monitor"));
  EXPECT_TRUE(doc["failures"].empty());
}

TEST(sim_jobs_cli, on_the_files_disk_the_same_seed_prints_the_same_json) {
  // Power losses and bit flips, scripted and drawn, on the nodes' data
  // directories: the document counts them and is the same byte for byte.
  auto args = std::string{"sim --workload jobs --disk files --runs 15 --seed 21 "
                          "--faults 'random=6,fsync-loss@200ms:2,restart@260ms:agent2,"
                          "bitflip@250ms:1,crash@250ms:agent1,restart@300ms:agent1' "
                          "--json"};
  auto a = run_conclave(args);
  auto b = run_conclave(args);
  ASSERT_EQ(a.status, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  auto doc = nlohmann::json::parse(a.out);
  auto& disks = doc["disks"];
  EXPECT_GT(disks["bits_flipped"].get<int>(), 0) << a.out;
  EXPECT_GT(disks["power_losses"].get<int>(), 0) << a.out;
  for (auto k :
       {"starts_cutting_a_torn_tail", "starts_healing_a_damaged_log", "starts_refused"})
    EXPECT_TRUE(disks[k].is_number_unsigned()) << k << ": " << a.out;
  // On the memory disk the same words keep records, not bytes: a power loss
  // is a crash, and nothing is counted.
  auto m = run_conclave("sim --workload jobs --disk memory --runs 3 --seed 21 "
                        "--faults 'random=6,fsync-loss@200ms:2,restart@260ms:agent2' "
                        "--json");
  ASSERT_EQ(m.status, 0) << m.out;
  auto mdoc = nlohmann::json::parse(m.out);
  EXPECT_EQ(mdoc["disks"]["power_losses"], 0) << m.out;
  EXPECT_EQ(mdoc["disks"]["bits_flipped"], 0) << m.out;
}

TEST(sim_jobs_cli, a_failing_run_prints_a_replay_command_that_reproduces_it) {
  // The non-idempotent service applies repeated calls again (slow answers
  // make steps be dispatched again with the same key): the effect
  // checker must fail (exit 3) and say how to replay the run.
  auto r = run_conclave("sim --workload jobs --service non-idempotent --runs 10 --seed 1 "
                        "--faults 'slow=200ms,slow@0ms-300ms:0.5'");
  ASSERT_EQ(r.status, 3) << r.out;
  EXPECT_TRUE(has(r.out, "one_effect_per_key: ")) << r.out;
  EXPECT_TRUE(has(r.out, "FAILED: ")) << r.out;
  auto at = r.out.find("replay: conclave ");
  ASSERT_NE(at, std::string::npos) << r.out;
  auto start = at + std::string{"replay: conclave "}.size();
  auto replay = r.out.substr(start, r.out.find('\n', start) - start);
  EXPECT_TRUE(has(replay, "--runs 1 --seed ")) << replay;
  EXPECT_TRUE(has(replay, "--service non-idempotent")) << replay;
  auto again = run_conclave(replay);
  EXPECT_EQ(again.status, 3) << again.out;
  EXPECT_TRUE(has(again.out, "FAILED: ")) << again.out;
  // The replayed run complains exactly as it did among the others.
  auto seed = replay.substr(replay.rfind(' ') + 1);
  auto block = [&](const std::string& out) {
    auto f = out.find("FAILED seed " + seed + " ");
    return f == std::string::npos ? std::string{}
                                  : out.substr(f, out.find("  replay:", f) - f);
  };
  EXPECT_FALSE(block(r.out).empty()) << r.out;
  EXPECT_EQ(block(again.out), block(r.out));
}
