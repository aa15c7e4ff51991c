// The pure part of batches: checks, and a batch run driven over a store core
// the way the hosts drive it.
#include "protocols/store/batch.hpp"

#include "protocols/store/store_core.hpp"

#include <gtest/gtest.h>

using namespace conclave::store;
using namespace std::chrono_literals;

namespace {

constexpr timestamp batch_deadline{4s};

op_result found(std::string v) {
  op_result r;
  r.found = true;
  r.value = std::move(v);
  return r;
}

batch_check check(check_kind k, std::string v = {}) {
  return batch_check{"d", "k", k, std::move(v)};
}

TEST(batch_checks, equals_holds_only_for_the_same_bytes) {
  EXPECT_TRUE(check_holds(check(check_kind::equals, "a"), found("a")));
  EXPECT_FALSE(check_holds(check(check_kind::equals, "a"), found("b")));
  EXPECT_FALSE(check_holds(check(check_kind::equals, ""), op_result{}));
}

TEST(batch_checks, absent_holds_only_without_a_value) {
  EXPECT_TRUE(check_holds(check(check_kind::absent), op_result{}));
  EXPECT_FALSE(check_holds(check(check_kind::absent), found("")));
}

TEST(batch_checks, at_most_compares_bytes_and_accepts_absence) {
  EXPECT_TRUE(check_holds(check(check_kind::at_most, "\x01\x02"), op_result{}));
  EXPECT_TRUE(check_holds(check(check_kind::at_most, "\x01\x02"), found("\x01\x02")));
  EXPECT_TRUE(check_holds(check(check_kind::at_most, "\x01\x02"), found("\x01\x01")));
  EXPECT_FALSE(check_holds(check(check_kind::at_most, "\x01\x02"), found("\x01\x03")));
}

op_request put(std::string k, std::string v) {
  op_request r;
  r.op = operation::add_or_update;
  r.collection = "d";
  r.key = std::move(k);
  r.value = std::move(v);
  return r;
}

/// Runs `b` on `core` to the end (no lock waits expected); returns the run.
batch_run drive(store_core& core, op_batch b) {
  batch_run run{std::move(b), core.begin()};
  while (!run.finished()) {
    auto r = core.execute(run.next(), batch_deadline);
    EXPECT_TRUE(r) << r.error().message();
    EXPECT_FALSE(r.value().waiting);
    if (!run.accept(std::move(r.value())))
      break;
  }
  return run;
}

class batch_run_test : public testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(core.ensure_collection("d", collection_kind::dictionary, "str", "str"));
    op_batch b;
    b.ops.push_back(put("k", "v1"));
    auto run = drive(core, b);
    ASSERT_TRUE(core.commit(run.txn()));
  }
  store_core core;
};

TEST_F(batch_run_test, operations_run_in_the_batch_transaction_after_passing_checks) {
  op_batch b;
  b.txn = txn_id{999}; // ignored in the operations: the run's transaction is used
  b.checks.push_back(check(check_kind::equals, "v1"));
  b.ops.push_back(put("k", "v2"));
  auto run = drive(core, b);
  EXPECT_FALSE(run.check_failed());
  EXPECT_TRUE(run.finished());
  auto t = run.txn();
  ASSERT_TRUE(core.commit(t));
  auto res = run.take();
  EXPECT_EQ(res.results.size(), 1u);
  EXPECT_TRUE(res.results[0].found); // add_or_update: the key existed
  auto reader = core.begin();
  op_request get;
  get.txn = reader;
  get.op = operation::try_get;
  get.collection = "d";
  get.key = "k";
  EXPECT_EQ(core.execute(get, batch_deadline).value().value, "v2");
}

TEST_F(batch_run_test, a_failed_check_stops_before_any_operation) {
  op_batch b;
  b.checks.push_back(check(check_kind::equals, "v1"));
  b.checks.push_back(check(check_kind::absent));
  b.ops.push_back(put("k", "v3"));
  auto run = drive(core, b);
  EXPECT_TRUE(run.check_failed());
  EXPECT_TRUE(run.finished());
  auto res = run.take();
  EXPECT_EQ(res.failed_check, 2u);
  EXPECT_TRUE(res.results.empty());
}

TEST_F(batch_run_test, a_check_holds_an_update_lock_until_the_transaction_ends) {
  op_batch b;
  b.checks.push_back(check(check_kind::equals, "v1"));
  auto run = drive(core, b);
  ASSERT_FALSE(run.check_failed());
  auto other = core.begin();
  auto w = put("k", "other");
  w.txn = other;
  auto r = core.execute(w, batch_deadline);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r.value().waiting); // the checked row cannot change under the batch
  ASSERT_TRUE(core.abort(run.txn()));
  EXPECT_EQ(core.take_woken().size(), 1u);
}

TEST_F(batch_run_test, a_failed_check_in_a_group_skips_only_that_group) {
  // Three items: "a" (its check holds), "k" (its check fails: k is v1), "c"
  // (no check). The failed item writes nothing, the others write.
  op_batch b;
  b.checks.push_back(batch_check{"d", "a", check_kind::absent, {}});
  b.checks.push_back(batch_check{"d", "k", check_kind::equals, "stale"});
  b.checks.push_back(batch_check{"d", "k", check_kind::absent, {}});
  b.ops.push_back(put("a", "A"));
  b.ops.push_back(put("k", "K"));
  b.ops.push_back(put("k2", "K2"));
  b.ops.push_back(put("c", "C"));
  b.groups = {{1, 1}, {2, 2}, {0, 1}};
  ASSERT_TRUE(groups_valid(b));
  auto run = drive(core, b);
  EXPECT_FALSE(run.check_failed());
  EXPECT_TRUE(run.finished());
  auto t = run.txn();
  ASSERT_TRUE(core.commit(t));
  auto res = run.take();
  EXPECT_EQ(res.failed_check, 0u);
  EXPECT_EQ(res.failed_groups, std::vector<uint32_t>{1});
  ASSERT_EQ(res.results.size(), 4u); // one per operation, skipped ones empty
  EXPECT_FALSE(res.results[1].found);
  auto reader = core.begin();
  auto value = [&](std::string k) -> std::string {
    op_request get;
    get.txn = reader;
    get.op = operation::try_get;
    get.collection = "d";
    get.key = std::move(k);
    auto r = core.execute(get, batch_deadline).value();
    return r.found ? r.value : "-";
  };
  EXPECT_EQ(value("a"), "A");
  EXPECT_EQ(value("k"), "v1");
  EXPECT_EQ(value("k2"), "-");
  EXPECT_EQ(value("c"), "C");
}

TEST(batch_groups, counts_must_cover_the_checks_and_operations) {
  op_batch b;
  b.checks.push_back(check(check_kind::absent));
  b.ops.push_back(put("a", "A"));
  EXPECT_TRUE(groups_valid(b)); // no groups
  b.groups = {{1, 0}};
  EXPECT_FALSE(groups_valid(b));
  b.groups = {{1, 0}, {0, 1}};
  EXPECT_TRUE(groups_valid(b));
  b.groups = {{2, 1}};
  EXPECT_FALSE(groups_valid(b));
}

} // namespace
