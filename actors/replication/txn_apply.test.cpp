// Client transactions on a bare store_core, without actors: what is refused
// before proposing, and that applying a record is all-or-nothing and gives
// the same outcome on two replicas that apply the same records.
#include "actors/replication/txn_apply.hpp"

#include "tests/support/store_reads.hpp"

#include <gtest/gtest.h>

using namespace conclave::replication;
namespace store = conclave::store;

namespace {

txn_op op(op_kind k, std::string c, std::string key = {}, std::string v = {}) {
  return txn_op{std::move(c), std::move(key), std::move(v), k};
}

std::optional<std::string> get(store::store_core& s, const std::string& c,
                               const std::string& k) {
  return conclave::test::committed_value(s, c, k);
}

} // namespace

TEST(txn_apply, requests_are_checked_against_the_store_limits) {
  store::core_limits l;
  l.max_key_bytes = 4;
  l.max_value_bytes = 8;
  l.max_name_bytes = 3;
  l.max_record_body = 1000;
  auto one = [](txn_op o, commit_mode m = commit_mode::strong) {
    return txn_request{{std::move(o)}, m};
  };
  EXPECT_EQ(check_request(one(op(op_kind::put, "d", "k", "v")), l), errc::ok);
  EXPECT_EQ(check_request(txn_request{}, l), errc::bad_request);
  EXPECT_EQ(check_request(one(op(op_kind::put, "", "k", "v")), l), errc::bad_request);
  EXPECT_EQ(check_request(one(op(op_kind::remove, "d")), l), errc::bad_request);
  EXPECT_EQ(check_request(one(op(op_kind::enqueue, "q", "", "v")), l), errc::ok);
  EXPECT_EQ(check_request(one(op(op_kind::dequeue, "q"), commit_mode::weak), l),
            errc::bad_request);
  EXPECT_EQ(
      check_request(one(op(op_kind::expect_absent, "d", "k"), commit_mode::weak), l),
      errc::bad_request);
  EXPECT_EQ(check_request(one(op(op_kind::put, "d", "k", "v"), commit_mode::weak), l),
            errc::ok);
  EXPECT_EQ(check_request(one(op(op_kind::put, "dddd", "k", "v")), l), errc::too_large);
  EXPECT_EQ(check_request(one(op(op_kind::put, "d", "kkkkk", "v")), l), errc::too_large);
  EXPECT_EQ(check_request(one(op(op_kind::put, "d", "k", "123456789")), l),
            errc::too_large);
  // Many small ops over the largest record.
  txn_request big;
  for (int i = 0; i < 100; ++i)
    big.ops.push_back(op(op_kind::put, "d", "k", "12345678"));
  EXPECT_EQ(check_request(big, l), errc::too_large);
}

TEST(txn_apply, a_failed_condition_undoes_the_ops_before_it) {
  store::store_core s;
  ASSERT_EQ(apply_txn(s, {op(op_kind::put, "d", "a", "1")}, lsn{1}).code, errc::ok);
  auto r = apply_txn(s,
                     {op(op_kind::put, "d", "a", "2"), op(op_kind::remove, "d", "a"),
                      op(op_kind::expect_value, "d", "a", "2")},
                     lsn{2});
  EXPECT_EQ(r.code, errc::condition_failed);
  ASSERT_EQ(r.outputs.size(), 3u);
  EXPECT_FALSE(r.outputs[2].found);
  EXPECT_EQ(get(s, "d", "a"), "1");
}

TEST(txn_apply, kind_errors_create_no_collection) {
  store::store_core s;
  EXPECT_EQ(apply_txn(s,
                      {op(op_kind::put, "new", "k", "v"), op(op_kind::dequeue, "nosuch")},
                      lsn{1})
                .code,
            errc::unknown_collection);
  EXPECT_EQ(
      apply_txn(s, {op(op_kind::enqueue, "x", "", "v"), op(op_kind::put, "x", "k", "v")},
                lsn{2})
          .code,
      errc::wrong_kind);
  EXPECT_TRUE(s.collections().empty());
  // Created earlier in the same transaction: known, and of its kind.
  auto r = apply_txn(s, {op(op_kind::enqueue, "q", "", "v"), op(op_kind::dequeue, "q")},
                     lsn{1});
  EXPECT_EQ(r.code, errc::ok);
  EXPECT_EQ(r.outputs.at(1).value, "v");
}

TEST(txn_apply, two_replicas_applying_the_same_records_decide_alike) {
  store::store_core a;
  store::store_core b;
  std::vector<std::vector<txn_op>> records{
      {op(op_kind::enqueue, "q", "", "x"), op(op_kind::enqueue, "q", "", "y")},
      {op(op_kind::dequeue, "q")},
      {op(op_kind::expect_absent, "d", "lock"), op(op_kind::put, "d", "lock", "c1")},
      {op(op_kind::expect_absent, "d", "lock"), op(op_kind::put, "d", "lock", "c2")},
      {op(op_kind::dequeue, "q"), op(op_kind::dequeue, "q")},
  };
  for (auto& rec : records) {
    auto ra = apply_txn(a, rec, lsn{1});
    auto rb = apply_txn(b, rec, lsn{1});
    EXPECT_EQ(ra.code, rb.code);
    ASSERT_EQ(ra.outputs.size(), rb.outputs.size());
    for (size_t i = 0; i < ra.outputs.size(); ++i) {
      EXPECT_EQ(ra.outputs[i].found, rb.outputs[i].found);
      EXPECT_EQ(ra.outputs[i].value, rb.outputs[i].value);
    }
  }
  auto last = apply_txn(a, {op(op_kind::dequeue, "q")}, lsn{1});
  EXPECT_FALSE(last.outputs.at(0).found); // x and y were taken once each
  EXPECT_EQ(get(a, "d", "lock"), "c1");
  EXPECT_EQ(get(b, "d", "lock"), "c1");
}
