// The typed library API under real threads: isolation guarantees with
// concurrent transactions, deadlock resolution by timeout, FIFO under
// concurrent enqueue/dequeue with aborts, read-your-writes and bad inputs.
#include "storage/collections.hpp"

#include "tests/support/store_errc.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>

using namespace conclave::store;
using namespace std::chrono_literals;

using conclave::test::code;

namespace {

struct account {
  int64_t balance = 0;
  std::string owner;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, account& x) {
  return f(x.balance, x.owner);
}

class collections_test : public testing::Test {
protected:
  void SetUp() override {
    state_manager_options o;
    o.dir = dir.path();
    o.log = [this](const std::string& line) { log.push_back(line); };
    store = state_manager::open(o).value();
  }

  conclave::test::temp_dir dir{"conclave-coll"};
  std::vector<std::string> log;
  std::unique_ptr<state_manager> store;
};

} // namespace

TEST_F(collections_test, typed_values_and_integer_keys_in_key_order) {
  auto d = store->dictionary<int64_t, account>("accounts").value();
  auto tx = store->begin();
  for (int64_t k : {5, -3, 100, 0, -200})
    ASSERT_TRUE(d.add(tx, k, account{k * 10, "o" + std::to_string(k)}));
  auto got = d.try_get(tx, -3).value();
  ASSERT_TRUE(got);
  EXPECT_EQ(got.value.balance, -30);
  EXPECT_EQ(got.value.owner, "o-3");
  ASSERT_TRUE(tx.commit());
  auto rd = store->begin();
  auto all = d.enumerate(rd).value();
  std::vector<int64_t> keys;
  for (auto& [k, v] : all)
    keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<int64_t>{-200, -3, 0, 5, 100}));
  auto range = d.enumerate(rd, int64_t{-3}, int64_t{5}).value();
  ASSERT_EQ(range.size(), 2u);
  EXPECT_EQ(range[0].first, -3);
  EXPECT_EQ(range[1].first, 0);
  EXPECT_EQ(d.count(rd).value(), 5u);
}

TEST_F(collections_test, read_your_writes_and_conditional_updates) {
  auto d = store->dictionary<std::string, std::string>("d").value();
  auto q = store->queue<uint64_t>("q").value();
  auto tx = store->begin();
  ASSERT_TRUE(d.add_or_update(tx, "k", "v1"));
  EXPECT_EQ(d.try_get(tx, "k").value().value, "v1");
  EXPECT_FALSE(d.try_update(tx, "k", "v2", "nope").value());
  EXPECT_TRUE(d.try_update(tx, "k", "v2", "v1").value());
  EXPECT_EQ(code(d.add(tx, "k", "again").error()), errc::key_exists);
  ASSERT_TRUE(q.enqueue(tx, 7));
  EXPECT_EQ(q.try_peek(tx).value().value, 7u);
  EXPECT_EQ(q.count(tx).value(), 1u);
  auto other = store->begin();
  EXPECT_FALSE(d.try_get(other, "k", read_mode::snapshot).value());
  ASSERT_TRUE(other.commit());
  ASSERT_TRUE(tx.commit());
  auto after = store->begin();
  EXPECT_EQ(d.try_get(after, "k").value().value, "v2");
  auto removed = d.try_remove(after, "k").value();
  EXPECT_EQ(removed.value, "v2");
  EXPECT_FALSE(d.contains(after, "k").value());
  EXPECT_EQ(q.try_dequeue(after).value().value, 7u);
}

TEST_F(collections_test, bad_inputs_are_clear_errors_and_lose_nothing) {
  auto d = store->dictionary<std::string, std::string>("d").value();
  EXPECT_EQ(code(store->dictionary<int32_t, std::string>("d").error()), errc::wrong_type);
  EXPECT_EQ(code(store->queue<std::string>("d").error()), errc::wrong_type);
  EXPECT_EQ(code(store->dictionary<std::string, std::string>("").error()),
            errc::bad_argument);
  auto tx = store->begin();
  ASSERT_TRUE(d.add(tx, "keep", "me"));
  EXPECT_EQ(code(d.add(tx, "big", std::string(2u << 20, 'x')).error()), errc::too_large);
  op_request raw;
  raw.op = operation::try_get;
  raw.collection = "missing";
  EXPECT_EQ(code(tx.run(raw, 10ms).error()), errc::unknown_collection);
  ASSERT_TRUE(tx.commit());
  EXPECT_EQ(code(d.add(tx, "late", "x").error()), errc::transaction_finished);
  EXPECT_EQ(code(tx.commit().error()), errc::transaction_finished);
  auto check = store->begin();
  EXPECT_EQ(d.try_get(check, "keep").value().value, "me");
  EXPECT_FALSE(d.contains(check, "big").value());
}

TEST_F(collections_test, a_dropped_transaction_aborts_and_releases_its_locks) {
  auto d = store->dictionary<std::string, int32_t>("d").value();
  {
    auto tx = store->begin();
    ASSERT_TRUE(d.add(tx, "k", 1));
  }
  auto tx = store->begin();
  EXPECT_FALSE(d.contains(tx, "k", read_mode::repeatable, 50ms).value());
  ASSERT_TRUE(d.add(tx, "k", 2, 50ms));
  ASSERT_TRUE(tx.commit());
  EXPECT_EQ(store->get_stats().aborts, 1u);
}

// Transfers between accounts keep the total constant; readers that enumerate
// their snapshot must always see that total, whatever commits meanwhile.
TEST_F(collections_test, snapshots_are_consistent_under_concurrent_transfers) {
  auto d = store->dictionary<int32_t, int64_t>("acc").value();
  constexpr int accounts = 8;
  constexpr int64_t initial = 1000;
  {
    auto tx = store->begin();
    for (int i = 0; i < accounts; ++i)
      ASSERT_TRUE(d.add(tx, i, initial));
    ASSERT_TRUE(tx.commit());
  }
  std::atomic<bool> stop{false};
  std::atomic<int> transfers{0}, timeouts{0}, snapshots{0}, bad{0};
  auto transfer = [&](unsigned seed) {
    std::mt19937 rng{seed};
    while (!stop) {
      int a = static_cast<int>(rng() % accounts);
      int b = static_cast<int>(rng() % accounts);
      if (a == b)
        continue;
      auto tx = store->begin();
      auto x = d.try_get(tx, a, read_mode::update, 200ms);
      auto y = d.try_get(tx, b, read_mode::update, 200ms);
      if (!x || !y) {
        ++timeouts; // deadlock between two transfers: one side gives up
        continue;   // dropping tx aborts it
      }
      ASSERT_TRUE(d.add_or_update(tx, a, x.value().value - 7));
      ASSERT_TRUE(d.add_or_update(tx, b, y.value().value + 7));
      ASSERT_TRUE(tx.commit());
      ++transfers;
    }
  };
  auto audit = [&] {
    while (!stop) {
      auto tx = store->begin();
      int64_t sum = 0;
      for (auto& [k, v] : std::vector(d.enumerate(tx).value()))
        sum += v;
      // Single reads in snapshot mode agree with the enumeration.
      int64_t again = 0;
      for (int i = 0; i < accounts; ++i)
        again += d.try_get(tx, i, read_mode::snapshot).value().value;
      if (sum != accounts * initial || again != sum)
        ++bad;
      ++snapshots;
    }
  };
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < 3; ++i)
    threads.emplace_back(transfer, i + 1);
  threads.emplace_back(audit);
  threads.emplace_back(audit);
  while (transfers < 300)
    std::this_thread::yield();
  stop = true;
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(snapshots.load(), 0);
  auto tx = store->begin();
  int64_t total = 0;
  for (auto& [k, v] : std::vector(d.enumerate(tx).value()))
    total += v;
  EXPECT_EQ(total, accounts * initial);
}

TEST_F(collections_test, repeatable_read_holds_off_a_concurrent_writer) {
  auto d = store->dictionary<std::string, std::string>("d").value();
  {
    auto tx = store->begin();
    ASSERT_TRUE(d.add(tx, "k", "before"));
    ASSERT_TRUE(tx.commit());
  }
  auto reader = store->begin();
  ASSERT_EQ(d.try_get(reader, "k").value().value, "before");
  std::atomic<bool> written{false};
  std::thread writer{[&] {
    auto tx = store->begin();
    ASSERT_TRUE(d.add_or_update(tx, "k", "after", 10s));
    ASSERT_TRUE(tx.commit());
    written = true;
  }};
  // The writer waits for the reader's shared lock; the reader keeps reading
  // the same value however often it looks.
  while (store->get_stats().lock_waits == 0)
    std::this_thread::yield();
  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(d.try_get(reader, "k").value().value, "before");
  EXPECT_FALSE(written.load());
  ASSERT_TRUE(reader.commit());
  writer.join();
  EXPECT_TRUE(written.load());
  auto tx = store->begin();
  EXPECT_EQ(d.try_get(tx, "k").value().value, "after");
}

TEST_F(collections_test, a_deadlock_ends_with_one_timeout_and_one_commit) {
  auto d = store->dictionary<std::string, std::string>("d").value();
  auto t1 = store->begin();
  auto t2 = store->begin();
  ASSERT_TRUE(d.add_or_update(t1, "a", "t1"));
  ASSERT_TRUE(d.add_or_update(t2, "b", "t2"));
  std::error_code t1_error;
  std::thread first{[&] {
    auto r = d.add_or_update(t1, "b", "t1", 150ms); // short: this side gives up
    if (!r) {
      t1_error = r.error();
      ASSERT_TRUE(t1.abort());
    }
  }};
  auto r2 = d.add_or_update(t2, "a", "t2", 10s);
  first.join();
  ASSERT_TRUE(r2) << r2.error().message();
  ASSERT_TRUE(t2.commit());
  EXPECT_EQ(code(t1_error), errc::lock_timeout);
  EXPECT_EQ(store->get_stats().lock_timeouts, 1u);
  auto tx = store->begin();
  EXPECT_EQ(d.try_get(tx, "a").value().value, "t2");
  EXPECT_EQ(d.try_get(tx, "b").value().value, "t2");
}

// Producers enqueue numbered items (a quarter of their transactions abort),
// consumers dequeue (some abort, putting items back): every committed item
// comes out exactly once, in the order the enqueues committed.
TEST_F(collections_test, queue_is_fifo_under_concurrent_enqueue_dequeue_and_aborts) {
  auto q = store->queue<uint64_t>("jobs").value();
  constexpr int producers = 3, per_producer = 60;
  std::mutex mtx;
  std::map<uint64_t, std::vector<uint64_t>> committed_at; // lsn -> items
  std::vector<uint64_t> consumed;
  std::atomic<int> producing{producers};
  auto produce = [&](uint64_t p) {
    std::mt19937 rng{static_cast<unsigned>(p)};
    for (uint64_t i = 0; i < per_producer; ++i) {
      auto tx = store->begin();
      std::vector<uint64_t> items{p * 1000 + i * 2, p * 1000 + i * 2 + 1};
      for (auto x : items)
        ASSERT_TRUE(q.enqueue(tx, x, 10s));
      if (rng() % 4 == 0) {
        ASSERT_TRUE(tx.abort());
        continue;
      }
      auto l = tx.commit();
      ASSERT_TRUE(l);
      std::lock_guard<std::mutex> guard{mtx};
      committed_at[l.value().value] = items;
    }
    --producing;
  };
  auto consume = [&](unsigned seed) {
    std::mt19937 rng{seed};
    for (;;) {
      bool done = producing == 0;
      auto tx = store->begin();
      std::vector<uint64_t> got;
      for (int k = 0; k < 3; ++k) {
        auto item = q.try_dequeue(tx, 10s);
        ASSERT_TRUE(item);
        if (!item.value())
          break;
        got.push_back(item.value().value);
      }
      if (rng() % 5 == 0) {
        ASSERT_TRUE(tx.abort());
        continue;
      }
      // Commit under the mutex so `consumed` is in commit order (the dequeue
      // lock already serializes consumers).
      std::lock_guard<std::mutex> guard{mtx};
      ASSERT_TRUE(tx.commit());
      consumed.insert(consumed.end(), got.begin(), got.end());
      if (got.empty() && done)
        return;
    }
  };
  std::vector<std::thread> threads;
  for (uint64_t p = 1; p <= producers; ++p)
    threads.emplace_back(produce, p);
  threads.emplace_back(consume, 11u);
  threads.emplace_back(consume, 12u);
  for (auto& t : threads)
    t.join();
  std::vector<uint64_t> expected;
  for (auto& [l, items] : committed_at)
    expected.insert(expected.end(), items.begin(), items.end());
  EXPECT_GT(expected.size(), 100u);
  EXPECT_EQ(consumed, expected);
}
