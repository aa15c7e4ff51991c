// `conclave sim --workload lease` as users and scripts call it: bad input and
// flags of other workloads are exit 2 with one line, the same seed prints the
// same report, JSON is one document, and the broken fixture (hosts that
// ignore clock drift) fails with exit 3 and a replay command.
#include "tests/process/process_support.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <string>

using conclave::process_test::has;
using conclave::process_test::line_count;
using conclave::process_test::run_conclave;

TEST(sim_lease_cli, bad_input_and_foreign_flags_are_exit_2_with_one_line) {
  for (auto args : {"sim --workload lease --ttl 5",
                    "sim --workload lease --limit 0",
                    "sim --workload lease --lease-drift 0.5",
                    "sim --workload lease --lock-delay 70000",
                    "sim --workload lease --replicas 0",
                    "sim --workload lease --clients 0",
                    "sim --workload lease --unsafe skip-sync",
                    "sim --workload lease --weak-share 0.5",
                    "sim --workload lease --nodes 3",
                    "sim --workload lease --algorithm ring",
                    "sim --workload lease --jobs 3",
                    "sim --workload lease --guard",
                    "sim --workload replication --ttl 100",
                    "sim --limit 2",
                    "sim --workload jobs --lease-drift 0.1",
                    "sim --workload lease --faults 'crash@1s:4'",
                    "sim --workload lease --pause-clients 1s-2s:5",
                    "sim --workload lease --pause-clients 2s-1s:1",
                    "sim --workload lease --pause-clients 1s:1",
                    "sim --pause-clients 1s-2s:1"}) {
    auto r = run_conclave(args, true);
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
    EXPECT_EQ(line_count(r.out), 1u) << args << ": " << r.out;
    EXPECT_TRUE(has(r.out, "conclave: error: ")) << args << ": " << r.out;
  }
}

TEST(sim_lease_cli, the_same_seed_prints_the_same_report) {
  auto args = "sim --workload lease --runs 20 --seed 11 --limit 2 --clients 5 "
              "--faults 'random=4,loss=0.05,delay=1ms..4ms,horizon=1s'";
  auto a = run_conclave(args);
  auto b = run_conclave(args);
  EXPECT_EQ(a.out, b.out);
  EXPECT_TRUE(has(a.out, "max concurrent believers: mutex ")) << a.out;
  EXPECT_TRUE(has(a.out, " in 20 runs")) << a.out;
}

TEST(sim_lease_cli, json_is_one_document_with_the_documented_fields) {
  auto r = run_conclave("sim --workload lease --runs 5 --seed 3 --json "
                        "--faults 'random=3,horizon=1s'");
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["workload"], "lease");
  EXPECT_EQ(doc["runs"], 5);
  for (auto key : {"grants", "renewals", "releases", "expiries", "max_believers",
                   "runs_with_overlapping_believers", "failovers", "safety_violations"})
    EXPECT_TRUE(doc.contains(key)) << key;
}

TEST(sim_lease_cli, hosts_that_ignore_drift_fail_with_a_replay_command) {
  auto r = run_conclave("sim --workload lease --unsafe lease-no-drift --runs 100 "
                        "--seed 1 --client-pauses 4 --faults 'random=4,horizon=1s'");
  ASSERT_EQ(r.status, 3) << r.out;
  EXPECT_TRUE(has(r.out, "mutual_exclusion: 2 clients believe they hold mutex")) << r.out;
  auto at = r.out.find("replay: conclave ");
  ASSERT_NE(at, std::string::npos) << r.out;
  auto start = at + std::string{"replay: conclave "}.size();
  auto replay = r.out.substr(start, r.out.find('\n', start) - start);
  EXPECT_TRUE(has(replay, "--unsafe lease-no-drift")) << replay;
  auto again = run_conclave(replay);
  EXPECT_EQ(again.status, 3) << again.out;
}
