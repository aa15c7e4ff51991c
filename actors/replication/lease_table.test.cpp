// The acting primary's lease clock (lease_table.hpp): how long it waits
// before it frees a holder's slot, and its FIFO of waiting acquires.
#include "actors/replication/lease_table.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

using namespace conclave::replication;
using namespace std::chrono_literals;

TEST(lease_table, the_store_waits_out_the_worst_drift_between_two_clocks) {
  lease_timing t{0.01, 0ms};
  // 10 s at 1%: 10 s * 1.01 / 0.99 = 10.2020... s.
  auto w = expiry_wait(10000ms, t);
  EXPECT_GE(w, 10202020202ns);
  EXPECT_LE(w, 10202020203ns);
  // In real time the store waits at least w / (1 + drift); a holder's ttl
  // lasts at most ttl / (1 - drift): the first is never shorter.
  for (double drift : {0.0, 0.001, 0.01, 0.1, 0.3}) {
    lease_timing d{drift, 0ms};
    for (auto ttl : {1ms, 7ms, 1000ms, 86400000ms}) {
      double store_real =
          std::chrono::duration<double>(expiry_wait(ttl, d)).count() / (1 + drift);
      double holder_real = std::chrono::duration<double>(ttl).count() / (1 - drift);
      EXPECT_GE(store_real * (1 + 1e-12), holder_real) << drift << " " << ttl.count();
    }
  }
  EXPECT_EQ(expiry_wait(1000ms, {0.0, 250ms}), 1250ms);
}

TEST(lease_table, holders_fall_due_at_their_deadline_and_are_asked_for_once) {
  lease_table t{{0.0, 0ms}};
  t.held("m", "a", 1, 100ms, 0ns);
  t.held("m", "b", 2, 300ms, 0ns);
  EXPECT_EQ(t.next_deadline(), timestamp(100ms));
  EXPECT_TRUE(t.due(99ms).empty());
  auto d = t.due(100ms);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].holder, "a");
  EXPECT_EQ(d[0].token, 1u);
  // Asked for: not again until the retry interval has passed.
  EXPECT_TRUE(t.due(150ms, 1s).empty());
  EXPECT_EQ(t.due(1100ms, 1s).size(), 2u);
  // A renewal restarts the deadline and forgets the request.
  t.held("m", "b", 2, 300ms, 1200ms);
  EXPECT_EQ(t.deadline("m", "b"), timestamp(1500ms));
  t.gone("m", "a");
  EXPECT_EQ(t.next_deadline(), timestamp(1500ms));
  t.clear();
  EXPECT_FALSE(t.next_deadline());
}

TEST(lease_table, waiters_are_served_in_arrival_order_and_keep_their_place) {
  lease_waiters q{500ms};
  EXPECT_FALSE(q.push("m", {1, "a", 10s}));
  EXPECT_FALSE(q.push("m", {2, "b", 5s}));
  EXPECT_FALSE(q.push("m", {3, "c", 1s}));
  // b asks again: its new request takes the old one's place.
  EXPECT_EQ(q.push("m", {4, "b", 20s}), 2u);
  EXPECT_EQ(q.waiting("m"), 3u);
  EXPECT_EQ(q.next_deadline(), timestamp(1s));
  auto gone = q.timed_out(1s);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].holder, "c");
  EXPECT_EQ(gone[0].id, 3u);
  EXPECT_EQ(q.waiting("m"), 2u);
  EXPECT_EQ(q.size(), 3u); // c's place is kept for 500 ms
  EXPECT_EQ(q.pop("m")->id, 1u);
  q.push_front("m", {5, "a", 10s});
  EXPECT_EQ(q.pop("m")->id, 5u);
  EXPECT_EQ(q.pop("m")->id, 4u);
  EXPECT_FALSE(q.pop("m")); // only c's placeholder is left: never granted
  EXPECT_TRUE(q.timed_out(1500ms).empty());
  EXPECT_EQ(q.size(), 0u);
}

TEST(lease_table, a_waiter_that_polls_again_in_time_keeps_its_turn) {
  lease_waiters q{500ms};
  q.push("m", {1, "early", 1s});
  q.push("m", {2, "late", 10s});
  ASSERT_EQ(q.timed_out(1s).size(), 1u); // early's poll ran out
  EXPECT_EQ(q.waiting("m"), 1u);
  // early asks again within the grace: back in its place, ahead of late, and
  // no old request to answer (it was answered when it ran out).
  EXPECT_FALSE(q.push("m", {3, "early", 3s}));
  EXPECT_EQ(q.pop("m")->holder, "early");
  EXPECT_EQ(q.pop("m")->holder, "late");
  // A placeholder nobody comes back for is dropped after the grace.
  q.push("n", {4, "gone", 1s});
  ASSERT_EQ(q.timed_out(1s).size(), 1u);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_TRUE(q.timed_out(1499ms).empty());
  EXPECT_EQ(q.size(), 1u);
  q.timed_out(1500ms);
  EXPECT_EQ(q.size(), 0u);
  // Stopping as primary answers the live waiters only.
  q.push("m", {5, "x", 1s});
  q.push("m", {6, "y", 5s});
  q.timed_out(1s);
  auto drained = q.drain();
  ASSERT_EQ(drained.size(), 1u);
  EXPECT_EQ(drained[0].holder, "y");
}

TEST(lease_table, the_deadline_index_agrees_with_a_walk_over_every_holder) {
  // Random grants, renewals, releases, expiry rounds and clears, checked
  // against a plain model of the same rules.
  std::mt19937_64 rng(11);
  lease_table t{{0.0, 0ms}};
  struct model_entry {
    uint64_t token;
    timestamp deadline;
    std::optional<timestamp> asked;
  };
  std::map<std::pair<std::string, std::string>, model_entry> model;
  timestamp now{0};
  for (int step = 0; step < 20000; ++step) {
    now += std::chrono::milliseconds(rng() % 50);
    auto name = "l" + std::to_string(rng() % 4);
    auto holder = "h" + std::to_string(rng() % 6);
    switch (rng() % 10) {
    case 0:
    case 1:
    case 2: {
      auto ttl = std::chrono::milliseconds(1 + rng() % 300);
      t.held(name, holder, step, ttl, now);
      model[{name, holder}] = {static_cast<uint64_t>(step), now + ttl, std::nullopt};
      break;
    }
    case 3:
      t.gone(name, holder);
      model.erase({name, holder});
      break;
    case 4:
      if (rng() % 50 == 0) {
        t.clear();
        model.clear();
      }
      break;
    default: {
      auto got = t.due(now, 100ms);
      std::set<std::pair<std::string, std::string>> expected;
      for (auto& [k, e] : model)
        if (e.deadline <= now && (!e.asked || *e.asked + 100ms <= now)) {
          expected.insert(k);
          e.asked = now;
        }
      std::set<std::pair<std::string, std::string>> seen;
      for (auto& x : got) {
        seen.insert({x.name, x.holder});
        EXPECT_EQ(x.token, model.at({x.name, x.holder}).token);
      }
      ASSERT_EQ(seen, expected) << "step " << step;
    }
    }
    std::optional<timestamp> best;
    for (auto& [k, e] : model) {
      auto at = e.asked ? *e.asked + 100ms : e.deadline;
      if (!best || at < *best)
        best = at;
    }
    ASSERT_EQ(t.next_deadline(), best) << "step " << step;
    ASSERT_EQ(t.size(), model.size());
  }
}

TEST(lease_table, the_waiters_next_deadline_agrees_with_a_walk) {
  std::mt19937_64 rng(5);
  lease_waiters q{200ms};
  timestamp now{0};
  uint64_t id = 1;
  for (int step = 0; step < 20000; ++step) {
    now += std::chrono::milliseconds(rng() % 40);
    auto name = "l" + std::to_string(rng() % 3);
    switch (rng() % 6) {
    case 0:
    case 1:
      q.push(name, {id++, "h" + std::to_string(rng() % 8),
                    now + std::chrono::milliseconds(rng() % 500)});
      break;
    case 2:
      q.push_front(name, {id++, "f" + std::to_string(id),
                          now + std::chrono::milliseconds(rng() % 500)});
      break;
    case 3:
      q.pop(name);
      break;
    case 4:
      q.timed_out(now);
      break;
    default:
      if (rng() % 100 == 0)
        q.drain();
    }
    // The walk: the smallest `until` of any entry, placeholders included.
    auto copy = q; // walked through the public interface
    std::optional<timestamp> best;
    for (auto& w : copy.timed_out(now + std::chrono::hours(24))) // every live waiter
      if (!best || w.until < *best)
        best = w.until;
    if (q.next_deadline() && best)
      ASSERT_LE(*q.next_deadline(), *best) << "step " << step;
    if (q.size() == 0)
      ASSERT_FALSE(q.next_deadline()) << "step " << step;
    else
      ASSERT_TRUE(q.next_deadline()) << "step " << step;
  }
}
