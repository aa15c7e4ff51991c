// The replica host's record mapping: a replication entry survives the store's
// frame encoding whole (full term, kind, payload), foreign records are
// refused, and transaction payloads round-trip and reject truncation.
#include "actors/replication/record_codec.hpp"

#include <gtest/gtest.h>

using namespace conclave::replication;

TEST(record_codec, entry_survives_the_store_frame_with_its_full_term) {
  entry e{lsn{7}, term{3, node_id{2}, 5}, entry_kind::new_primary, "p\0q"};
  auto frame = conclave::store::encode_record(to_log_record(e));
  auto d = conclave::store::decode_record(frame);
  ASSERT_EQ(d.status, conclave::store::decode_status::ok);
  auto back = from_log_record(d.record);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->at, e.at);
  EXPECT_EQ(back->t, e.t);
  EXPECT_EQ(back->kind, e.kind);
  EXPECT_EQ(back->payload, e.payload);
}

TEST(record_codec, a_record_not_written_by_the_host_is_refused) {
  conclave::store::log_record r;
  r.lsn = lsn{1};
  EXPECT_FALSE(from_log_record(r)); // no ops
  auto ok =
      to_log_record(entry{lsn{1}, term{4, node_id{1}, 0}, entry_kind::transaction, ""});
  ok.txn = conclave::store::txn_id{9}; // unknown kind
  EXPECT_FALSE(from_log_record(ok));
  auto skew =
      to_log_record(entry{lsn{1}, term{4, node_id{1}, 0}, entry_kind::transaction, ""});
  skew.term = conclave::store::term{5}; // frame term disagrees with the full term
  EXPECT_FALSE(from_log_record(skew));
}

TEST(record_codec, payload_round_trips_and_rejects_truncation) {
  std::vector<txn_op> ops{
      {"d", "k1", "v1", op_kind::put},          {"e", "k2", "", op_kind::remove},
      {"q", "", "item", op_kind::enqueue},      {"q", "", "", op_kind::dequeue},
      {"d", "k1", "v1", op_kind::expect_value}, {"d", "k3", "", op_kind::expect_absent}};
  auto p = encode_payload(ops);
  auto back = decode_payload(p);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), ops.size());
  EXPECT_EQ((*back)[0].collection, "d");
  EXPECT_EQ((*back)[0].value, "v1");
  for (size_t i = 0; i < ops.size(); ++i)
    EXPECT_EQ((*back)[i].kind, ops[i].kind) << i;
  for (size_t n = 0; n < p.size(); ++n)
    EXPECT_FALSE(decode_payload(p.substr(0, n))) << n;
  EXPECT_FALSE(decode_payload(p + "x"));
}

TEST(record_codec, payload_with_an_unknown_op_kind_does_not_decode) {
  auto p = encode_payload({txn_op{"d", "k", "v", op_kind::put}});
  p[4] = static_cast<char>(static_cast<uint8_t>(last_op_kind) + 1); // the op kind byte
  EXPECT_FALSE(decode_payload(p));
}

TEST(record_codec, put_and_remove_keep_the_bytes_of_the_earlier_remove_flag) {
  // Records written when the op byte was a remove flag (0 put, 1 remove)
  // still decode to the same ops.
  auto p = encode_payload(
      {txn_op{"d", "k", "v", op_kind::put}, txn_op{"d", "k", "", op_kind::remove}});
  EXPECT_EQ(p[4], 0);
  auto second = 4 + 1 + 4 + 1 + 4 + 1 + 4 + 1;
  EXPECT_EQ(p[second], 1);
}
