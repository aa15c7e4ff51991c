// The replication messages cross the wire whole: each one round-trips through
// CAF's binary serializer with every field, records included.
#include "actors/replication/type_ids.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <gtest/gtest.h>

using namespace conclave::replication;

namespace {

template <class T>
T round_trip(T x) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  EXPECT_FALSE(sink(x));
  T back;
  caf::binary_deserializer source{nullptr, buf};
  EXPECT_FALSE(source(back));
  EXPECT_EQ(source.remaining(), 0u);
  return back;
}

const term t1{4, node_id{3}, 2};
const term t0{1, node_id{2}, 7};

} // namespace

TEST(replication_messages, append_and_fetch_reply_keep_their_records) {
  append a{node_id{3}, t1, lsn{5}, t0, {}, lsn{4}};
  a.entries.push_back(entry{lsn{6}, t1, entry_kind::new_primary, ""});
  a.entries.push_back(entry{lsn{7}, t1, entry_kind::transaction, std::string("x\0y", 3)});
  auto b = round_trip(a);
  EXPECT_EQ(b.from, a.from);
  EXPECT_EQ(b.t, t1);
  EXPECT_EQ(b.prev, lsn{5});
  EXPECT_EQ(b.prev_term, t0);
  EXPECT_EQ(b.commit, lsn{4});
  ASSERT_EQ(b.entries.size(), 2u);
  EXPECT_EQ(b.entries[0].kind, entry_kind::new_primary);
  EXPECT_EQ(b.entries[1].at, lsn{7});
  EXPECT_EQ(b.entries[1].payload, std::string("x\0y", 3));

  fetch_reply f{node_id{1}, t1, lsn{2}, t0, a.entries, true};
  auto g = round_trip(f);
  EXPECT_EQ(g.prev, lsn{2});
  EXPECT_TRUE(g.snapshot);
  EXPECT_EQ(g.entries.size(), 2u);
}

TEST(replication_messages, requests_and_replies_keep_every_field) {
  auto s = round_trip(sync_reply{node_id{2}, t1, lsn{9}, t0, lsn{3}, lsn{8}});
  EXPECT_EQ(s.last, lsn{9});
  EXPECT_EQ(s.last_term, t0);
  EXPECT_EQ(s.base, lsn{3});
  EXPECT_EQ(s.commit, lsn{8});
  auto r = round_trip(append_reply{node_id{2}, t1, true, lsn{9}, lsn{8}, lsn{1}});
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.matched, lsn{9});
  EXPECT_EQ(r.durable, lsn{8});
  EXPECT_EQ(r.hint, lsn{1});
  auto q = round_trip(fetch_request{node_id{3}, t1, lsn{4}, lsn{12}});
  EXPECT_EQ(q.first, lsn{4});
  EXPECT_EQ(q.upto, lsn{12});
  EXPECT_EQ(round_trip(sync_request{node_id{3}, t1}).t, t1);
  EXPECT_EQ(round_trip(stale_term{node_id{1}, t1}).from, node_id{1});
  txn_request tr{{txn_op{"d", "k", "v", op_kind::expect_value}}, commit_mode::weak};
  auto tb = round_trip(tr);
  EXPECT_EQ(tb.mode, commit_mode::weak);
  ASSERT_EQ(tb.ops.size(), 1u);
  EXPECT_EQ(tb.ops[0].kind, op_kind::expect_value);
  auto res = round_trip(
      txn_result{errc::condition_failed, lsn{4}, node_id{3}, {op_output{true, "old"}}});
  EXPECT_EQ(res.code, errc::condition_failed);
  EXPECT_EQ(res.primary, node_id{3});
  ASSERT_EQ(res.outputs.size(), 1u);
  EXPECT_EQ(res.outputs[0].value, "old");
  auto lq = round_trip(list_request{"d", "user/", "user/b", 7});
  EXPECT_EQ(lq.prefix, "user/");
  EXPECT_EQ(lq.start_after, "user/b");
  EXPECT_EQ(lq.limit, 7u);
  list_result lr;
  lr.items = {{"user/c", "3"}};
  lr.more = true;
  lr.applied = lsn{9};
  auto lb = round_trip(lr);
  ASSERT_EQ(lb.items.size(), 1u);
  EXPECT_EQ(lb.items[0].key, "user/c");
  EXPECT_TRUE(lb.more);
  EXPECT_EQ(lb.applied, lsn{9});
}

TEST(replication_messages, type_ids_start_at_the_replication_offset) {
  EXPECT_EQ(caf::type_id<append>::value, conclave::type_id_offset::replication);
  EXPECT_EQ(std::string{caf::type_name<append>::value}, "conclave::replication::append");
}
