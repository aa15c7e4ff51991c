// Leases on three replica hosts on CAF's test coordinator, in virtual time:
// FIFO waiters, expiry only after the drift-widened ttl, a new primary that
// restarts every holder's ttl, fencing of a stale holder's writes, and
// clients kept out of the reserved lease table.
#include "actors/replication/lease_state.hpp"
#include "actors/replication/replica_host.hpp"
#include "tests/support/replica_set_fixture.hpp"

using namespace conclave::replication;
using namespace std::chrono_literals;
using conclave::testing::reply;

namespace {

class replica_lease_test : public conclave::replication::testing::replica_set_fixture {
protected:
  std::shared_ptr<reply<txn_result>> acquire(size_t i, const std::string& name,
                                             const std::string& holder,
                                             std::chrono::milliseconds ttl,
                                             std::chrono::milliseconds wait = 0ms,
                                             uint32_t limit = 1) {
    lease_params p;
    p.ttl = ttl;
    p.wait = wait;
    p.limit = limit;
    txn_request req;
    req.ops.push_back(txn_op{name, holder, encode_params(p), op_kind::lease_acquire});
    return txn(i, req);
  }

  txn_result token_op(size_t i, op_kind k, const std::string& name,
                      const std::string& holder, const std::string& token) {
    txn_request req;
    req.ops.push_back(txn_op{name, holder, token, k});
    return txn_wait(i, req);
  }

  std::optional<lease> holders(size_t i, const std::string& name) {
    auto r = ask<read_result>(sys(), rs[i].host, read_request{lease_collection, name});
    run();
    if (!r->value || !r->value->found)
      return std::nullopt;
    return decode_lease(r->value->value);
  }

  conclave::replication::timestamp now() {
    return std::chrono::duration_cast<conclave::replication::timestamp>(
        sched().clock().now().time_since_epoch());
  }
};

std::string token_of(const std::shared_ptr<reply<txn_result>>& r) {
  if (!r->value || r->value->code != errc::ok || r->value->outputs.empty())
    return {};
  return r->value->outputs[0].value;
}

} // namespace

TEST_F(replica_lease_test, waiters_get_the_lease_in_arrival_order_with_growing_tokens) {
  make_primary(2, 1);
  auto a = acquire(2, "m", "a", 5000ms);
  ASSERT_TRUE(advance_until([&] { return a->done; }, 200ms));
  ASSERT_EQ(a->value->code, errc::ok);
  EXPECT_EQ(token_of(a), std::to_string(a->value->at.value));
  // A try without wait is answered busy at once, naming the holder.
  auto busy = acquire(2, "m", "x", 5000ms);
  ASSERT_TRUE(advance_until([&] { return busy->done; }, 200ms));
  ASSERT_EQ(busy->value->code, errc::lease_busy);
  auto listed = decode_lease(busy->value->outputs.at(0).value);
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->holders.at(0).holder, "a");
  // Three waiters, in this order.
  std::vector<std::shared_ptr<reply<txn_result>>> w;
  for (auto h : {"b", "c", "d"}) {
    w.push_back(acquire(2, "m", h, 5000ms, 10000ms));
    advance(1ms);
  }
  advance(50ms);
  for (auto& x : w)
    EXPECT_FALSE(x->done);
  std::string prev = token_of(a);
  for (size_t i = 0; i < w.size(); ++i) {
    auto holder = i == 0 ? std::string("a") : std::string(1, "bcd"[i - 1]);
    EXPECT_EQ(token_op(2, op_kind::lease_release, "m", holder, prev).code, errc::ok);
    ASSERT_TRUE(advance_until([&] { return w[i]->done; }, 200ms)) << i;
    ASSERT_EQ(w[i]->value->code, errc::ok) << i;
    for (size_t j = i + 1; j < w.size(); ++j)
      EXPECT_FALSE(w[j]->done) << "waiter " << j << " overtook " << i;
    EXPECT_GT(std::stoull(token_of(w[i])), std::stoull(prev));
    prev = token_of(w[i]);
  }
}

TEST_F(replica_lease_test, a_silent_holder_expires_only_after_its_drift_widened_ttl) {
  lease_time = lease_timing{0.05, 100ms};
  restart_all();
  make_primary(2, 1);
  auto t0 = now();
  auto a = acquire(2, "m", "a", 1000ms);
  ASSERT_TRUE(advance_until([&] { return a->done; }, 200ms));
  ASSERT_EQ(a->value->code, errc::ok);
  auto b = acquire(2, "m", "b", 1000ms, 60000ms);
  auto wait = expiry_wait(1000ms, lease_time); // 1 s * 1.05 / 0.95 + 100 ms
  ASSERT_TRUE(advance_until([&] { return b->done; }, 3s));
  auto granted = now();
  ASSERT_EQ(b->value->code, errc::ok);
  EXPECT_GE(granted - t0, wait);
  EXPECT_LT(granted - t0, wait + 200ms);
  auto h = holders(2, "m");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->holders.at(0).holder, "b");
  // The expired holder can neither renew nor fence with its token.
  EXPECT_EQ(token_op(2, op_kind::lease_renew, "m", "a", token_of(a)).code,
            errc::stale_token);
}

TEST_F(replica_lease_test, renewals_keep_a_holder_past_many_ttls) {
  make_primary(2, 1);
  auto a = acquire(2, "m", "a", 300ms);
  ASSERT_TRUE(advance_until([&] { return a->done; }, 200ms));
  auto b = acquire(2, "m", "b", 300ms, 60000ms);
  for (int i = 0; i < 20; ++i) {
    advance(100ms);
    ASSERT_EQ(token_op(2, op_kind::lease_renew, "m", "a", token_of(a)).code, errc::ok);
    ASSERT_FALSE(b->done) << i;
  }
  ASSERT_TRUE(advance_until([&] { return b->done; }, 2s));
  EXPECT_EQ(b->value->code, errc::ok);
}

TEST_F(replica_lease_test, a_renewal_in_flight_at_the_deadline_keeps_its_whole_window) {
  lease_time = lease_timing{0.0, 0ms};
  restart_all();
  make_primary(2, 1);
  auto a = acquire(2, "m", "a", 300ms);
  ASSERT_TRUE(advance_until([&] { return a->done; }, 200ms));
  auto granted = now();
  auto b = acquire(2, "m", "b", 300ms, 10000ms);
  advance(290ms - (now() - granted));
  // The renewal reaches the primary 10 ms before its deadline, and its commit
  // stalls (no secondary syncs) past the deadline.
  rs[0].device->set_auto_sync(false);
  rs[1].device->set_auto_sync(false);
  auto renew_sent = now();
  txn_request req;
  req.ops.push_back(txn_op{"m", "a", token_of(a), op_kind::lease_renew});
  auto r = txn(2, req);
  advance(100ms);
  EXPECT_FALSE(r->done);
  for (size_t i : {0, 1}) {
    rs[i].device->release_syncs();
    rs[i].device->set_auto_sync(true);
  }
  ASSERT_TRUE(advance_until([&] { return r->done; }, 200ms));
  ASSERT_EQ(r->value->code, errc::ok); // a counts the lease until send + ttl
  // So nobody else may have it before then.
  while (now() - renew_sent < 300ms) {
    ASSERT_FALSE(b->done) << "granted " << (now() - renew_sent).count() / 1000000
                          << " ms after the renewal was sent";
    advance(5ms);
  }
  ASSERT_TRUE(advance_until([&] { return b->done; }, 2s));
  EXPECT_EQ(b->value->code, errc::ok);
}

TEST_F(replica_lease_test, a_new_primary_restarts_every_holders_full_ttl) {
  lease_time = lease_timing{0.0, 0ms};
  restart_all();
  make_primary(2, 1);
  auto a = acquire(2, "m", "a", 2000ms);
  ASSERT_TRUE(advance_until([&] { return a->done; }, 200ms));
  advance(1500ms); // most of the ttl gone on the first primary
  crash(2);
  set_links(2, false);
  auto took_over = now();
  make_primary(0, 2);
  auto serving = now();
  auto b = acquire(0, "m", "b", 2000ms, 60000ms);
  ASSERT_TRUE(advance_until([&] { return b->done; }, 5s));
  ASSERT_EQ(b->value->code, errc::ok);
  // Not granted before the new primary's own full ttl from when it served.
  EXPECT_GE(now() - serving, 2000ms);
  EXPECT_GE(now() - took_over, 2000ms);
  EXPECT_GT(std::stoull(token_of(b)), std::stoull(token_of(a)));
}

TEST_F(replica_lease_test, a_stale_holders_fenced_write_changes_nothing) {
  make_primary(2, 1);
  auto a = acquire(2, "m", "a", 200ms);
  ASSERT_TRUE(advance_until([&] { return a->done; }, 200ms));
  auto b = acquire(2, "m", "b", 5000ms, 60000ms);
  ASSERT_TRUE(advance_until([&] { return b->done; }, 2s)); // a expired
  ASSERT_EQ(b->value->code, errc::ok);
  auto fenced = [&](const std::string& token, const std::string& value) {
    txn_request req;
    req.ops.push_back(txn_op{"m", "", token, op_kind::expect_lease});
    req.ops.push_back(txn_op{"d", "k", value, op_kind::put});
    return txn_wait(2, req);
  };
  EXPECT_EQ(fenced(token_of(a), "from a").code, errc::stale_token);
  EXPECT_FALSE(read(2, "k").found);
  EXPECT_EQ(fenced(token_of(b), "from b").code, errc::ok);
  EXPECT_EQ(read(2, "k").value, "from b");
  EXPECT_EQ(fenced(token_of(a), "from a again").code, errc::stale_token);
  EXPECT_EQ(read(2, "k").value, "from b");
}

TEST_F(replica_lease_test, a_waiter_that_polls_again_keeps_its_turn) {
  make_primary(2, 1);
  auto a = acquire(2, "m", "a", 60000ms);
  ASSERT_TRUE(advance_until([&] { return a->done; }, 200ms));
  auto b = acquire(2, "m", "b", 5000ms, 300ms); // polls every 300 ms
  advance(10ms);
  auto c = acquire(2, "m", "c", 5000ms, 60000ms); // arrived later, waits long
  ASSERT_TRUE(advance_until([&] { return b->done; }, 1s));
  EXPECT_EQ(b->value->code, errc::lease_busy);
  advance(20ms); // b's client comes back within the grace
  auto b2 = acquire(2, "m", "b", 5000ms, 60000ms);
  advance(10ms);
  EXPECT_EQ(token_op(2, op_kind::lease_release, "m", "a", token_of(a)).code, errc::ok);
  ASSERT_TRUE(advance_until([&] { return b2->done; }, 500ms));
  EXPECT_EQ(b2->value->code, errc::ok);
  EXPECT_FALSE(c->done);
}

TEST_F(replica_lease_test, a_waiter_whose_wait_runs_out_is_told_who_holds) {
  make_primary(2, 1);
  auto a = acquire(2, "m", "a", 60000ms);
  ASSERT_TRUE(advance_until([&] { return a->done; }, 200ms));
  auto t0 = now();
  auto b = acquire(2, "m", "b", 1000ms, 500ms);
  ASSERT_TRUE(advance_until([&] { return b->done; }, 2s));
  EXPECT_GE(now() - t0, 500ms);
  ASSERT_EQ(b->value->code, errc::lease_busy);
  EXPECT_EQ(decode_lease(b->value->outputs.at(0).value)->holders.at(0).holder, "a");
}

TEST_F(replica_lease_test, waiters_past_the_bound_are_answered_busy_at_once) {
  max_lease_waiters = 3;
  restart_all();
  make_primary(2, 1);
  auto a = acquire(2, "m", "a", 60000ms);
  ASSERT_TRUE(advance_until([&] { return a->done; }, 200ms));
  std::vector<std::shared_ptr<reply<txn_result>>> w;
  for (int i = 0; i < 5; ++i)
    w.push_back(acquire(2, "m", "w" + std::to_string(i), 1000ms, 60000ms));
  advance(10ms);
  for (int i = 0; i < 3; ++i)
    EXPECT_FALSE(w[i]->done) << i;
  for (int i = 3; i < 5; ++i) {
    ASSERT_TRUE(w[i]->done) << i;
    EXPECT_EQ(w[i]->value->code, errc::lease_busy) << i;
  }
}

TEST_F(replica_lease_test, waiters_on_a_deposed_primary_are_sent_to_the_new_one) {
  make_primary(2, 1);
  auto a = acquire(2, "m", "a", 60000ms);
  ASSERT_TRUE(advance_until([&] { return a->done; }, 200ms));
  auto b = acquire(2, "m", "b", 1000ms, 60000ms);
  advance(10ms);
  make_primary(0, 2);
  ASSERT_TRUE(advance_until([&] { return b->done; }, 1s));
  EXPECT_EQ(b->value->code, errc::not_primary);
}

TEST_F(replica_lease_test, clients_cannot_touch_the_lease_table_or_expire_a_holder) {
  make_primary(2, 1);
  auto a = acquire(2, "m", "a", 60000ms);
  ASSERT_TRUE(advance_until([&] { return a->done; }, 200ms));
  txn_request put;
  put.ops.push_back(txn_op{lease_collection, "m", "x", op_kind::put});
  EXPECT_EQ(txn_wait(2, put).code, errc::bad_request);
  EXPECT_EQ(token_op(2, op_kind::lease_expire, "m", "a", token_of(a)).code,
            errc::bad_request);
  EXPECT_EQ(holders(2, "m")->holders.size(), 1u);
  // Weak lease ops would be answered before they are applied.
  txn_request weak;
  weak.mode = commit_mode::weak;
  weak.ops.push_back(txn_op{"m", "a", token_of(a), op_kind::lease_renew});
  EXPECT_EQ(txn_wait(2, weak).code, errc::bad_request);
}

TEST_F(replica_lease_test,
       the_primary_lists_its_waiters_in_queue_order_and_a_secondary_none) {
  make_primary(2, 1);
  auto a = acquire(2, "m", "a", 5000ms);
  ASSERT_TRUE(advance_until([&] { return a->done; }, 200ms));
  std::vector<std::shared_ptr<reply<txn_result>>> w;
  for (auto h : {"b", "c"}) {
    w.push_back(acquire(2, "m", h, 3000ms, 10000ms));
    advance(1ms);
  }
  w.push_back(acquire(2, "m2", "z", 3000ms, 10000ms)); // free: granted, not waiting
  advance(100ms);
  auto listed = list(2, list_request{lease_waiters_collection, "", "", 0});
  ASSERT_EQ(listed.code, errc::ok);
  ASSERT_EQ(listed.items.size(), 2u);
  auto k0 = parse_waiter_key(listed.items[0].key);
  auto w0 = decode_waiter(listed.items[0].value);
  ASSERT_TRUE(k0 && w0);
  EXPECT_EQ(k0->first, "m");
  EXPECT_EQ(k0->second, 1u);
  EXPECT_EQ(w0->holder, "b");
  EXPECT_EQ(w0->ttl, 3000ms);
  EXPECT_GT(w0->wait_left, 9000ms);
  EXPECT_LE(w0->wait_left, 10000ms);
  EXPECT_EQ(decode_waiter(listed.items[1].value)->holder, "c");
  // Paging: one at a time, then after the first.
  auto first = list(2, list_request{lease_waiters_collection, "", "", 1});
  ASSERT_EQ(first.items.size(), 1u);
  EXPECT_TRUE(first.more);
  auto second =
      list(2, list_request{lease_waiters_collection, "", first.items[0].key, 1});
  ASSERT_EQ(second.items.size(), 1u);
  EXPECT_EQ(decode_waiter(second.items[0].value)->holder, "c");
  // Only the primary knows them: a secondary lists none.
  EXPECT_TRUE(list(0, list_request{lease_waiters_collection, "", "", 0}).items.empty());
  // Granted waiters leave the list.
  EXPECT_EQ(token_op(2, op_kind::lease_release, "m", "a", token_of(a)).code, errc::ok);
  ASSERT_TRUE(advance_until([&] { return w[0]->done; }, 200ms));
  auto after = list(2, list_request{lease_waiters_collection, "", "", 0});
  ASSERT_EQ(after.items.size(), 1u);
  EXPECT_EQ(decode_waiter(after.items[0].value)->holder, "c");
  EXPECT_EQ(parse_waiter_key(after.items[0].key)->second, 1u) << "c moved up";
}
