#include "protocols/store/indexed_rows.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

using namespace conclave::store;

TEST(indexed_rows, finds_by_key_and_walks_in_key_order) {
  indexed_rows<int> rows;
  rows["b"] = 2;
  rows["a"] = 1;
  rows["c"] = 3;
  EXPECT_EQ(rows.find("b")->second, 2);
  EXPECT_EQ(rows.find("x"), rows.end());
  std::string order;
  for (auto& [k, v] : rows)
    order += k;
  EXPECT_EQ(order, "abc");
  EXPECT_EQ(rows.lower_bound("bb")->first, "c");
  auto [r, created] = rows.try_emplace("a");
  EXPECT_FALSE(created);
  EXPECT_EQ(r->second, 1);
  EXPECT_TRUE(rows.consistent());
}

TEST(indexed_rows, an_erased_row_is_gone_from_the_index_too) {
  indexed_rows<int> rows;
  rows["a"] = 1;
  rows["b"] = 2;
  auto next = rows.erase(rows.find("a"));
  EXPECT_EQ(next->first, "b");
  EXPECT_EQ(rows.find("a"), rows.end());
  EXPECT_TRUE(rows.consistent());
  auto [r, created] = rows.try_emplace("a"); // a new node, indexed again
  EXPECT_TRUE(created);
  EXPECT_EQ(r->second, 0);
  EXPECT_EQ(rows.find("a"), r);
}

TEST(indexed_rows, a_moved_container_keeps_a_valid_index) {
  indexed_rows<int> rows;
  for (int i = 0; i < 100; ++i)
    rows[std::to_string(i)] = i;
  indexed_rows<int> moved{std::move(rows)};
  EXPECT_EQ(moved.find("42")->second, 42);
  EXPECT_TRUE(moved.consistent());
  indexed_rows<int> assigned;
  assigned["x"] = 0;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.find("x"), assigned.end());
  EXPECT_EQ(assigned.find("7")->second, 7);
  EXPECT_TRUE(assigned.consistent());
}

// Random inserts, lookups and erases against a plain std::map.
TEST(indexed_rows, agrees_with_a_plain_map_under_random_changes) {
  indexed_rows<int> rows;
  std::map<std::string, int> model;
  std::mt19937 rng{7};
  for (int step = 0; step < 20000; ++step) {
    auto key = std::to_string(rng() % 300);
    switch (rng() % 3) {
    case 0:
      rows[key] = step;
      model[key] = step;
      break;
    case 1:
      if (auto r = rows.find(key); r != rows.end())
        rows.erase(r);
      model.erase(key);
      break;
    default: {
      auto r = rows.find(key);
      auto m = model.find(key);
      ASSERT_EQ(r == rows.end(), m == model.end()) << key;
      if (m != model.end())
        ASSERT_EQ(r->second, m->second);
    }
    }
  }
  EXPECT_EQ(rows.size(), model.size());
  EXPECT_TRUE(rows.consistent());
}
