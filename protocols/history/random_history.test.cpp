// The checker against histories generated from a sequential model
// (tests/support/random_history.hpp): every generated history must pass, and a
// history with one observed result changed must usually fail.
#include "protocols/history/linearizability.hpp"

#include "tests/support/random_history.hpp"

#include <gtest/gtest.h>

#include <iostream>

using namespace conclave::history;
using conclave::testing::mutate_one;
using conclave::testing::random_history;
using conclave::testing::random_history_options;

namespace {

TEST(random_history, histories_generated_from_the_model_are_linearizable) {
  for (uint64_t seed = 1; seed <= 500; ++seed) {
    random_history_options o;
    o.seed = seed;
    o.ops = 150;
    o.max_latency = 1 + static_cast<int64_t>(seed % 20); // narrow to wide windows
    o.unanswered = seed % 3 == 0 ? 0.15 : 0.03;
    auto h = random_history(o);
    auto r = check_linearizable(h);
    ASSERT_TRUE(r.linearizable()) << "seed " << seed << ": " << r.describe(h);
  }
}

TEST(random_history, one_changed_result_is_usually_caught) {
  size_t mutated = 0;
  size_t caught = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    random_history_options o;
    o.seed = seed;
    o.ops = 60;
    o.max_latency = 1 + static_cast<int64_t>(seed % 8);
    auto h = random_history(o);
    if (!mutate_one(h, seed))
      continue;
    ++mutated;
    auto r = check_linearizable(h);
    ASSERT_NE(r.result, verdict::unknown) << "seed " << seed;
    if (r.result == verdict::violation) {
      ++caught;
      // The witness is a subset of the violating partition.
      for (const auto& p : r.problems)
        for (auto op : p.witness)
          EXPECT_EQ(h[op].what.target, p.where.name);
    }
  }
  double share = static_cast<double>(caught) / static_cast<double>(mutated);
  std::cout << "mutations caught: " << caught << " of " << mutated << " (" << share * 100
            << "%)\n";
  // The rest changed a result to one that a concurrent call could explain.
  EXPECT_GE(share, 0.6);
}

TEST(random_history, ten_thousand_ops_over_a_hundred_keys_are_decided) {
  random_history_options o;
  o.ops = 10'000;
  o.keys = 100;
  o.queues = 10;
  o.clients = 5;
  o.seed = 7;
  auto h = random_history(o);
  auto r = check_linearizable(h);
  EXPECT_TRUE(r.linearizable()) << r.describe(h);
  EXPECT_EQ(r.partitions, 110u);
}

} // namespace
