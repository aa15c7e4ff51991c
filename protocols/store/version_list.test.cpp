// The versions of one row: the newest in the list itself, older ones only
// while kept, values of any size (empty ones take no heap block), snapshots
// see the newest version at or before them, and copies own their bytes.
#include "protocols/store/version_list.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using conclave::store::lsn;
using conclave::store::version_list;

namespace {

/// The same versions in a plain vector, to compare with.
struct plain {
  lsn at;
  bool present;
  std::string value;
};

void expect_same(const version_list& vs, const std::vector<plain>& want) {
  ASSERT_EQ(vs.size(), want.size());
  ASSERT_EQ(vs.empty(), want.empty());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(vs[i].at, want[i].at) << i;
    EXPECT_EQ(vs[i].present, want[i].present) << i;
    EXPECT_EQ(vs[i].value, want[i].value) << i;
  }
  if (!want.empty()) {
    EXPECT_EQ(vs.back().value, want.back().value);
  }
}

} // namespace

TEST(version_list, a_new_list_is_empty_and_sees_nothing) {
  version_list vs;
  EXPECT_TRUE(vs.empty());
  EXPECT_EQ(vs.size(), 0u);
  EXPECT_FALSE(vs.at_snapshot(lsn{100}));
}

TEST(version_list, keeps_versions_in_order_and_snapshots_see_the_newest_before_them) {
  version_list vs;
  vs.push_back(lsn{3}, true, "three");
  vs.push_back(lsn{5}, false, {});
  vs.push_back(lsn{9}, true, std::string(300, 'x')); // a length of two varint bytes
  expect_same(vs, {{lsn{3}, true, "three"},
                   {lsn{5}, false, ""},
                   {lsn{9}, true, std::string(300, 'x')}});
  EXPECT_FALSE(vs.at_snapshot(lsn{2}));
  EXPECT_EQ(vs.at_snapshot(lsn{3})->value, "three");
  EXPECT_EQ(vs.at_snapshot(lsn{4})->value, "three");
  EXPECT_FALSE(vs.at_snapshot(lsn{5})->present);
  EXPECT_EQ(vs.at_snapshot(lsn{9})->value.size(), 300u);
  EXPECT_EQ(vs.at_snapshot(lsn{1000})->at, lsn{9});
}

TEST(version_list, dropping_old_versions_keeps_the_newer_ones) {
  version_list vs;
  for (uint64_t i = 1; i <= 5; ++i)
    vs.push_back(lsn{i * 10}, i % 2 == 1, "v" + std::to_string(i));
  vs.drop_oldest(2);
  expect_same(vs, {{lsn{30}, true, "v3"}, {lsn{40}, false, ""}, {lsn{50}, true, "v5"}});
  vs.drop_oldest(0);
  EXPECT_EQ(vs.size(), 3u);
  vs.drop_oldest(2);
  expect_same(vs, {{lsn{50}, true, "v5"}});
  EXPECT_FALSE(vs.at_snapshot(lsn{49}));
}

TEST(version_list, copies_and_moves_own_their_bytes) {
  version_list a;
  a.push_back(lsn{1}, true, "first");
  a.push_back(lsn{2}, true, "second");
  version_list b{a};
  a.drop_oldest(1);
  a.push_back(lsn{3}, true, "third");
  expect_same(b, {{lsn{1}, true, "first"}, {lsn{2}, true, "second"}});
  expect_same(a, {{lsn{2}, true, "second"}, {lsn{3}, true, "third"}});
  version_list c{std::move(b)};
  EXPECT_TRUE(b.empty()); // NOLINT(bugprone-use-after-move): moved-from is empty
  expect_same(c, {{lsn{1}, true, "first"}, {lsn{2}, true, "second"}});
  c = a;
  expect_same(c, {{lsn{2}, true, "second"}, {lsn{3}, true, "third"}});
  c = std::move(a);
  expect_same(c, {{lsn{2}, true, "second"}, {lsn{3}, true, "third"}});
}

TEST(version_list, random_histories_match_a_plain_vector) {
  std::mt19937_64 rng{7};
  for (int round = 0; round < 200; ++round) {
    version_list vs;
    std::vector<plain> want;
    uint64_t at = 0;
    for (int step = 0; step < 50; ++step) {
      if (want.size() > 1 && rng() % 3 == 0) {
        auto n = rng() % want.size(); // always leaves the newest
        vs.drop_oldest(n);
        want.erase(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(n));
      } else {
        at += 1 + rng() % 3;
        bool present = rng() % 4 != 0;
        auto value = present
                         ? std::string(rng() % 200, static_cast<char>('a' + rng() % 26))
                         : std::string{};
        vs.push_back(lsn{at}, present, value);
        want.push_back({lsn{at}, present, value});
      }
      expect_same(vs, want);
      auto snap = lsn{rng() % (at + 2)};
      auto seen = vs.at_snapshot(snap);
      const plain* expected = nullptr;
      for (auto& p : want)
        if (p.at <= snap)
          expected = &p;
      ASSERT_EQ(seen.has_value(), expected != nullptr);
      if (expected) {
        EXPECT_EQ(seen->at, expected->at);
        EXPECT_EQ(seen->value, expected->value);
      }
    }
  }
}
