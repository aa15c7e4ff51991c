// The order workflow on node processes: scripts/order-service-demo.sh runs
// examples/order_service (a program that embeds a node and serves reserve,
// payment and ship) as a 5-node `cluster up --program` cluster, submits 20
// orders with `conclave job submit` and kills -9 the leader after the tenth.
// The test lets the script finish with the cluster kept up, then checks on
// its own, from `conclave job get --json` and the services' files: every
// order was processed, every idempotency key took effect exactly once, and
// each payment try the card network refused is counted in its step's
// attempts and failures. Loopback only; the cluster is brought down however
// the test ends.
#include "tests/process/process_support.hpp"

#include <map>
#include <set>

using namespace conclave::process_test;
using namespace std::chrono_literals;

namespace {

constexpr int orders = 20;
const char* const kinds[] = {"reserve", "payment", "ship"};

std::vector<std::vector<std::string>> fields_of_lines(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);) {
    std::istringstream words{line};
    std::vector<std::string> f;
    for (std::string w; words >> w;)
      f.push_back(w);
    if (!f.empty())
      out.push_back(std::move(f));
  }
  return out;
}

class order_service_cluster : public cluster_test {
protected:
  std::filesystem::path effects;

  void SetUp() override {
    cluster_test::SetUp();
    effects = dir.string() + "-effects";
    std::filesystem::remove_all(effects);
  }

  void TearDown() override {
    cluster_test::TearDown(); // brings the cluster down
    if (!HasFailure())
      std::filesystem::remove_all(effects);
  }

  nlohmann::json job(const std::string& id) {
    auto r = run_conclave("job get --json --dir " + dir.string() + " " + id, true);
    EXPECT_EQ(r.status, 0) << r.out;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }
};

} // namespace

TEST_F(order_service_cluster,
       twenty_orders_take_effect_once_per_key_while_the_leader_is_killed) {
  auto started = std::chrono::steady_clock::now();
  // The script's own bound is its waits (60 s per order at most); this one
  // keeps the test inside its TIMEOUT whatever happens.
  auto script = conclave::testing::run_command(
      "timeout --kill-after=5 140 bash " + std::string{CONCLAVE_SOURCE_DIR}
      + "/scripts/order-service-demo.sh --keep --dir " + dir.string() + " --effects "
      + effects.string() + " --conclave " + CONCLAVE_BIN + " --program "
      + ORDER_SERVICE_BIN + " 2>&1");
  auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started);
  ASSERT_EQ(script.status, 0) << script.out;
  EXPECT_NE(script.out.find("(the leader); new leader"), std::string::npos) << script.out;

  // Every order processed, as the cluster tells it.
  auto list = run_conclave("job list --json --limit 0 --dir " + dir.string(), true);
  ASSERT_EQ(list.status, 0) << list.out;
  std::map<std::string, std::string> states;
  auto listed = nlohmann::json::parse(list.out, nullptr, false);
  ASSERT_FALSE(listed.is_discarded()) << list.out;
  for (auto& j : listed["jobs"])
    states[j["id"].get<std::string>()] = j["state"].get<std::string>();
  ASSERT_EQ(states.size(), static_cast<size_t>(orders)) << list.out;

  // What the services saw: every try, and every effect.
  auto tries = fields_of_lines(read_file(effects / "tries.log"));
  auto effect_lines = fields_of_lines(read_file(effects / "effects.log"));
  std::map<std::string, std::set<std::string>> refused_attempts; // key -> attempts
  for (auto& t : tries) {
    ASSERT_GE(t.size(), 7u);
    if (t[0] == "payment" && t[6] == "transient")
      refused_attempts[t[1]].insert(t[5]);
  }
  std::map<std::string, int> effects_per_key;
  std::map<std::string, std::string> kind_of_key;
  for (auto& e : effect_lines) {
    ASSERT_GE(e.size(), 2u);
    ++effects_per_key[e[1]];
    kind_of_key[e[1]] = e[0];
  }

  int payment_failures = 0;
  int refused = 0;
  for (int n = 1; n <= orders; ++n) {
    auto id = "order-" + std::to_string(n);
    EXPECT_EQ(states[id], "processed") << id;
    auto j = job(id);
    ASSERT_EQ(j["steps"].size(), 3u) << j.dump();
    for (int s = 0; s < 3; ++s) {
      auto& step = j["steps"][s];
      auto key = id + "/" + std::to_string(s);
      EXPECT_EQ(step["kind"], kinds[s]) << key;
      EXPECT_EQ(step["payload"], std::to_string(n)) << key;
      EXPECT_EQ(step["state"], "processed") << key;
      // Each failure was followed by one more dispatch, and the last one
      // succeeded.
      auto attempt = step["attempt"].get<int>();
      auto failures = step["failure_count"].get<int>();
      EXPECT_EQ(attempt, failures + 1) << key << ": " << step.dump();
      // Exactly one effect per key, of the step's kind, and its record.
      EXPECT_EQ(effects_per_key[key], 1) << key;
      EXPECT_EQ(kind_of_key[key], kinds[s]) << key;
      auto record = effects / kinds[s] / (id + "%2F" + std::to_string(s));
      EXPECT_TRUE(std::filesystem::exists(record)) << record;
      if (s == 1) {
        // Every refused try cost the step one failure (a dispatch lost with
        // the killed node costs one too).
        auto r = static_cast<int>(refused_attempts[key].size());
        EXPECT_GE(failures, r) << key << ": " << step.dump();
        payment_failures += failures;
        refused += r;
      }
    }
  }
  EXPECT_EQ(effect_lines.size(), static_cast<size_t>(orders * 3));
  // About 3 payment tries in 10 are refused: on 20 orders some always are.
  EXPECT_GE(refused, 1) << read_file(effects / "tries.log");
  EXPECT_GE(payment_failures, refused);
  std::printf(
      "[order service] %d orders on 5 nodes (leader killed) in %.1f s: %zu tries, "
      "%d payment tries refused, %d payment failures recorded\n",
      orders, took.count(), tries.size(), refused, payment_failures);

  // The leader task ran on the first leader and then on another node.
  int leading_nodes = 0;
  for (int id = 1; id <= 5; ++id)
    if (read_file(dir / ("node-" + std::to_string(id)) / "node.log")
            .find("leading in term ")
        != std::string::npos)
      ++leading_nodes;
  EXPECT_GE(leading_nodes, 2);
  down_and_check_replicas();
}
