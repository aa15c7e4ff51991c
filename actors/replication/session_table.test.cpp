// The store's client sessions on a bare store_core, without actors: a retry
// of an applied transaction gets the first outcome and changes nothing,
// whatever its ops; numbers the client settled or the bound dropped are
// never run again; sessions expire and are evicted by the records' stamps
// only; the table survives garbage. Each test fails if the table is bypassed
// (the retry would apply a second time).
#include "actors/replication/session_table.hpp"
#include "actors/replication/txn_apply.hpp"
#include "tests/support/store_reads.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

using namespace conclave::replication;
namespace store = conclave::store;

namespace {

txn_op session_test_op(op_kind k, std::string c, std::string key = {},
                       std::string v = {}) {
  return txn_op{std::move(c), std::move(key), std::move(v), k};
}

/// A sessioned transaction as a primary proposes it (stamped).
std::vector<txn_op> sessioned(const std::string& client, uint64_t seq,
                              uint64_t waiting_from, int64_t stamp,
                              std::vector<txn_op> ops) {
  session_call c{client, seq, waiting_from, 0};
  auto s = make_session_op(c);
  stamp_session_op(s, stamp);
  ops.insert(ops.begin(), std::move(s));
  return ops;
}

std::optional<std::string> session_test_value(store::store_core& s, const std::string& c,
                                              const std::string& k) {
  return conclave::test::committed_value(s, c, k);
}

uint64_t session_test_queue_length(store::store_core& s, const std::string& q) {
  if (!s.find_collection(q))
    return 0;
  auto t = s.begin();
  store::op_request r;
  r.txn = t;
  r.op = store::operation::queue_count;
  r.collection = q;
  auto res = s.execute(r, store::timestamp::max());
  (void)s.abort(t);
  return res ? res.value().count : 0;
}

constexpr int64_t session_epoch_ms = 1'700'000'000'000;

} // namespace

TEST(session_table, session_ops_are_checked_before_proposing) {
  store::core_limits l;
  auto put = session_test_op(op_kind::put, "d", "k", "v");
  auto s = make_session_op({"client", 3, 2, 0});
  EXPECT_EQ(check_request(txn_request{{s, put}, commit_mode::strong}, l), errc::ok);
  // Alone, second, twice.
  EXPECT_EQ(check_request(txn_request{{s}, commit_mode::strong}, l), errc::bad_request);
  EXPECT_EQ(check_request(txn_request{{put, s}, commit_mode::strong}, l),
            errc::bad_request);
  EXPECT_EQ(check_request(txn_request{{s, s, put}, commit_mode::strong}, l),
            errc::bad_request);
  // Malformed: no id, an id over the bound, waiting_from 0 or above seq,
  // a cut key, a stamp that is not 8 bytes.
  auto bad = [&](txn_op o) {
    return check_request(txn_request{{std::move(o), put}, commit_mode::strong}, l);
  };
  EXPECT_EQ(bad(make_session_op({"", 1, 1, 0})), errc::bad_request);
  EXPECT_EQ(bad(make_session_op({std::string(max_client_id_bytes + 1, 'x'), 1, 1, 0})),
            errc::bad_request);
  EXPECT_EQ(bad(make_session_op({std::string(max_client_id_bytes, 'x'), 1, 1, 0})),
            errc::ok);
  EXPECT_EQ(bad(make_session_op({"c", 1, 0, 0})), errc::bad_request);
  EXPECT_EQ(bad(make_session_op({"c", 1, 2, 0})), errc::bad_request);
  auto cut = s;
  cut.key.pop_back();
  EXPECT_EQ(bad(cut), errc::bad_request);
  auto odd = s;
  odd.value = "123";
  EXPECT_EQ(bad(odd), errc::bad_request);
  // Every truncation and every single-bit flip of a session op either
  // decodes to a well-formed call or is refused; none crashes.
  stamp_session_op(s, session_epoch_ms);
  for (size_t i = 0; i < s.key.size() * 8; ++i) {
    auto f = s;
    f.key[i / 8] = static_cast<char>(f.key[i / 8] ^ (1 << (i % 8)));
    if (auto c = decode_session_op(f))
      EXPECT_TRUE(c->waiting_from >= 1 && c->waiting_from <= c->seq);
  }
}

TEST(session_table, a_retried_dequeue_gets_the_first_item_and_takes_no_other) {
  store::store_core s;
  ASSERT_EQ(apply_txn(s, {session_test_op(op_kind::enqueue, "q", "", "a")}, lsn{1}).code,
            errc::ok);
  ASSERT_EQ(apply_txn(s, {session_test_op(op_kind::enqueue, "q", "", "b")}, lsn{2}).code,
            errc::ok);
  auto rec =
      sessioned("c1", 1, 1, session_epoch_ms, {session_test_op(op_kind::dequeue, "q")});
  auto first = apply_txn(s, rec, lsn{3});
  ASSERT_EQ(first.code, errc::ok);
  ASSERT_EQ(first.outputs.size(), 2u);
  EXPECT_FALSE(first.outputs[0].found); // not a retry
  EXPECT_EQ(first.outputs[1].value, "a");
  EXPECT_FALSE(first.duplicate);
  // The answer was lost; the retry reaches the log again (another lsn).
  auto again = apply_txn(s, rec, lsn{4});
  EXPECT_EQ(again.code, errc::ok);
  ASSERT_EQ(again.outputs.size(), 2u);
  EXPECT_TRUE(again.outputs[0].found);
  EXPECT_EQ(again.outputs[1].value, "a");
  EXPECT_TRUE(again.duplicate);
  ASSERT_TRUE(again.first_at);
  EXPECT_EQ(*again.first_at, lsn{3});
  EXPECT_EQ(session_test_queue_length(s, "q"), 1u); // "b" is still there
}

TEST(session_table, a_retried_enqueue_adds_once_and_a_retried_cas_reports_success) {
  store::store_core s;
  auto enq = sessioned("c1", 1, 1, session_epoch_ms,
                       {session_test_op(op_kind::enqueue, "q", "", "x")});
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(apply_txn(s, enq, lsn{uint64_t(1 + i)}).code, errc::ok);
  EXPECT_EQ(session_test_queue_length(s, "q"), 1u);
  ASSERT_EQ(apply_txn(s, {session_test_op(op_kind::put, "d", "k", "1")}, lsn{4}).code,
            errc::ok);
  auto cas = sessioned("c1", 2, 2, session_epoch_ms,
                       {session_test_op(op_kind::expect_value, "d", "k", "1"),
                        session_test_op(op_kind::put, "d", "k", "2")});
  EXPECT_EQ(apply_txn(s, cas, lsn{5}).code, errc::ok);
  // Without the session the second run fails its condition (the first run's
  // own write): the client could not tell. With it: the first outcome.
  auto retry = apply_txn(s, cas, lsn{6});
  EXPECT_EQ(retry.code, errc::ok);
  EXPECT_TRUE(retry.duplicate);
  EXPECT_EQ(session_test_value(s, "d", "k"), "2");
  // A condition that failed the first time fails the same way on retry,
  // even if it would hold now.
  auto miss = sessioned("c1", 3, 3, session_epoch_ms,
                        {session_test_op(op_kind::expect_value, "d", "k", "9"),
                         session_test_op(op_kind::put, "d", "k", "3")});
  EXPECT_EQ(apply_txn(s, miss, lsn{7}).code, errc::condition_failed);
  ASSERT_EQ(apply_txn(s, {session_test_op(op_kind::put, "d", "k", "9")}, lsn{8}).code,
            errc::ok);
  EXPECT_EQ(apply_txn(s, miss, lsn{9}).code, errc::condition_failed);
  EXPECT_EQ(session_test_value(s, "d", "k"), "9");
}

TEST(session_table, numbers_may_arrive_out_of_order_but_settled_ones_never_run) {
  store::store_core s;
  auto enq = [](uint64_t seq, uint64_t from, std::string v) {
    return sessioned("c", seq, from, session_epoch_ms,
                     {session_test_op(op_kind::enqueue, "q", "", std::move(v))});
  };
  // 2 before 1 (two in flight): both run.
  EXPECT_FALSE(apply_txn(s, enq(2, 1, "b"), lsn{1}).duplicate);
  EXPECT_FALSE(apply_txn(s, enq(1, 1, "a"), lsn{2}).duplicate);
  EXPECT_EQ(session_test_queue_length(s, "q"), 2u);
  // The client has its answers for 1..4 and waits from 5: a late copy of 3
  // (never applied) is refused, not run.
  EXPECT_FALSE(apply_txn(s, enq(5, 5, "e"), lsn{3}).duplicate);
  auto late = apply_txn(s, enq(3, 1, "c"), lsn{4});
  EXPECT_EQ(late.code, errc::outcome_unknown);
  EXPECT_TRUE(late.duplicate);
  EXPECT_EQ(session_test_queue_length(s, "q"), 3u);
  // Another client's numbers are its own.
  auto other = sessioned("d", 3, 1, session_epoch_ms,
                         {session_test_op(op_kind::enqueue, "q", "", "z")});
  EXPECT_FALSE(apply_txn(s, other, lsn{5}).duplicate);
  EXPECT_EQ(session_test_queue_length(s, "q"), 4u);
}

TEST(session_table, the_bound_forgets_the_oldest_outcomes_and_refuses_their_retries) {
  store::store_core s;
  session_limits lim;
  lim.kept_outcomes = 4;
  for (uint64_t i = 1; i <= 6; ++i)
    apply_txn(s,
              sessioned("c", i, 1, session_epoch_ms,
                        {session_test_op(op_kind::enqueue, "q", "", "v")}),
              lsn{i}, lim);
  EXPECT_EQ(session_test_queue_length(s, "q"), 6u);
  // 1 and 2 were dropped: their retries are refused; 3..6 are answered.
  for (uint64_t i = 1; i <= 6; ++i) {
    auto r = apply_txn(s,
                       sessioned("c", i, 1, session_epoch_ms,
                                 {session_test_op(op_kind::enqueue, "q", "", "v")}),
                       lsn{10 + i}, lim);
    EXPECT_TRUE(r.duplicate);
    EXPECT_EQ(r.code, i <= 2 ? errc::outcome_unknown : errc::ok) << i;
  }
  EXPECT_EQ(session_test_queue_length(s, "q"), 6u);
}

TEST(session_table,
     idle_sessions_expire_by_the_stamps_and_a_full_table_evicts_or_refuses) {
  store::store_core s;
  session_limits lim;
  lim.max_sessions = 3;
  lim.idle_expiry = std::chrono::minutes(10);
  lim.min_idle_evict = std::chrono::minutes(1);
  auto put = [](std::string client, int64_t stamp) {
    return sessioned(client, 1, 1, stamp,
                     {session_test_op(op_kind::put, "d", client, "v")});
  };
  uint64_t at = 1;
  EXPECT_EQ(apply_txn(s, put("a", session_epoch_ms), lsn{at++}, lim).code, errc::ok);
  EXPECT_EQ(apply_txn(s, put("b", session_epoch_ms + 1000), lsn{at++}, lim).code,
            errc::ok);
  EXPECT_EQ(apply_txn(s, put("c", session_epoch_ms + 2000), lsn{at++}, lim).code,
            errc::ok);
  EXPECT_EQ(session_count(s), 3u);
  // Full, and "a" was used 30 s ago: refused, nothing written.
  EXPECT_EQ(apply_txn(s, put("x", session_epoch_ms + 30'000), lsn{at++}, lim).code,
            errc::sessions_full);
  EXPECT_FALSE(session_test_value(s, "d", "x"));
  // 61 s after "a": it makes room.
  EXPECT_EQ(apply_txn(s, put("x", session_epoch_ms + 61'000), lsn{at++}, lim).code,
            errc::ok);
  EXPECT_EQ(session_count(s), 3u);
  // "a"'s retry is now a new session: it runs again (documented: a retry
  // is recognised within a minute of the session's last use).
  EXPECT_FALSE(
      apply_txn(s, put("a", session_epoch_ms + 62'000), lsn{at++}, lim).duplicate);
  // 10 minutes later every session older than that expires.
  EXPECT_EQ(
      apply_txn(s, put("y", session_epoch_ms + 62'000 + 600'001), lsn{at++}, lim).code,
      errc::ok);
  EXPECT_EQ(session_count(s), 1u);
}

TEST(session_table, two_replicas_applying_the_same_records_agree) {
  // Random records with retries, out of order and with lowered floors,
  // applied to two stores: same outcomes, same state; against a model, every
  // number ran at most once.
  std::mt19937_64 rng{42};
  for (int round = 0; round < 50; ++round) {
    store::store_core a, b;
    session_limits lim;
    lim.kept_outcomes = 1 + rng() % 6;
    std::map<std::string, std::set<uint64_t>> ran;
    std::map<std::string, uint64_t> settled_below;
    std::map<std::string, std::map<uint64_t, uint64_t>> froms;
    uint64_t enqueued = 0;
    for (uint64_t at = 1; at <= 200; ++at) {
      std::string client = "c" + std::to_string(rng() % 3);
      uint64_t seq = 1 + rng() % 20;
      // A retry repeats its request: one "waiting from" per number.
      auto& fixed = froms[client][seq];
      if (fixed == 0)
        fixed = 1 + rng() % seq;
      uint64_t from = fixed;
      auto rec =
          sessioned(client, seq, from, session_epoch_ms + int64_t(at),
                    {session_test_op(op_kind::enqueue, "q", "", std::to_string(seq))});
      auto ra = apply_txn(a, rec, lsn{at}, lim);
      auto rb = apply_txn(b, rec, lsn{at}, lim);
      ASSERT_EQ(ra.code, rb.code);
      ASSERT_EQ(ra.duplicate, rb.duplicate);
      if (!ra.duplicate) {
        ASSERT_EQ(ra.code, errc::ok);
        ASSERT_TRUE(ran[client].insert(seq).second)
            << client << " seq " << seq << " ran twice";
        ASSERT_GE(seq, settled_below[client]) << "a settled number ran";
        ++enqueued;
        // What the store learns from a record that ran.
        settled_below[client] = std::max(settled_below[client], from);
      }
    }
    EXPECT_EQ(session_test_queue_length(a, "q"), enqueued);
    EXPECT_EQ(session_count(a), ran.size());
    EXPECT_EQ(session_test_queue_length(b, "q"), enqueued);
  }
}

TEST(session_table, garbage_session_values_are_refused_never_crash) {
  session s;
  s.last_ms = session_epoch_ms;
  s.floor = 3;
  s.kept.push_back({3, lsn{7}, errc::ok, {op_output{true, "item"}}});
  s.kept.push_back({5, lsn{9}, errc::condition_failed, {}});
  auto bytes = encode_session(s);
  auto back = decode_session(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->floor, 3u);
  ASSERT_EQ(back->kept.size(), 2u);
  EXPECT_EQ(back->kept[0].outputs[0].value, "item");
  EXPECT_EQ(back->kept[1].code, errc::condition_failed);
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(decode_session(bytes.substr(0, n))) << n;
  EXPECT_FALSE(decode_session(bytes + "x"));
  std::mt19937_64 rng{7};
  for (int i = 0; i < 2000; ++i) {
    auto f = bytes;
    f[rng() % f.size()] = static_cast<char>(rng());
    (void)decode_session(f); // must not crash or allocate wildly
  }
  // A damaged entry in the table: the retry is refused as unknown, not run.
  store::store_core st;
  auto rec = sessioned("c", 1, 1, session_epoch_ms,
                       {session_test_op(op_kind::enqueue, "q", "", "v")});
  ASSERT_EQ(apply_txn(st, rec, lsn{1}).code, errc::ok);
  auto t = st.begin();
  store::op_request w;
  w.txn = t;
  w.op = store::operation::add_or_update;
  w.collection = session_collection;
  w.key = "c";
  w.value = "garbage";
  ASSERT_TRUE(st.execute(w, store::timestamp::max()));
  ASSERT_TRUE(st.commit(t));
  EXPECT_EQ(apply_txn(st, rec, lsn{2}).code, errc::outcome_unknown);
  EXPECT_EQ(session_test_queue_length(st, "q"), 1u);
}

TEST(session_table, the_table_survives_a_checkpoint) {
  // A replica that installs a checkpoint taken after the first attempt must
  // answer the retry from the table too (it is part of the applied state).
  store::store_core s;
  ASSERT_EQ(apply_txn(s, {session_test_op(op_kind::enqueue, "q", "", "a")}, lsn{1}).code,
            errc::ok);
  auto rec =
      sessioned("c", 1, 1, session_epoch_ms, {session_test_op(op_kind::dequeue, "q")});
  ASSERT_EQ(apply_txn(s, rec, lsn{2}).outputs.at(1).value, "a");
  auto image = s.encode_checkpoint();
  store::store_core installed;
  ASSERT_TRUE(installed.load_checkpoint(image));
  EXPECT_EQ(session_count(installed), 1u);
  ASSERT_EQ(
      apply_txn(installed, {session_test_op(op_kind::enqueue, "q", "", "b")}, lsn{3})
          .code,
      errc::ok);
  auto retry = apply_txn(installed, rec, lsn{4});
  EXPECT_TRUE(retry.duplicate);
  EXPECT_EQ(retry.outputs.at(1).value, "a");
  EXPECT_EQ(session_test_queue_length(installed, "q"), 1u); // "b" stays
}

TEST(session_table, outcomes_too_large_for_one_value_are_forgotten_never_run_again) {
  store::core_limits lim;
  lim.max_value_bytes = 300;
  store::store_core s{lim};
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(apply_txn(s,
                        {session_test_op(op_kind::enqueue, "q", "",
                                         std::string(120, char('a' + i)))},
                        lsn{uint64_t(1 + i)})
                  .code,
              errc::ok);
  ASSERT_EQ(apply_txn(s,
                      {session_test_op(op_kind::enqueue, "q", "", std::string(290, 'z'))},
                      lsn{4})
                .code,
            errc::ok);
  auto deq = [](uint64_t seq) {
    return sessioned("c", seq, 1, session_epoch_ms,
                     {session_test_op(op_kind::dequeue, "q")});
  };
  // Two 120-byte items do not fit in one 300-byte session row: the older
  // outcome goes, and its retry is refused, not run.
  EXPECT_EQ(apply_txn(s, deq(1), lsn{5}).outputs.at(1).value, std::string(120, 'a'));
  EXPECT_EQ(apply_txn(s, deq(2), lsn{6}).outputs.at(1).value, std::string(120, 'b'));
  auto again1 = apply_txn(s, deq(1), lsn{7});
  EXPECT_EQ(again1.code, errc::outcome_unknown);
  auto again2 = apply_txn(s, deq(2), lsn{8});
  EXPECT_EQ(again2.outputs.at(1).value, std::string(120, 'b'));
  // An item too large to keep even alone: the retry is refused too.
  EXPECT_EQ(apply_txn(s, deq(3), lsn{9}).outputs.at(1).value, std::string(120, 'c'));
  EXPECT_EQ(apply_txn(s, deq(4), lsn{10}).outputs.at(1).value, std::string(290, 'z'));
  EXPECT_EQ(apply_txn(s, deq(4), lsn{11}).code, errc::outcome_unknown);
  EXPECT_EQ(session_test_queue_length(s, "q"), 0u);
}
