#include "protocols/store/log_record.hpp"

#include "protocols/store/byte_codec.hpp"
#include "protocols/store/crc32c.hpp"

namespace conclave::store {

namespace {

uint32_t get_u32(std::string_view in, size_t at) {
  uint32_t x = 0;
  for (size_t i = 0; i < 4; ++i)
    x |= uint32_t{static_cast<unsigned char>(in[at + i])} << (8 * i);
  return x;
}

void put_u32(std::string& out, size_t at, uint32_t x) {
  for (size_t i = 0; i < 4; ++i)
    out[at + i] = static_cast<char>((x >> (8 * i)) & 0xFF);
}

/// Appends the batch trailer to a frame without one: sets the flag and the
/// new size, continues the CRC over the trailer and the size field.
void add_trailer(std::string& frame, lsn first) {
  auto crc = get_u32(frame, 4);
  auto body = get_u32(frame, 0);
  std::string trailer;
  byte_writer{trailer}.u64(first.value);
  frame += trailer;
  put_u32(frame, 0, static_cast<uint32_t>(body + batch_trailer_size) | batch_flag);
  crc = crc32c(crc, trailer.data(), trailer.size());
  crc = crc32c(crc, frame.data(), 4);
  put_u32(frame, 4, crc);
}

} // namespace

uint64_t encoded_body_size(const log_record& r) {
  uint64_t trailer = r.batch_first.value != 0 ? batch_trailer_size : 0;
  if (r.type == record_type::commit) {
    uint64_t ops = 0;
    for (auto& op : r.ops)
      ops += op_size(op.key.size(), op.value.size());
    return commit_body_size(ops) + trailer;
  }
  return 1 + 4 + 4 + r.created.name.size() + 1 + 4 + r.created.key_type.size() + 4
         + r.created.value_type.size() + trailer;
}

std::string encode_record(const log_record& r) {
  // Header first (size and crc patched below), then the body in place: one
  // string, sized once (encoded_body_size), no copy of the body.
  std::string frame;
  frame.reserve(record_header_size + encoded_body_size(r) + batch_trailer_size);
  byte_writer w{frame};
  w.u32(0); // body size
  w.u32(0); // crc
  w.u64(r.lsn.value);
  w.u64(r.term.value);
  w.u8(static_cast<uint8_t>(r.type));
  if (r.type == record_type::commit) {
    w.u64(r.txn.value);
    w.u32(static_cast<uint32_t>(r.ops.size()));
    for (auto& op : r.ops) {
      w.u8(static_cast<uint8_t>(op.kind));
      w.u32(op.collection);
      w.bytes(op.key);
      w.bytes(op.value);
    }
  } else {
    w.u32(r.created.id);
    w.bytes(r.created.name);
    w.u8(static_cast<uint8_t>(r.created.kind));
    w.bytes(r.created.key_type);
    w.bytes(r.created.value_type);
  }
  put_u32(frame, 0, static_cast<uint32_t>(frame.size() - record_header_size));
  auto crc = crc32c(0, frame.data() + 8, frame.size() - 8);
  put_u32(frame, 4, crc);
  if (r.batch_first.value != 0)
    add_trailer(frame, r.batch_first);
  return frame;
}

void stamp_batch(std::string& frame, lsn first) {
  if (frame.size() < record_header_size)
    return; // not a frame
  auto raw = get_u32(frame, 0);
  if (raw & batch_flag) {
    // Already stamped (say a frame read back from a log): drop the trailer
    // and recompute the CRC of the plain frame.
    auto body = (raw & ~batch_flag) - static_cast<uint32_t>(batch_trailer_size);
    frame.resize(record_header_size + body);
    put_u32(frame, 0, body);
    put_u32(frame, 4, crc32c(0, frame.data() + 8, frame.size() - 8));
  }
  add_trailer(frame, first);
}

decoded_record decode_record(std::string_view in) {
  decoded_record out;
  if (in.size() < record_header_size) {
    out.status = decode_status::incomplete;
    return out;
  }
  byte_reader h{in.substr(0, record_header_size)};
  auto raw_size = h.u32();
  auto crc = h.u32();
  out.record.lsn = lsn{h.u64()};
  out.record.term = term{h.u64()};
  const bool stamped = (raw_size & batch_flag) != 0;
  const uint32_t body_size = raw_size & ~batch_flag;
  const uint32_t trailer = stamped ? static_cast<uint32_t>(batch_trailer_size) : 0;
  // An empty body is never valid (it holds at least the type byte): refusing
  // it here keeps zero-filled space cheap to recognise.
  if (body_size <= trailer || body_size - trailer > max_record_body) {
    out.status = decode_status::corrupt;
    return out;
  }
  if (in.size() - record_header_size < body_size) {
    out.status = decode_status::incomplete;
    return out;
  }
  auto computed = crc32c(0, in.data() + 8, record_header_size - 8 + body_size);
  if (stamped)
    computed = crc32c(computed, in.data(), 4);
  if (computed != crc) {
    out.status = decode_status::corrupt;
    return out;
  }
  if (stamped) {
    byte_reader t{in.substr(record_header_size + body_size - trailer, trailer)};
    out.record.batch_first = lsn{t.u64()};
    if (out.record.batch_first.value == 0
        || out.record.batch_first.value > out.record.lsn.value) {
      out.status = decode_status::corrupt;
      return out;
    }
  }
  byte_reader b{in.substr(record_header_size, body_size - trailer)};
  auto& r = out.record;
  r.type = static_cast<record_type>(b.u8());
  if (r.type == record_type::commit) {
    r.txn = txn_id{b.u64()};
    auto n = b.u32();
    for (uint32_t i = 0; i < n && b.ok(); ++i) {
      log_op op;
      op.kind = static_cast<op_kind>(b.u8());
      op.collection = b.u32();
      op.key = b.bytes();
      op.value = b.bytes();
      if (op.kind < op_kind::put || op.kind > op_kind::dequeue) {
        out.status = decode_status::corrupt;
        return out;
      }
      r.ops.push_back(std::move(op));
    }
  } else if (r.type == record_type::create_collection) {
    r.created.id = b.u32();
    r.created.name = b.bytes();
    r.created.kind = static_cast<collection_kind>(b.u8());
    r.created.key_type = b.bytes();
    r.created.value_type = b.bytes();
  } else {
    out.status = decode_status::corrupt;
    return out;
  }
  if (!b.ok() || !b.at_end()) {
    out.status = decode_status::corrupt;
    return out;
  }
  out.status = decode_status::ok;
  out.size = record_header_size + body_size;
  return out;
}

} // namespace conclave::store
