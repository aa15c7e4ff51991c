#include "actors/replication/record_codec.hpp"

#include <cstring>

namespace conclave::replication {

namespace {

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_bytes(std::string& out, std::string_view b) {
  put_u32(out, static_cast<uint32_t>(b.size()));
  out.append(b);
}

struct reader {
  std::string_view in;
  bool ok = true;

  uint64_t u(int n) {
    if (in.size() < static_cast<size_t>(n)) {
      ok = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; ++i)
      v |= uint64_t{static_cast<unsigned char>(in[i])} << (8 * i);
    in.remove_prefix(n);
    return v;
  }

  std::string bytes() {
    auto n = u(4);
    if (!ok || in.size() < n) {
      ok = false;
      return {};
    }
    std::string out{in.substr(0, n)};
    in.remove_prefix(n);
    return out;
  }
};

} // namespace

store::log_record to_log_record(const entry& e) {
  store::log_record r;
  r.lsn = e.at;
  r.term = store::term{e.t.epoch};
  r.type = store::record_type::commit;
  r.txn = store::txn_id{static_cast<uint64_t>(e.kind)};
  store::log_op op;
  op.kind = store::op_kind::put;
  op.collection = 0;
  put_u64(op.key, e.t.epoch);
  put_u64(op.key, e.t.leader.value);
  put_u64(op.key, e.t.incarnation);
  op.value = e.payload;
  r.ops.push_back(std::move(op));
  return r;
}

std::optional<entry> from_log_record(const store::log_record& r) {
  if (r.type != store::record_type::commit || r.ops.size() != 1
      || r.ops[0].key.size() != 24)
    return std::nullopt;
  auto kind = r.txn.value;
  if (kind != static_cast<uint64_t>(entry_kind::transaction)
      && kind != static_cast<uint64_t>(entry_kind::new_primary))
    return std::nullopt;
  reader k{r.ops[0].key};
  entry e;
  e.at = r.lsn;
  e.t.epoch = k.u(8);
  e.t.leader = node_id{k.u(8)};
  e.t.incarnation = k.u(8);
  if (e.t.epoch != r.term.value)
    return std::nullopt;
  e.kind = static_cast<entry_kind>(kind);
  e.payload = r.ops[0].value;
  return e;
}

std::string encode_payload(const std::vector<txn_op>& ops) {
  std::string out;
  put_u32(out, static_cast<uint32_t>(ops.size()));
  for (auto& op : ops) {
    out.push_back(static_cast<char>(op.kind));
    put_bytes(out, op.collection);
    put_bytes(out, op.key);
    put_bytes(out, op.value);
  }
  return out;
}

std::optional<std::vector<txn_op>> decode_payload(std::string_view in) {
  reader r{in};
  auto n = r.u(4);
  std::vector<txn_op> ops;
  for (uint64_t i = 0; r.ok && i < n; ++i) {
    txn_op op;
    auto kind = r.u(1);
    if (kind > static_cast<uint8_t>(last_op_kind))
      return std::nullopt;
    op.kind = static_cast<op_kind>(kind);
    op.collection = r.bytes();
    op.key = r.bytes();
    op.value = r.bytes();
    ops.push_back(std::move(op));
  }
  if (!r.ok || !r.in.empty())
    return std::nullopt;
  return ops;
}

} // namespace conclave::replication
