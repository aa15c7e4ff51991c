#include "protocols/store/log_record.hpp"

#include "protocols/store/byte_codec.hpp"
#include "protocols/store/crc32c.hpp"

namespace conclave::store {

uint64_t encoded_body_size(const log_record& r) {
  if (r.type == record_type::commit) {
    uint64_t ops = 0;
    for (auto& op : r.ops)
      ops += op_size(op.key.size(), op.value.size());
    return commit_body_size(ops);
  }
  return 1 + 4 + 4 + r.created.name.size() + 1 + 4 + r.created.key_type.size() + 4
         + r.created.value_type.size();
}

std::string encode_record(const log_record& r) {
  std::string body;
  byte_writer w{body};
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
  std::string frame;
  frame.reserve(record_header_size + body.size());
  byte_writer f{frame};
  f.u32(static_cast<uint32_t>(body.size()));
  f.u32(0); // crc, patched below
  f.u64(r.lsn.value);
  f.u64(r.term.value);
  frame += body;
  auto crc = crc32c(0, frame.data() + 8, frame.size() - 8);
  for (int i = 0; i < 4; ++i)
    frame[4 + i] = static_cast<char>((crc >> (8 * i)) & 0xFF);
  return frame;
}

decoded_record decode_record(std::string_view in) {
  decoded_record out;
  if (in.size() < record_header_size) {
    out.status = decode_status::incomplete;
    return out;
  }
  byte_reader h{in.substr(0, record_header_size)};
  auto body_size = h.u32();
  auto crc = h.u32();
  out.record.lsn = lsn{h.u64()};
  out.record.term = term{h.u64()};
  // An empty body is never valid (it holds at least the type byte): refusing
  // it here keeps zero-filled space cheap to recognise.
  if (body_size == 0 || body_size > max_record_body) {
    out.status = decode_status::corrupt;
    return out;
  }
  if (in.size() - record_header_size < body_size) {
    out.status = decode_status::incomplete;
    return out;
  }
  if (crc32c(0, in.data() + 8, record_header_size - 8 + body_size) != crc) {
    out.status = decode_status::corrupt;
    return out;
  }
  byte_reader b{in.substr(record_header_size, body_size)};
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
