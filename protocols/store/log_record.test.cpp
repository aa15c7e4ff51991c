#include "protocols/store/log_record.hpp"

#include "protocols/store/crc32c.hpp"

#include <gtest/gtest.h>

using namespace conclave::store;

namespace {

log_record sample() {
  log_record r;
  r.lsn = lsn{42};
  r.term = term{3};
  r.txn = txn_id{7};
  r.ops.push_back({op_kind::put, 1, "key", std::string(300, 'v')});
  r.ops.push_back({op_kind::remove, 1, "gone", ""});
  r.ops.push_back({op_kind::enqueue, 2, "", "item"});
  return r;
}

} // namespace

TEST(crc32c, the_instruction_and_the_tables_agree_at_every_length_offset_and_seed) {
  // Lengths 0..300 (every tail of the 8-byte loop), every start offset of
  // an 8-byte word, chained from nonzero seeds as the log's frames are.
  std::string buf(320, '\0');
  uint32_t x = 12345;
  for (auto& ch : buf) {
    x = x * 1103515245u + 12345u;
    ch = static_cast<char>(x >> 16);
  }
  for (size_t off = 0; off < 8; ++off)
    for (size_t len = 0; len + off <= 308; ++len)
      for (uint32_t seed : {0u, 1u, 0xFFFFFFFFu, 0xE3069283u})
        ASSERT_EQ(crc32c(seed, buf.data() + off, len),
                  crc32c_portable(seed, buf.data() + off, len))
            << "offset " << off << " length " << len << " seed " << seed;
  EXPECT_EQ(crc32c_portable(0, "123456789", 9), 0xE3069283u);
}

TEST(crc32c, matches_the_published_check_value) {
  // CRC-32C of "123456789" is 0xE3069283 (RFC 3720, appendix B.4).
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
}

TEST(log_record, round_trips_both_record_types) {
  auto frame = encode_record(sample());
  auto d = decode_record(frame);
  ASSERT_EQ(d.status, decode_status::ok);
  EXPECT_EQ(d.size, frame.size());
  EXPECT_EQ(d.record.lsn, lsn{42});
  EXPECT_EQ(d.record.term, term{3});
  EXPECT_EQ(d.record.txn, txn_id{7});
  ASSERT_EQ(d.record.ops.size(), 3u);
  EXPECT_EQ(d.record.ops[0].value, std::string(300, 'v'));
  EXPECT_EQ(d.record.ops[1].kind, op_kind::remove);
  EXPECT_EQ(d.record.ops[2].collection, 2u);

  log_record c;
  c.lsn = lsn{1};
  c.type = record_type::create_collection;
  c.created = {5, "orders", collection_kind::queue, "", "std::string"};
  auto cd = decode_record(encode_record(c));
  ASSERT_EQ(cd.status, decode_status::ok);
  EXPECT_EQ(cd.record.created.name, "orders");
  EXPECT_EQ(cd.record.created.kind, collection_kind::queue);
  EXPECT_EQ(cd.record.created.value_type, "std::string");
}

TEST(log_record, the_size_computed_without_encoding_is_the_encoded_size) {
  log_record c;
  c.lsn = lsn{7};
  c.txn = txn_id{3};
  c.ops.push_back({op_kind::put, 1, "key", std::string(300, 'v')});
  c.ops.push_back({op_kind::dequeue, 2, std::string(8, '\0'), {}});
  log_record k;
  k.type = record_type::create_collection;
  k.created = {4, "name", collection_kind::queue, "kt", "value type"};
  for (auto& r : {c, k})
    EXPECT_EQ(encoded_body_size(r), encode_record(r).size() - record_header_size);
}

TEST(log_record, every_cut_is_incomplete_never_a_record) {
  auto frame = encode_record(sample());
  for (size_t n = 0; n < frame.size(); ++n) {
    auto d = decode_record(std::string_view{frame}.substr(0, n));
    EXPECT_NE(d.status, decode_status::ok) << "cut at " << n;
  }
}

TEST(log_record, every_bit_flip_is_detected) {
  auto frame = encode_record(sample());
  for (size_t bit = 0; bit < frame.size() * 8; ++bit) {
    auto bad = frame;
    bad[bit / 8] = static_cast<char>(bad[bit / 8] ^ (1 << (bit % 8)));
    auto d = decode_record(bad);
    // A flip in the size field may make the frame look longer (incomplete).
    EXPECT_NE(d.status, decode_status::ok) << "bit " << bit;
  }
}

TEST(log_record, a_stamped_frame_carries_its_batch_and_is_what_encoding_gives) {
  auto plain = encode_record(sample());
  EXPECT_EQ(decode_record(plain).record.batch_first, lsn{}); // unknown
  auto stamped = plain;
  stamp_batch(stamped, lsn{40});
  EXPECT_EQ(stamped.size(), plain.size() + batch_trailer_size);
  auto d = decode_record(stamped);
  ASSERT_EQ(d.status, decode_status::ok);
  EXPECT_EQ(d.size, stamped.size());
  EXPECT_EQ(d.record.batch_first, lsn{40});
  EXPECT_EQ(d.record.ops.size(), 3u);
  auto r = sample();
  r.batch_first = lsn{40};
  EXPECT_EQ(encode_record(r), stamped);
  EXPECT_EQ(encoded_body_size(r), stamped.size() - record_header_size);
  // Stamping again replaces the trailer.
  stamp_batch(stamped, lsn{42});
  r.batch_first = lsn{42};
  EXPECT_EQ(stamped, encode_record(r));
  // A batch that starts after the record, or at 0, is not a valid frame.
  for (uint64_t bad : {uint64_t{43}, uint64_t{0}}) {
    auto f = plain;
    stamp_batch(f, lsn{bad});
    EXPECT_EQ(decode_record(f).status, decode_status::corrupt) << bad;
  }
}

TEST(log_record, every_bit_flip_of_a_stamped_frame_is_detected) {
  auto frame = encode_record(sample());
  stamp_batch(frame, lsn{41});
  for (size_t bit = 0; bit < frame.size() * 8; ++bit) {
    auto bad = frame;
    bad[bit / 8] = static_cast<char>(bad[bit / 8] ^ (1 << (bit % 8)));
    // The flag bit included: the CRC of a stamped frame covers the size field.
    EXPECT_NE(decode_record(bad).status, decode_status::ok) << "bit " << bit;
  }
  for (size_t n = 0; n < frame.size(); ++n)
    EXPECT_NE(decode_record(std::string_view{frame}.substr(0, n)).status,
              decode_status::ok)
        << "cut at " << n;
}
