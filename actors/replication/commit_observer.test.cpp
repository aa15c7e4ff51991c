// What replica hosts report to a commit observer: the lease changes decoded
// from a record's ops and outcome (pure), and, on three hosts under CAF's test
// coordinator, every applied record's watched writes (with the value before)
// and lease grants and releases, alike on every replica.
#include "actors/replication/commit_observer.hpp"
#include "actors/replication/lease_state.hpp"
#include "actors/replication/replica_host.hpp"
#include "tests/support/replica_set_fixture.hpp"

using namespace conclave::replication;
using namespace std::chrono_literals;

namespace {

apply_outcome ok_with(std::vector<op_output> outs) {
  apply_outcome o;
  o.outputs = std::move(outs);
  return o;
}

} // namespace

TEST(lease_changes, an_acquire_with_the_records_lsn_as_token_is_a_grant) {
  std::vector<txn_op> ops{{"m", "a", "params", op_kind::lease_acquire}};
  auto c = lease_changes(ops, ok_with({{true, "42"}}), lsn{42});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].name, "m");
  EXPECT_EQ(c[0].holder, "a");
  EXPECT_EQ(c[0].token, 42u);
  EXPECT_EQ(c[0].kind, lease_change_kind::granted);
}

TEST(lease_changes, an_acquire_returning_an_older_token_is_a_renewal) {
  std::vector<txn_op> ops{{"m", "a", "params", op_kind::lease_acquire}};
  EXPECT_TRUE(lease_changes(ops, ok_with({{true, "17"}}), lsn{42}).empty());
}

TEST(lease_changes, releases_and_expiries_carry_the_token_they_freed) {
  std::vector<txn_op> ops{{"m", "a", "17", op_kind::lease_release},
                          {"n", "b", "9", op_kind::lease_expire},
                          {"d", "k", "v", op_kind::put},
                          {"m", "", "17", op_kind::expect_lease}};
  auto c =
      lease_changes(ops, ok_with({{true, "17"}, {true, "9"}, {}, {true, ""}}), lsn{50});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].kind, lease_change_kind::released);
  EXPECT_EQ(c[0].token, 17u);
  EXPECT_EQ(c[1].kind, lease_change_kind::expired);
  EXPECT_EQ(c[1].name, "n");
  EXPECT_EQ(c[1].holder, "b");
  EXPECT_EQ(c[1].token, 9u);
}

TEST(lease_changes, refused_and_duplicate_records_report_nothing) {
  std::vector<txn_op> ops{{"m", "a", "17", op_kind::lease_release}};
  auto refused = ok_with({{false, ""}});
  refused.code = errc::stale_token;
  EXPECT_TRUE(lease_changes(ops, refused, lsn{50}).empty());
  auto dup = ok_with({{true, "17"}});
  dup.duplicate = true;
  EXPECT_TRUE(lease_changes(ops, dup, lsn{50}).empty());
}

namespace {

class commit_observer_test : public conclave::replication::testing::replica_set_fixture {
protected:
  void SetUp() override {
    for (size_t i = 0; i < 3; ++i) {
      auto o = std::make_shared<commit_observer>();
      o->collections = {"d"};
      o->notify = [this, i](committed_changes&& c) { seen[i].push_back(std::move(c)); };
      observers.push_back(o);
    }
    replica_set_fixture::SetUp();
  }

  txn_result acquire(size_t i, const std::string& name, const std::string& holder) {
    lease_params p;
    p.ttl = 5000ms;
    txn_request req;
    req.ops.push_back(txn_op{name, holder, encode_params(p), op_kind::lease_acquire});
    return txn_wait(i, req);
  }

  std::vector<committed_changes> seen[3];
};

} // namespace

TEST_F(commit_observer_test, every_replica_reports_watched_writes_and_lease_changes) {
  make_primary(0, 1);
  auto p1 = put(0, "k", "one");
  ASSERT_TRUE(advance_until([&] { return p1->done; }, 200ms));
  auto p2 = put(0, "k", "two");
  ASSERT_TRUE(advance_until([&] { return p2->done; }, 200ms));
  // A write to a collection nobody watches is not reported.
  txn_request other;
  other.ops.push_back(txn_op{"e", "x", "y", op_kind::put});
  ASSERT_EQ(txn_wait(0, other).code, errc::ok);
  auto a = acquire(0, "m", "h");
  ASSERT_EQ(a.code, errc::ok);
  // The holder's acquire again: a renewal, not a grant.
  auto again = acquire(0, "m", "h");
  ASSERT_EQ(again.code, errc::ok);
  // Refused: the token is wrong.
  txn_request stale;
  stale.ops.push_back(txn_op{"m", "h", "1", op_kind::lease_release});
  EXPECT_EQ(txn_wait(0, stale).code, errc::stale_token);
  txn_request release;
  release.ops.push_back(txn_op{"m", "h", a.outputs.at(0).value, op_kind::lease_release});
  ASSERT_EQ(txn_wait(0, release).code, errc::ok);
  // The followers learn the commit point with the next messages.
  ASSERT_TRUE(
      advance_until([&] { return seen[1].size() == 4 && seen[2].size() == 4; }, 500ms));
  for (size_t i = 0; i < 3; ++i) {
    auto& s = seen[i];
    ASSERT_EQ(s.size(), 4u) << i;
    ASSERT_EQ(s[0].writes.size(), 1u);
    EXPECT_EQ(s[0].writes[0].key, "k");
    EXPECT_FALSE(s[0].writes[0].before);
    EXPECT_EQ(s[0].writes[0].after, std::optional<std::string>{"one"});
    ASSERT_EQ(s[1].writes.size(), 1u);
    EXPECT_EQ(s[1].writes[0].before, std::optional<std::string>{"one"});
    EXPECT_EQ(s[1].writes[0].after, std::optional<std::string>{"two"});
    ASSERT_EQ(s[2].leases.size(), 1u);
    EXPECT_EQ(s[2].leases[0].kind, lease_change_kind::granted);
    EXPECT_EQ(s[2].leases[0].holder, "h");
    EXPECT_EQ(s[2].leases[0].token, a.at.value);
    EXPECT_EQ(s[2].at, a.at);
    ASSERT_EQ(s[3].leases.size(), 1u);
    EXPECT_EQ(s[3].leases[0].kind, lease_change_kind::released);
    EXPECT_EQ(std::to_string(s[3].leases[0].token), a.outputs.at(0).value);
  }
}
