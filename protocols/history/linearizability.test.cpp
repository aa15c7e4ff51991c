#include "protocols/history/linearizability.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace conclave::history;

namespace {

/// Builds a history from lines like `ok(1, 0, 2, call::put("k", "a"), done())`.
struct builder {
  client_history h;

  /// An answered call of `client` over [invoked, responded].
  size_t ok(uint64_t client, int64_t invoked, int64_t responded, call what,
            outcome seen) {
    operation op;
    op.client = client_id{client};
    op.invoked = timestamp{invoked};
    op.responded = timestamp{responded};
    op.what = std::move(what);
    op.seen = std::move(seen);
    return h.add(std::move(op));
  }

  /// A call of `client` invoked at `invoked` that never got an answer.
  size_t lost(uint64_t client, int64_t invoked, call what) {
    operation op;
    op.client = client_id{client};
    op.invoked = timestamp{invoked};
    op.what = std::move(what);
    return h.add(std::move(op));
  }

  check_result check(check_options options = {}) const {
    return check_linearizable(h, options);
  }
};

outcome done() {
  return outcome::done();
}
outcome read(std::optional<std::string> v) {
  return outcome::read(std::move(v));
}

bool has(const std::vector<size_t>& ops, size_t op) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

// -- linearizable histories pass --

TEST(linearizability, an_empty_history_is_linearizable) {
  builder b;
  auto r = b.check();
  EXPECT_TRUE(r.linearizable());
  EXPECT_EQ(r.partitions, 0u);
}

TEST(linearizability, overlapping_puts_and_gets_may_be_ordered_either_way) {
  builder b;
  b.ok(1, 0, 10, call::put("k", "a"), done());
  b.ok(2, 2, 12, call::put("k", "b"), done());
  b.ok(3, 5, 6, call::get("k"), read("b"));   // b took effect first ...
  b.ok(4, 7, 8, call::get("k"), read("a"));   // ... then a
  b.ok(3, 13, 14, call::get("k"), read("a")); // and a stays
  auto r = b.check();
  EXPECT_TRUE(r.linearizable()) << r.describe(b.h);
}

TEST(linearizability, a_get_concurrent_with_two_puts_may_see_either) {
  for (const char* seen : {"a", "b"}) {
    builder b;
    b.ok(1, 0, 1, call::put("k", "0"), done());
    b.ok(1, 2, 6, call::put("k", "a"), done());
    b.ok(2, 2, 6, call::put("k", "b"), done());
    b.ok(3, 3, 7, call::get("k"), read(seen));
    auto r = b.check();
    EXPECT_TRUE(r.linearizable()) << seen << ": " << r.describe(b.h);
  }
}

TEST(linearizability, touching_intervals_count_as_concurrent) {
  builder b;
  b.ok(1, 0, 5, call::put("k", "a"), done());
  b.ok(2, 5, 6, call::get("k"), read(std::nullopt));
  EXPECT_TRUE(b.check().linearizable());
}

TEST(linearizability, a_timed_out_put_may_or_may_not_have_taken_effect) {
  {
    builder b; // it took effect, long after its client gave up
    b.ok(1, 0, 1, call::put("k", "a"), done());
    b.lost(2, 2, call::put("k", "b"));
    b.ok(3, 10, 11, call::get("k"), read("a"));
    b.ok(3, 50, 51, call::get("k"), read("b"));
    EXPECT_TRUE(b.check().linearizable()) << b.check().describe(b.h);
  }
  {
    builder b; // it never did
    b.ok(1, 0, 1, call::put("k", "a"), done());
    b.lost(2, 2, call::put("k", "b"));
    b.ok(3, 10, 11, call::get("k"), read("a"));
    b.ok(3, 50, 51, call::get("k"), read("a"));
    EXPECT_TRUE(b.check().linearizable());
  }
  {
    builder b; // but not before it was invoked
    b.ok(3, 0, 1, call::get("k"), read("b"));
    b.lost(2, 2, call::put("k", "b"));
    EXPECT_EQ(b.check().result, verdict::violation);
  }
}

TEST(linearizability, keys_and_queues_are_checked_apart) {
  builder b;
  b.ok(1, 0, 1, call::put("a", "1"), done());
  b.ok(1, 2, 3, call::enqueue("a", "x"), done());
  b.ok(2, 4, 5, call::get("a"), read("1"));
  b.ok(2, 6, 7, call::dequeue("a"), read("x"));
  b.ok(2, 8, 9, call::get("b"), read(std::nullopt));
  auto r = b.check();
  EXPECT_TRUE(r.linearizable());
  EXPECT_EQ(r.partitions, 3u);
}

TEST(linearizability, cas_remove_and_incr_follow_the_register) {
  builder b;
  b.ok(1, 0, 1, call::cas("k", std::nullopt, "1"), done());
  b.ok(1, 2, 3, call::cas("k", std::string{"0"}, "5"), outcome::cas_failed("1"));
  b.ok(1, 4, 5, call::incr("k", 4), outcome::counter(5));
  b.ok(1, 6, 7, call::remove("k"), outcome::removed(true));
  b.ok(1, 8, 9, call::remove("k"), outcome::removed(false));
  b.ok(1, 10, 11, call::incr("k", 2), outcome::counter(2));
  b.ok(1, 12, 13, call::cas("k", std::string{"2"}, std::nullopt), done());
  b.ok(1, 14, 15, call::get("k"), read(std::nullopt));
  auto r = b.check();
  EXPECT_TRUE(r.linearizable()) << r.describe(b.h);
}

TEST(linearizability, concurrent_enqueues_may_leave_in_either_order_but_fifo_after) {
  builder b;
  b.ok(1, 0, 10, call::enqueue("q", "a"), done());
  b.ok(2, 0, 10, call::enqueue("q", "b"), done());
  b.ok(3, 11, 12, call::enqueue("q", "c"), done());
  b.ok(1, 13, 20, call::dequeue("q"), read("b"));
  b.ok(2, 13, 20, call::dequeue("q"), read("a"));
  b.ok(3, 21, 22, call::dequeue("q"), read("c"));
  b.ok(3, 23, 24, call::dequeue("q"), read(std::nullopt));
  auto r = b.check();
  EXPECT_TRUE(r.linearizable()) << r.describe(b.h);
}

TEST(linearizability, a_dequeue_may_take_an_item_whose_enqueue_is_still_in_flight) {
  builder b;
  b.ok(1, 0, 10, call::enqueue("q", "a"), done());
  b.ok(2, 2, 3, call::dequeue("q"), read("a"));
  b.lost(3, 4, call::enqueue("q", "b"));
  b.ok(2, 20, 21, call::dequeue("q"), read("b"));
  EXPECT_TRUE(b.check().linearizable());
}

// -- planted violations fail --

TEST(linearizability, a_stale_read_after_a_completed_put_is_a_violation) {
  builder b;
  size_t put_a = b.ok(1, 0, 1, call::put("k", "a"), done());
  size_t put_b = b.ok(1, 2, 3, call::put("k", "b"), done());
  b.ok(2, 0, 1, call::get("other"), read(std::nullopt));
  size_t get = b.ok(3, 4, 5, call::get("k"), read("a"));
  auto r = b.check();
  ASSERT_EQ(r.result, verdict::violation);
  ASSERT_EQ(r.problems.size(), 1u);
  const auto& p = r.problems.front();
  EXPECT_FALSE(p.where.queue);
  EXPECT_EQ(p.where.name, "k");
  EXPECT_EQ(p.witness, (std::vector<size_t>{put_a, put_b, get}));
  EXPECT_EQ(p.stuck, get);
  std::string text = r.describe(b.h);
  EXPECT_NE(text.find("key \"k\": not linearizable"), std::string::npos) << text;
  EXPECT_NE(text.find("client 3: get(k) -> \"a\" [4, 5]"), std::string::npos) << text;
}

TEST(linearizability, a_lost_write_is_a_violation) {
  builder b;
  b.ok(1, 0, 1, call::put("k", "a"), done());
  size_t put = b.ok(2, 2, 3, call::put("k", "b"), done()); // acknowledged ...
  size_t get = b.ok(3, 4, 5, call::get("k"), read("a"));   // ... but gone
  b.ok(3, 6, 7, call::get("k"), read("a"));
  auto r = b.check();
  ASSERT_EQ(r.result, verdict::violation);
  const auto& w = r.problems.front().witness;
  EXPECT_TRUE(has(w, put) && has(w, get)) << r.describe(b.h);
  EXPECT_EQ(r.problems.front().cut, timestamp{5});
}

TEST(linearizability, a_retried_increment_applied_twice_is_a_violation) {
  builder b;
  b.ok(1, 0, 1, call::incr("n", 1), outcome::counter(1));
  // The client's first try timed out and it retried; the one acknowledged +1
  // was applied twice.
  b.ok(1, 2, 5, call::incr("n", 1), outcome::counter(2));
  size_t get = b.ok(2, 6, 7, call::get("n"), read("3"));
  auto r = b.check();
  ASSERT_EQ(r.result, verdict::violation) << r.describe(b.h);
  EXPECT_TRUE(has(r.problems.front().witness, get));
  // Had the first try been recorded as unanswered, +2 would be explained.
  builder ok;
  ok.ok(1, 0, 1, call::incr("n", 1), outcome::counter(1));
  ok.lost(1, 2, call::incr("n", 1));
  ok.ok(1, 3, 5, call::incr("n", 1), outcome::counter(3));
  ok.ok(2, 6, 7, call::get("n"), read("3"));
  EXPECT_TRUE(ok.check().linearizable());
}

TEST(linearizability, an_item_dequeued_twice_is_a_violation) {
  builder b;
  b.ok(1, 0, 1, call::enqueue("q", "a"), done());
  b.ok(1, 2, 3, call::enqueue("q", "b"), done());
  b.ok(2, 4, 8, call::dequeue("q"), read("a"));
  b.ok(3, 4, 8, call::dequeue("q"), read("a"));
  auto r = b.check();
  ASSERT_EQ(r.result, verdict::violation);
  EXPECT_TRUE(r.problems.front().where.queue);
  EXPECT_EQ(r.problems.front().where.name, "q");
}

TEST(linearizability, items_leaving_out_of_enqueue_order_is_a_violation) {
  builder b;
  b.ok(1, 0, 1, call::enqueue("q", "a"), done());
  b.ok(1, 2, 3, call::enqueue("q", "b"), done());
  b.ok(2, 4, 5, call::dequeue("q"), read("b"));
  b.ok(2, 6, 7, call::dequeue("q"), read("a"));
  EXPECT_EQ(b.check().result, verdict::violation);
}

TEST(linearizability, a_dequeue_of_an_item_never_enqueued_is_a_violation) {
  builder b;
  b.ok(1, 0, 1, call::enqueue("q", "a"), done());
  size_t bad = b.ok(2, 2, 3, call::dequeue("q"), read("z"));
  auto r = b.check();
  ASSERT_EQ(r.result, verdict::violation);
  EXPECT_EQ(r.problems.front().witness, (std::vector<size_t>{bad}));
}

TEST(linearizability, a_failed_cas_reporting_a_value_the_key_cannot_hold_is_a_violation) {
  builder b;
  b.ok(1, 0, 1, call::put("k", "a"), done());
  b.ok(2, 2, 3, call::cas("k", std::string{"x"}, "y"), outcome::cas_failed("b"));
  EXPECT_EQ(b.check().result, verdict::violation);
}

TEST(linearizability, only_the_violating_partition_is_reported) {
  builder b;
  for (int k = 0; k < 5; ++k) {
    std::string key = "k" + std::to_string(k);
    b.ok(1, 10 * k, 10 * k + 1, call::put(key, "a"), done());
    b.ok(2, 10 * k + 2, 10 * k + 3, call::get(key), read(k == 3 ? "b" : "a"));
  }
  auto r = b.check();
  ASSERT_EQ(r.result, verdict::violation);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems.front().where.name, "k3");
  EXPECT_EQ(r.partitions, 5u);
}

TEST(linearizability, the_witness_leaves_out_operations_the_violation_does_not_need) {
  builder b;
  // Noise before and after the stale read, on the same key.
  for (int i = 0; i < 10; ++i)
    b.ok(4, i * 2, i * 2 + 1, call::incr("k", 1), outcome::counter(i + 1));
  size_t put = b.ok(1, 30, 31, call::put("k", "a"), done());
  size_t get = b.ok(2, 32, 33, call::get("k"), read("10"));
  for (int i = 0; i < 10; ++i)
    b.ok(3, 40 + i * 2, 41 + i * 2, call::get("k"), read("a"));
  auto r = b.check();
  ASSERT_EQ(r.result, verdict::violation);
  const auto& p = r.problems.front();
  EXPECT_EQ(p.cut, timestamp{33});
  // The put of "a" and the read of 10 after it, plus what proves 10 was
  // reached before the put (the incr that answered 10).
  EXPECT_TRUE(has(p.witness, put) && has(p.witness, get)) << p.describe(b.h);
  EXPECT_LE(p.witness.size(), 3u) << p.describe(b.h);
}

// -- the budget --

TEST(linearizability, a_search_out_of_steps_is_unknown_not_linearizable) {
  builder b;
  // Many concurrent writes, then reads that force the search to try orders.
  for (int i = 0; i < 12; ++i)
    b.ok(static_cast<uint64_t>(i), 0, 100, call::put("k", std::to_string(i)), done());
  for (int i = 0; i < 12; ++i)
    b.ok(20, 1 + i, 1 + i, call::get("k"), read(std::to_string(i)));
  check_options tiny;
  tiny.step_budget = 5;
  auto r = b.check(tiny);
  ASSERT_EQ(r.result, verdict::unknown);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems.front().result, verdict::unknown);
  EXPECT_NE(r.describe(b.h).find("ran out of steps"), std::string::npos);
  EXPECT_TRUE(b.check().linearizable());
}

} // namespace
