#include "actors/replication/session_table.hpp"

#include "actors/replication/store_reads.hpp"
#include "protocols/store/byte_codec.hpp"

#include <algorithm>

namespace conclave::replication {

namespace {

constexpr uint8_t session_version = 1;

/// A bound on one kept output's bytes, so a corrupt length allocates little
/// (values are bounded by the store's limits, far below).
constexpr size_t session_max_field = 64u << 20;

std::string be64(uint64_t x) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i) {
    out[static_cast<size_t>(i)] = static_cast<char>(x & 0xFF);
    x >>= 8;
  }
  return out;
}

uint64_t from_be64(std::string_view in) {
  uint64_t x = 0;
  for (size_t i = 0; i < 8; ++i)
    x = (x << 8) | static_cast<uint8_t>(in[i]);
  return x;
}

std::optional<std::string> get(store::store_core& s, store::txn_id txn,
                               const std::string& collection, const std::string& key) {
  auto v = read_key(s, txn, collection, key);
  return v ? std::move(v.value()) : std::nullopt;
}

std::error_code ensure(store::store_core& s, const std::string& collection) {
  if (s.has_collection(collection))
    return {};
  auto c = s.ensure_collection(collection, store::collection_kind::dictionary, "bytes",
                               "bytes");
  if (!c)
    return c.error();
  return {};
}

std::error_code write(store::store_core& s, store::txn_id txn,
                      const std::string& collection, const std::string& key,
                      std::optional<std::string> value) {
  store::op_request w;
  w.txn = txn;
  w.collection = collection;
  w.key = key;
  if (value) {
    w.op = store::operation::add_or_update;
    w.value = std::move(*value);
  } else {
    w.op = store::operation::try_remove;
  }
  auto res = s.execute(w, store::timestamp::max());
  if (!res)
    return res.error();
  return {};
}

/// The oldest entries of the age index, at most n.
std::vector<std::pair<int64_t, std::string>> oldest(store::store_core& s,
                                                    store::txn_id txn, uint32_t n) {
  std::vector<std::pair<int64_t, std::string>> out;
  if (!s.has_collection(session_age_collection))
    return out;
  store::op_request r;
  r.txn = txn;
  r.op = store::operation::enumerate;
  r.collection = session_age_collection;
  r.limit = n;
  auto res = s.execute(r, store::timestamp::max());
  if (!res)
    return out;
  for (auto& [k, v] : res.value().items)
    if (k.size() > 8)
      out.emplace_back(static_cast<int64_t>(from_be64(k)), k.substr(8));
  return out;
}

/// The number of sessions, kept in the age dictionary under a key no age
/// key can have (they are 8 bytes of stamp and a non-empty id): counting the
/// rows would walk every session.
const std::string count_key{"count"};

uint64_t stored_count(store::store_core& s, store::txn_id txn) {
  auto raw = get(s, txn, session_meta_collection, count_key);
  if (!raw || raw->size() != 8)
    return 0;
  return from_be64(*raw);
}

std::error_code store_count(store::store_core& s, store::txn_id txn, uint64_t n) {
  return write(s, txn, session_meta_collection, count_key, be64(n));
}

std::error_code forget(store::store_core& s, store::txn_id txn, int64_t last_ms,
                       const std::string& client) {
  if (auto e = write(s, txn, session_collection, client, std::nullopt))
    return e;
  return write(s, txn, session_age_collection, session_age_key(last_ms, client),
               std::nullopt);
}

} // namespace

txn_op make_session_op(const session_call& c) {
  txn_op op;
  op.kind = op_kind::session;
  op.collection = c.client;
  std::string key;
  store::byte_writer w{key};
  w.u64(c.seq);
  w.u64(c.waiting_from);
  op.key = std::move(key);
  return op;
}

std::optional<session_call> decode_session_op(const txn_op& op) {
  if (op.kind != op_kind::session || op.collection.empty()
      || op.collection.size() > max_client_id_bytes || op.key.size() != 16
      || (!op.value.empty() && op.value.size() != 8))
    return std::nullopt;
  session_call c;
  c.client = op.collection;
  store::byte_reader r{op.key};
  c.seq = r.u64();
  c.waiting_from = r.u64();
  if (!r.ok() || c.waiting_from == 0 || c.waiting_from > c.seq)
    return std::nullopt;
  if (!op.value.empty()) {
    store::byte_reader v{op.value};
    c.stamp_ms = static_cast<int64_t>(v.u64());
  }
  return c;
}

void stamp_session_op(txn_op& op, int64_t stamp_ms) {
  op.value.clear();
  store::byte_writer w{op.value};
  w.u64(static_cast<uint64_t>(stamp_ms));
}

std::string encode_session(const session& s) {
  std::string out;
  store::byte_writer w{out};
  w.u8(session_version);
  w.u64(static_cast<uint64_t>(s.last_ms));
  w.u64(s.floor);
  w.u32(static_cast<uint32_t>(s.kept.size()));
  for (auto& k : s.kept) {
    w.u64(k.seq);
    w.u64(k.at.value);
    w.u8(static_cast<uint8_t>(k.code));
    w.u32(static_cast<uint32_t>(k.outputs.size()));
    for (auto& o : k.outputs) {
      w.u8(o.found ? 1 : 0);
      w.bytes(o.value);
    }
  }
  return out;
}

std::optional<session> decode_session(std::string_view in) {
  store::byte_reader r{in};
  if (r.u8() != session_version)
    return std::nullopt;
  session s;
  s.last_ms = static_cast<int64_t>(r.u64());
  s.floor = r.u64();
  auto n = r.u32();
  if (!r.ok() || n > (1u << 16))
    return std::nullopt;
  for (uint32_t i = 0; i < n; ++i) {
    kept_outcome k;
    k.seq = r.u64();
    k.at = lsn{r.u64()};
    auto code = r.u8();
    auto outputs = r.u32();
    if (!r.ok() || code > static_cast<uint8_t>(errc::sessions_full)
        || outputs > (1u << 16) || k.seq < s.floor
        || (!s.kept.empty() && k.seq <= s.kept.back().seq))
      return std::nullopt;
    k.code = static_cast<errc>(code);
    for (uint32_t j = 0; j < outputs; ++j) {
      op_output o;
      auto found = r.u8();
      o.value = r.bytes();
      if (!r.ok() || found > 1 || o.value.size() > session_max_field)
        return std::nullopt;
      o.found = found == 1;
      k.outputs.push_back(std::move(o));
    }
    s.kept.push_back(std::move(k));
  }
  if (!r.ok() || !r.at_end())
    return std::nullopt;
  return s;
}

std::string session_age_key(int64_t last_ms, std::string_view client) {
  auto key = be64(static_cast<uint64_t>(last_ms));
  key.append(client.data(), client.size());
  return key;
}

uint64_t session_count(store::store_core& s) {
  auto txn = s.begin();
  auto n = stored_count(s, txn);
  (void)s.abort(txn);
  return n;
}

session_check check_session(store::store_core& s, store::txn_id txn,
                            const session_call& c, const session_limits& limits) {
  session_check out;
  auto raw = get(s, txn, session_collection, c.client);
  if (raw) {
    out.current = decode_session(*raw);
    if (!out.current) {
      // Only this code writes the table: a value it cannot read is damage.
      // Refuse to guess whether the request ran.
      out.what = session_check::verdict::forgotten;
      return out;
    }
    for (auto& k : out.current->kept)
      if (k.seq == c.seq) {
        out.what = session_check::verdict::duplicate;
        out.kept = k;
        return out;
      }
    if (c.seq < out.current->floor)
      out.what = session_check::verdict::forgotten;
    return out;
  }
  // A new session: room for it?
  if (stored_count(s, txn) < limits.max_sessions)
    return out;
  auto old = oldest(s, txn, 1);
  if (old.empty() || old.front().first > c.stamp_ms - limits.min_idle_evict.count())
    out.what = session_check::verdict::full;
  return out;
}

std::error_code record_outcome(store::store_core& s, store::txn_id txn,
                               const session_call& c, lsn at, errc code,
                               const std::vector<op_output>& outputs,
                               const std::optional<session>& current,
                               const session_limits& limits) {
  if (auto e = ensure(s, session_collection))
    return e;
  if (auto e = ensure(s, session_age_collection))
    return e;
  if (auto e = ensure(s, session_meta_collection))
    return e;
  auto count = stored_count(s, txn);
  session cur = current.value_or(session{});
  if (current) {
    if (auto e = write(s, txn, session_age_collection,
                       session_age_key(cur.last_ms, c.client), std::nullopt))
      return e;
  } else {
    if (count >= limits.max_sessions) {
      // check_session found the oldest idle long enough.
      auto old = oldest(s, txn, 1);
      if (!old.empty()) {
        if (auto e = forget(s, txn, old.front().first, old.front().second))
          return e;
        --count;
      }
    }
    ++count;
  }
  // The primaries' stamps never go back (replica_host keeps them rising),
  // but a record carries what its primary wrote: keep the latest.
  cur.last_ms = std::max(cur.last_ms, c.stamp_ms);
  // Below the client's lowest waited-for number: answered, never needed
  // again (and never run again, should a late copy arrive).
  cur.floor = std::max(cur.floor, c.waiting_from);
  cur.kept.erase(std::remove_if(cur.kept.begin(), cur.kept.end(),
                                [&](const kept_outcome& k) { return k.seq < cur.floor; }),
                 cur.kept.end());
  auto pos =
      std::lower_bound(cur.kept.begin(), cur.kept.end(), c.seq,
                       [](const kept_outcome& k, uint64_t seq) { return k.seq < seq; });
  cur.kept.insert(pos, kept_outcome{c.seq, at, code, outputs});
  // Over the bound: the oldest outcomes go, and with them every number up to
  // theirs (a late first attempt of such a number is refused, not run).
  // So too past the store's value limit (large dequeued items): an outcome
  // that does not fit even alone is forgotten at once, and its retry is
  // refused as unknown rather than run again.
  auto drop_oldest = [&] {
    cur.floor = std::max(cur.floor, cur.kept.front().seq + 1);
    cur.kept.erase(cur.kept.begin());
  };
  while (cur.kept.size() > std::max<size_t>(limits.kept_outcomes, 1))
    drop_oldest();
  auto encoded = encode_session(cur);
  while (!cur.kept.empty() && encoded.size() > s.limits().max_value_bytes) {
    drop_oldest();
    encoded = encode_session(cur);
  }
  if (auto e = write(s, txn, session_collection, c.client, std::move(encoded)))
    return e;
  if (auto e = write(s, txn, session_age_collection,
                     session_age_key(cur.last_ms, c.client), std::string{}))
    return e;
  // Expire sessions unused for limits.idle_expiry, oldest first, a few per
  // record.
  auto expired = [&](int64_t last, const std::string& client) {
    return client != c.client && last <= cur.last_ms - limits.idle_expiry.count();
  };
  // Most records expire nothing: the oldest session alone tells, and only
  // then is the batch read.
  auto first = oldest(s, txn, 1);
  if (first.empty() || !expired(first.front().first, first.front().second))
    return store_count(s, txn, count);
  auto batch = static_cast<uint32_t>(limits.expire_batch + 1);
  for (auto& [last, client] : oldest(s, txn, batch)) {
    if (!expired(last, client))
      break;
    if (auto e = forget(s, txn, last, client))
      return e;
    if (count > 0)
      --count;
  }
  return store_count(s, txn, count);
}

} // namespace conclave::replication
