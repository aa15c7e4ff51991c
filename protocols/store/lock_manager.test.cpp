#include "protocols/store/lock_manager.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

using namespace conclave::store;
using namespace std::chrono_literals;

namespace {

const lock_key row{1, lock_space::row, "k"};
constexpr timestamp forever = timestamp{1h};

txn_id t(uint64_t x) {
  return txn_id{x};
}

} // namespace

// The compatibility table of the pattern, requested \ granted.
TEST(lock_manager, compatibility_table_matches_the_pattern) {
  struct row_t {
    lock_mode requested;
    bool with_shared, with_update, with_exclusive;
  };
  const row_t table[] = {
      {lock_mode::shared, true, false, false},
      {lock_mode::update, true, false, false},
      {lock_mode::exclusive, false, false, false},
  };
  for (auto& r : table) {
    EXPECT_EQ(compatible(r.requested, lock_mode::shared), r.with_shared);
    EXPECT_EQ(compatible(r.requested, lock_mode::update), r.with_update);
    EXPECT_EQ(compatible(r.requested, lock_mode::exclusive), r.with_exclusive);
  }
  // The same table through the manager: t1 holds `granted`, t2 asks `requested`.
  for (auto granted : {lock_mode::shared, lock_mode::update, lock_mode::exclusive})
    for (auto& r : table) {
      lock_manager m;
      ASSERT_EQ(m.acquire(t(1), row, granted, forever), acquire_result::granted);
      bool ok = granted == lock_mode::shared   ? r.with_shared
                : granted == lock_mode::update ? r.with_update
                                               : r.with_exclusive;
      EXPECT_EQ(m.acquire(t(2), row, r.requested, forever),
                ok ? acquire_result::granted : acquire_result::waiting)
          << "requested " << int(r.requested) << " granted " << int(granted);
    }
}

TEST(lock_manager, a_transaction_never_conflicts_with_itself_and_upgrades) {
  lock_manager m;
  EXPECT_EQ(m.acquire(t(1), row, lock_mode::shared, forever), acquire_result::granted);
  EXPECT_EQ(m.acquire(t(1), row, lock_mode::update, forever), acquire_result::granted);
  EXPECT_EQ(m.acquire(t(1), row, lock_mode::exclusive, forever), acquire_result::granted);
  EXPECT_EQ(m.held(t(1), row), lock_mode::exclusive);
  EXPECT_EQ(m.grant_count(), 1u);
}

TEST(lock_manager, upgrade_waits_for_other_readers_then_is_granted_first) {
  lock_manager m;
  ASSERT_EQ(m.acquire(t(1), row, lock_mode::shared, forever), acquire_result::granted);
  ASSERT_EQ(m.acquire(t(2), row, lock_mode::shared, forever), acquire_result::granted);
  ASSERT_EQ(m.acquire(t(3), row, lock_mode::exclusive, forever), acquire_result::waiting);
  EXPECT_EQ(m.acquire(t(1), row, lock_mode::exclusive, forever), acquire_result::waiting);
  m.release_all(t(2));
  auto granted = m.take_granted();
  ASSERT_EQ(granted.size(), 1u);
  EXPECT_EQ(granted[0], t(1)); // the upgrade went ahead of t3
  EXPECT_EQ(m.held(t(1), row), lock_mode::exclusive);
  m.release_all(t(1));
  EXPECT_EQ(m.take_granted(), std::vector<txn_id>{t(3)});
}

TEST(lock_manager, waiters_are_served_in_order_and_shared_ones_together) {
  lock_manager m;
  ASSERT_EQ(m.acquire(t(1), row, lock_mode::exclusive, forever), acquire_result::granted);
  ASSERT_EQ(m.acquire(t(2), row, lock_mode::shared, forever), acquire_result::waiting);
  ASSERT_EQ(m.acquire(t(3), row, lock_mode::shared, forever), acquire_result::waiting);
  ASSERT_EQ(m.acquire(t(4), row, lock_mode::exclusive, forever), acquire_result::waiting);
  // A compatible newcomer still queues behind the exclusive waiter.
  m.release_all(t(1));
  EXPECT_EQ(m.take_granted(), (std::vector<txn_id>{t(2), t(3)}));
  EXPECT_EQ(m.acquire(t(5), row, lock_mode::shared, forever), acquire_result::waiting);
  m.release_all(t(2));
  EXPECT_TRUE(m.take_granted().empty());
  m.release_all(t(3));
  EXPECT_EQ(m.take_granted(), std::vector<txn_id>{t(4)});
}

TEST(lock_manager, a_deadlock_is_broken_by_the_first_deadline) {
  lock_manager m;
  lock_key a{1, lock_space::row, "a"}, b{1, lock_space::row, "b"};
  ASSERT_EQ(m.acquire(t(1), a, lock_mode::exclusive, forever), acquire_result::granted);
  ASSERT_EQ(m.acquire(t(2), b, lock_mode::exclusive, forever), acquire_result::granted);
  ASSERT_EQ(m.acquire(t(1), b, lock_mode::exclusive, timestamp{4s}),
            acquire_result::waiting);
  ASSERT_EQ(m.acquire(t(2), a, lock_mode::exclusive, timestamp{5s}),
            acquire_result::waiting);
  EXPECT_EQ(m.next_deadline(), timestamp{4s});
  EXPECT_TRUE(m.expire(timestamp{3s}).empty());
  EXPECT_EQ(m.expire(timestamp{4s}), std::vector<txn_id>{t(1)});
  EXPECT_FALSE(m.is_waiting(t(1)));
  m.release_all(t(1)); // the timed-out side aborts
  EXPECT_EQ(m.take_granted(), std::vector<txn_id>{t(2)});
  EXPECT_EQ(m.held(t(2), a), lock_mode::exclusive);
}

TEST(lock_manager, release_drops_a_pending_request) {
  lock_manager m;
  ASSERT_EQ(m.acquire(t(1), row, lock_mode::exclusive, forever), acquire_result::granted);
  ASSERT_EQ(m.acquire(t(2), row, lock_mode::exclusive, forever), acquire_result::waiting);
  m.release_all(t(2));
  EXPECT_EQ(m.waiter_count(), 0u);
  m.release_all(t(1));
  EXPECT_TRUE(m.take_granted().empty());
  EXPECT_EQ(m.grant_count(), 0u);
}

// Attack: random acquires (all modes, upgrades included), releases and
// deadline expiries by 5 transactions over 3 rows of 2 collections (the
// table is a hash table keyed by collection, space and row). After every
// step: no two transactions hold incompatible modes on one row, and nobody
// waits for a row that no other transaction holds (a release or expiry that
// left a grantable waiter behind would be a lost wake-up). In the end every
// lock and waiter is gone.
TEST(lock_manager, random_schedules_keep_grants_compatible_and_lose_no_wakeup) {
  const std::vector<lock_key> keys{{1, lock_space::row, "a"},
                                   {1, lock_space::row, "b"},
                                   {2, lock_space::row, "a"},
                                   {1, lock_space::enqueue, ""}};
  const lock_mode modes[] = {lock_mode::shared, lock_mode::update, lock_mode::exclusive};
  uint64_t grants_seen = 0, waits_seen = 0, wakeups = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    std::mt19937_64 rng{seed};
    auto pick = [&](uint64_t n) { return rng() % n; };
    lock_manager m;
    std::map<uint64_t, size_t> waits_for; // txn -> key index
    timestamp now{0};
    auto granted_now = [&] {
      for (auto x : m.take_granted()) {
        EXPECT_EQ(waits_for.count(x.value), 1u) << "granted without waiting";
        waits_for.erase(x.value);
        ++wakeups;
      }
    };
    for (int step = 0; step < 400; ++step) {
      auto txn = t(1 + pick(5));
      switch (pick(4)) {
      case 0:
      case 1: {
        if (m.is_waiting(txn))
          break;
        auto k = pick(keys.size());
        auto r = m.acquire(txn, keys[k], modes[pick(3)], now + timestamp{pick(50) + 1});
        if (r == acquire_result::waiting) {
          waits_for[txn.value] = k;
          ++waits_seen;
        } else {
          ++grants_seen;
        }
        break;
      }
      case 2:
        m.release_all(txn);
        waits_for.erase(txn.value);
        break;
      case 3:
        now += timestamp{pick(20)};
        for (auto x : m.expire(now)) {
          waits_for.erase(x.value);
          m.release_all(x); // the store aborts a transaction whose wait timed out
        }
        break;
      }
      granted_now();
      ASSERT_EQ(waits_for.size(), m.waiter_count())
          << "seed " << seed << " step " << step;
      for (size_t k = 0; k < keys.size(); ++k) {
        std::vector<std::pair<uint64_t, lock_mode>> holders;
        for (uint64_t x = 1; x <= 5; ++x)
          if (auto h = m.held(t(x), keys[k]))
            holders.emplace_back(x, *h);
        for (auto& [a, ma] : holders)
          for (auto& [b, mb] : holders)
            if (a < b)
              ASSERT_TRUE(compatible(ma, mb) || compatible(mb, ma))
                  << "seed " << seed << " step " << step << ": txns " << a << " and " << b
                  << " hold key " << k << " together";
        for (auto& [w, wk] : waits_for) {
          if (wk != k)
            continue;
          bool other_holder = false;
          for (auto& [x, mode] : holders)
            other_holder = other_holder || x != w;
          ASSERT_TRUE(other_holder)
              << "seed " << seed << " step " << step << ": txn " << w << " waits for key "
              << k << " nobody else holds";
        }
      }
    }
    for (uint64_t x = 1; x <= 5; ++x)
      m.release_all(t(x));
    granted_now();
    EXPECT_EQ(m.grant_count(), 0u);
    EXPECT_EQ(m.waiter_count(), 0u);
  }
  // The schedules did exercise contention.
  EXPECT_GT(waits_seen, 1000u);
  EXPECT_GT(wakeups, 200u);
  EXPECT_GT(grants_seen, 3000u);
}
