// One fault language for every `conclave sim` workload, as users call it: a
// word a workload does not apply is exit 2 with one line naming the word and
// the workload; the words it does apply are taken; drift reaches the
// election's clocks.
#include "tests/process/process_support.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <string>

using conclave::process_test::has;
using conclave::process_test::line_count;
using conclave::process_test::run_conclave;

namespace {

struct refusal {
  const char* workload;
  const char* word;
  const char* item;
};

} // namespace

TEST(sim_faults_cli, a_word_the_workload_does_not_apply_is_exit_2_naming_both) {
  // The table of docs/design/simulation.md, "Fault spec", written out again:
  // every word each workload refuses, with an item that would otherwise parse.
  const refusal refusals[] = {
      {"election", "disk-stall", "disk-stall@1s-2s:1"},
      {"election", "fsync-loss", "fsync-loss@1s:1"},
      {"election", "bitflip", "bitflip@1s:1"},
      {"election", "fail", "fail@1s-2s"},
      {"election", "reject", "reject@1s-2s:0.5"},
      {"election", "hang", "hang@1s-2s"},
      {"election", "slow", "slow@1s-2s"},
      {"election", "slow", "slow=20ms"},
      {"election", "cancel", "cancel@1s:1"},
      {"replication", "hang", "hang@1s-2s"},
      {"replication", "cancel", "cancel@1s:1"},
      {"replication", "slow", "slow=20ms"},
      {"lease", "fail", "fail@1s-2s"},
      {"lease", "cancel", "cancel@1s:1"},
  };
  for (auto& [workload, word, item] : refusals) {
    auto args = std::string{"sim --workload "} + workload
                + " --runs 1 --faults 'crash@1s:"
                + (std::string{workload} == "jobs" ? "agent1" : "1") + "," + item + "'";
    auto r = run_conclave(args, true);
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
    EXPECT_EQ(line_count(r.out), 1u) << args << ": " << r.out;
    EXPECT_TRUE(has(r.out, "conclave: error: --faults: ")) << args << ": " << r.out;
    EXPECT_TRUE(has(r.out, std::string{"'"} + word + "'")) << args << ": " << r.out;
    EXPECT_TRUE(has(r.out, std::string{workload} + " workload")) << args << ": " << r.out;
  }
}

// A memory disk keeps records, not bytes: no bit to flip. The files disk
// takes the word (its runs are in the replication and jobs workloads' tests).
TEST(sim_faults_cli, a_bit_flip_on_a_memory_disk_is_exit_2_and_one_line) {
  for (auto workload : {"replication", "lease", "jobs"}) {
    auto args = std::string{"sim --workload "} + workload
                + " --disk memory --runs 1 --faults 'bitflip@1s:1'";
    auto r = run_conclave(args, true);
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
    EXPECT_EQ(line_count(r.out), 1u) << args << ": " << r.out;
    EXPECT_TRUE(has(r.out, "conclave: error: --faults: ")) << args << ": " << r.out;
    EXPECT_TRUE(has(r.out, "'bitflip' needs --disk files")) << args << ": " << r.out;
  }
  for (auto workload : {"replication", "jobs"}) {
    auto r = run_conclave(
        std::string{"sim --workload "} + workload + " --disk tape --runs 1", true);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_EQ(line_count(r.out), 1u) << r.out;
    EXPECT_TRUE(has(r.out, "--disk: expected files or memory, got 'tape'")) << r.out;
  }
}

TEST(sim_faults_cli, crash_names_what_the_workload_has) {
  for (auto args : {"sim --workload election --faults 'crash@1s:agent1'",
                    "sim --workload lease --faults 'restart@1s:service'",
                    "sim --workload jobs --faults 'crash@10ms:2'",
                    "sim --workload replication --faults 'partition@1s-2s:1-3|3'",
                    "sim --faults 'partition@1s-2s:1|9' --nodes 5"}) {
    auto r = run_conclave(args, true);
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
    EXPECT_EQ(line_count(r.out), 1u) << args << ": " << r.out;
  }
}

TEST(sim_faults_cli, every_workload_takes_the_words_it_applies) {
  // One run each, every timed word the workload applies at least once.
  for (auto args :
       {"sim --algorithm bully --nodes 5 --runs 1 --faults "
        "'crash@300ms:2,restart@500ms:2,"
        "pause@400ms-600ms:3,crash-leader@700ms,restart-leader@900ms,"
        "pause-leader@1s-1100ms,partition@1200ms-1300ms:1|2,cut@1300ms-1400ms:1>2+3,"
        "elect@1500ms:4,heal@1600ms,loss=0.01,dup=0.01,delay=1ms..2ms,drift=0.01,"
        "random=1,horizon=1s'",
        "sim --workload jobs --runs 1 --faults 'crash@30ms:agent1,restart@40ms:agent1,"
        "crash@30ms:scheduler1,restart@50ms:scheduler1,crash@60ms:supervisor1,"
        "restart@70ms:supervisor1,crash@80ms:service,restart@90ms:service,"
        "crash-leader@100ms,restart-leader@120ms,fail@10ms-20ms:0.5,reject@20ms-30ms:0.1,"
        "hang@30ms-40ms:0.2,slow@40ms-50ms,cancel@60ms:1,slow=10ms,heal@150ms,loss=0.01,"
        "dup=0.01,delay=1ms..2ms,random=1,horizon=200ms,pause@20ms-60ms:2,"
        "pause-leader@70ms-90ms,partition@90ms-110ms:1|2-3,cut@110ms-130ms:1>2+3,"
        "elect@130ms:3,drift=0.01,fsync-loss@140ms:2,restart@260ms:agent2,"
        "bitflip@250ms:1,crash@250ms:agent1,restart@280ms:agent1'",
        "sim --workload replication --runs 1 --faults 'crash@300ms:2,restart@500ms:2,"
        "pause@400ms-600ms:3,crash-leader@700ms,restart-leader@900ms,"
        "pause-leader@1s-1100ms,partition@1200ms-1300ms:1|2,cut@1300ms-1400ms:1>2+3,"
        "elect@1500ms:3,disk-stall@1700ms-1800ms:1,fsync-loss@1750ms:1,heal@1600ms,"
        "loss=0.01,dup=0.01,delay=1ms..2ms,drift=0.01,random=1,horizon=1s'",
        "sim --workload lease --runs 1 --faults 'crash@300ms:2,restart@500ms:2,"
        "pause@400ms-600ms:3,crash-leader@700ms,restart-leader@900ms,"
        "pause-leader@1s-1100ms,partition@1200ms-1300ms:1|2,cut@1300ms-1400ms:1>2+3,"
        "elect@1500ms:3,disk-stall@1700ms-1800ms:1,fsync-loss@1750ms:1,heal@1600ms,"
        "loss=0.01,dup=0.01,delay=1ms..2ms,random=1,horizon=1s'"}) {
    auto r = run_conclave(args, true);
    EXPECT_TRUE(r.status == 0 || r.status == 1 || r.status == 3) << args << ": " << r.out;
    EXPECT_TRUE(has(r.out, "in 1 run")) << args << ": " << r.out; // the verdict line
  }
}

TEST(sim_faults_cli, drift_sets_the_clock_rate_error_of_the_election_candidates) {
  // Heartbeats every 50 ms of the leader's clock, suspicion after 75 ms of a
  // follower's: with clocks at one rate each run elects once and keeps its
  // leader; with rates up to 50% apart healthy leaders are suspected.
  auto run = [](const std::string& drift) {
    auto r = run_conclave("sim --algorithm bully --nodes 5 --runs 20 --seed 1 "
                          "--detector-timeout-ms 75 --json --faults 'drift="
                          + drift + "'");
    EXPECT_NE(r.status, 2) << r.out;
    return nlohmann::json::parse(r.out)["algorithms"]["bully"];
  };
  auto even = run("0");
  auto skewed = run("0.5");
  EXPECT_EQ(even["elections"], 20) << even;
  EXPECT_EQ(even["leader_changes"], 0) << even;
  EXPECT_GT(skewed["elections"].get<int>(), 20) << skewed;
}

TEST(sim_faults_cli, drift_sets_the_clocks_of_the_replication_nodes) {
  // The same seeds with other clock rates: the same faults and clients, other
  // timings (the rates have a generator of their own).
  auto run = [](const std::string& extra) {
    auto r = run_conclave("sim --workload replication --runs 3 --seed 5 --json "
                          "--faults 'random=3,horizon=1s"
                          + extra + "'");
    EXPECT_NE(r.status, 2) << r.out;
    return nlohmann::json::parse(r.out);
  };
  auto plain = run("");
  auto again = run("");
  auto skewed = run(",drift=0.2");
  EXPECT_EQ(plain["messages"], again["messages"]);
  EXPECT_NE(plain["messages"], skewed["messages"]) << skewed;
  EXPECT_EQ(plain["faults_applied"], skewed["faults_applied"]);
}
