// Every workload's `conclave sim --json` result starts with the same keys, of
// the same types and meanings (docs/reference/sim-json.md), so that one script
// reads any of them: checked on a passing run and on a failing one (a planted
// defect, exit 3) of each workload, whose failures carry seed, complaints and
// a replay command that fails again.
#include "tests/process/process_support.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <string>

using conclave::process_test::run_conclave;

namespace {

struct workload_case {
  const char* name;
  const char* passing;
  const char* failing; ///< a planted defect the checkers catch in these runs
};

const workload_case cases[] = {
    {"election", "sim --runs 3 --seed 2 --faults 'random=3'",
     "sim --algorithm bully --guard --death-proof --unsafe silence-proof --runs 30 "
     "--faults 'random=8,loss=0.02,delay=1ms..5ms'"},
    {"replication", "sim --workload replication --runs 3 --seed 2 --faults 'random=3'",
     "sim --workload replication --unsafe skip-sync --runs 20 "
     "--faults 'random=4,loss=0.02,dup=0.02,delay=1ms..3ms'"},
    {"jobs", "sim --workload jobs --runs 3 --seed 2 --faults 'random=3'",
     "sim --workload jobs --unsafe supervisor-ignores-fence --runs 60 "
     "--faults 'random=4,loss=0.02,dup=0.02,delay=1ms..3ms'"},
    {"lease", "sim --workload lease --runs 3 --seed 2 --faults 'random=3'",
     "sim --workload lease --unsafe lease-no-drift --runs 100 --client-pauses 4 "
     "--faults 'random=4,horizon=1s'"},
};

void expect_envelope(const nlohmann::json& doc, const char* workload) {
  ASSERT_TRUE(doc.is_object()) << workload;
  EXPECT_EQ(doc.value("workload", ""), workload);
  for (auto key :
       {"seed", "runs", "safety_violations", "liveness_failures", "liveness_not_judged"})
    EXPECT_TRUE(doc.contains(key) && doc[key].is_number_unsigned())
        << workload << ": " << key;
  EXPECT_TRUE(doc.contains("faults") && doc["faults"].is_string()) << workload;
  EXPECT_TRUE(doc.contains("verdict") && doc["verdict"].is_string()) << workload;
  ASSERT_TRUE(doc.contains("failures") && doc["failures"].is_array()) << workload;
  for (auto& f : doc["failures"]) {
    EXPECT_TRUE(f["seed"].is_number_unsigned()) << workload << ": " << f;
    EXPECT_TRUE(f["replay"].is_string()) << workload << ": " << f;
    ASSERT_TRUE(f["what"].is_array() && !f["what"].empty()) << workload << ": " << f;
    for (auto& w : f["what"])
      EXPECT_TRUE(w.is_string()) << workload << ": " << f;
  }
}

} // namespace

TEST(sim_json_cli, a_passing_run_of_every_workload_has_the_common_keys) {
  for (auto& c : cases) {
    auto r = run_conclave(std::string{c.passing} + " --json");
    ASSERT_EQ(r.status, 0) << c.name << ": " << r.out;
    auto doc = nlohmann::json::parse(r.out); // throws (fails) unless one document
    expect_envelope(doc, c.name);
    EXPECT_EQ(doc["seed"], 2) << c.name;
    EXPECT_EQ(doc["faults"], "random=3") << c.name;
    EXPECT_EQ(doc["safety_violations"], 0) << c.name;
    EXPECT_EQ(doc["liveness_failures"], 0) << c.name;
    EXPECT_TRUE(doc["failures"].empty()) << c.name;
    EXPECT_EQ(doc["verdict"].get<std::string>().rfind("OK: ", 0), 0u) << c.name;
  }
}

TEST(sim_json_cli, the_election_workload_counts_every_run_of_every_algorithm) {
  auto r = run_conclave("sim --runs 3 --nodes 3,5 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["runs"], 12); // 2 algorithms x 2 sizes x 3
  EXPECT_EQ(doc["runs_per_size"], 3);
}

TEST(sim_json_cli, a_failing_run_of_every_workload_is_listed_with_a_replay) {
  for (auto& c : cases) {
    auto r = run_conclave(std::string{c.failing} + " --json");
    ASSERT_EQ(r.status, 3) << c.name << ": " << r.out;
    auto doc = nlohmann::json::parse(r.out);
    expect_envelope(doc, c.name);
    EXPECT_GT(doc["safety_violations"].get<uint64_t>()
                  + doc["liveness_failures"].get<uint64_t>(),
              0u)
        << c.name;
    EXPECT_EQ(doc["verdict"].get<std::string>().rfind("FAILED: ", 0), 0u) << c.name;
    ASSERT_FALSE(doc["failures"].empty()) << c.name;
    // The first failure's replay command fails the same way, alone.
    auto replay = doc["failures"][0]["replay"].get<std::string>();
    ASSERT_EQ(replay.rfind("conclave ", 0), 0u) << replay;
    auto again = run_conclave(replay.substr(9) + " --json");
    // 3 if that run broke safety, 1 if only liveness.
    EXPECT_TRUE(again.status == 3 || again.status == 1)
        << c.name << ": " << replay << "\n"
        << again.out;
    auto one = nlohmann::json::parse(again.out);
    EXPECT_EQ(one["runs"], 1) << c.name;
    EXPECT_EQ(one["failures"][0]["seed"], doc["failures"][0]["seed"]) << c.name;
  }
}

TEST(sim_json_cli, the_output_of_every_workload_is_the_same_on_any_number_of_threads) {
  // The failing cases list failures in seed order, each with its replay: a
  // pool that added reports as runs finished would reorder them.
  for (auto& c : cases) {
    for (auto text : {c.failing, c.passing}) {
      for (auto json : {" --json", ""}) {
        auto one = run_conclave(std::string{text} + json + " --threads 1");
        auto three = run_conclave(std::string{text} + json + " --threads 3");
        EXPECT_EQ(one.status, three.status) << c.name << ": " << text << json;
        EXPECT_EQ(one.out, three.out) << c.name << ": " << text << json;
        EXPECT_FALSE(one.out.empty()) << c.name;
      }
    }
  }
}
