#include "runtime/node/handshake_guard.hpp"

#include <gtest/gtest.h>

using namespace conclave::node;
using namespace std::chrono_literals;
using verdict = handshake_budget::verdict;

namespace {

handshake_budget::connection conn(int fd, uint64_t inode = 1) {
  return {fd, inode};
}

const auto t0 = std::chrono::steady_clock::time_point{} + 1h;

} // namespace

TEST(handshake_budget, a_handshake_is_admitted_once_then_pending_until_it_ends) {
  handshake_budget b{{4, 4, 1000ms}};
  EXPECT_EQ(b.step(conn(10), "a", t0), verdict::admitted);
  EXPECT_EQ(b.step(conn(10), "a", t0 + 5ms), verdict::pending);
  EXPECT_EQ(b.pending(), 1u);
  b.ended(conn(10));
  EXPECT_EQ(b.pending(), 0u);
  EXPECT_EQ(b.pending_from("a"), 0u);
  b.ended(conn(10)); // twice: nothing
  EXPECT_EQ(b.pending(), 0u);
}

TEST(handshake_budget, the_total_bound_refuses_new_handshakes_and_frees_with_each_end) {
  handshake_budget b{{3, 10, 1000ms}};
  for (int fd = 1; fd <= 3; ++fd)
    EXPECT_EQ(b.step(conn(fd), "s" + std::to_string(fd), t0), verdict::admitted);
  EXPECT_EQ(b.step(conn(4), "s4", t0), verdict::refused);
  EXPECT_EQ(b.pending_from("s4"), 0u); // a refused one is not counted
  b.ended(conn(2));
  EXPECT_EQ(b.step(conn(4), "s4", t0), verdict::admitted);
  EXPECT_EQ(b.pending(), 3u);
}

TEST(handshake_budget, one_source_cannot_take_the_whole_budget) {
  handshake_budget b{{10, 2, 1000ms}};
  EXPECT_EQ(b.step(conn(1), "bad", t0), verdict::admitted);
  EXPECT_EQ(b.step(conn(2), "bad", t0), verdict::admitted);
  EXPECT_EQ(b.step(conn(3), "bad", t0), verdict::refused);
  EXPECT_EQ(b.step(conn(4), "good", t0), verdict::admitted);
  EXPECT_EQ(b.pending_from("bad"), 2u);
  EXPECT_EQ(b.pending_from("good"), 1u);
}

TEST(handshake_budget, handshakes_past_the_timeout_expire_and_free_their_place) {
  handshake_budget b{{2, 2, 100ms}};
  EXPECT_EQ(b.step(conn(1), "a", t0), verdict::admitted);
  EXPECT_EQ(b.step(conn(2), "a", t0 + 60ms), verdict::admitted);
  EXPECT_TRUE(b.expired(t0 + 99ms).empty());
  auto gone = b.expired(t0 + 100ms);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0], conn(1));
  EXPECT_EQ(b.pending_from("a"), 1u);
  EXPECT_EQ(b.step(conn(3), "a", t0 + 100ms), verdict::admitted);
  EXPECT_EQ(b.expired(t0 + 1s).size(), 2u);
  EXPECT_EQ(b.pending(), 0u);
}

TEST(handshake_budget, a_reused_descriptor_number_is_another_connection) {
  handshake_budget b{{4, 4, 1000ms}};
  EXPECT_EQ(b.step(conn(7, 100), "a", t0), verdict::admitted);
  // The socket closed without an end reported; its number now names another.
  EXPECT_EQ(b.step(conn(7, 200), "a", t0), verdict::admitted);
  EXPECT_EQ(b.pending(), 2u);
  b.ended(conn(7, 100));
  EXPECT_EQ(b.pending(), 1u);
}

TEST(handshake_budget, random_steps_ends_and_sweeps_keep_the_counts_consistent) {
  handshake_budget b{{8, 3, 50ms}};
  std::map<handshake_budget::connection, std::string> model;
  uint64_t x = 88172645463325252ull;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  auto now = t0;
  for (int i = 0; i < 20000; ++i) {
    now += std::chrono::milliseconds(next() % 5);
    auto c = conn(static_cast<int>(next() % 20), next() % 3);
    auto source = std::string(1, static_cast<char>('a' + next() % 4));
    switch (next() % 3) {
    case 0: {
      auto v = b.step(c, source, now);
      if (v == verdict::admitted)
        model[c] = source;
      EXPECT_EQ(v == verdict::pending, model.count(c) != 0 && v != verdict::admitted);
      break;
    }
    case 1:
      b.ended(c);
      model.erase(c);
      break;
    default:
      for (auto& gone : b.expired(now))
        EXPECT_EQ(model.erase(gone), 1u);
    }
    ASSERT_EQ(b.pending(), model.size());
    ASSERT_LE(b.pending(), 8u);
    for (auto s : {"a", "b", "c", "d"}) {
      size_t n = 0;
      for (auto& [k, v] : model)
        n += v == s;
      ASSERT_EQ(b.pending_from(s), n) << s;
      ASSERT_LE(n, 3u);
    }
  }
}
