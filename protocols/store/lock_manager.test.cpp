#include "protocols/store/lock_manager.hpp"

#include <gtest/gtest.h>

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
