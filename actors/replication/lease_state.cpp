#include "actors/replication/lease_state.hpp"

#include "protocols/store/byte_codec.hpp"

#include <algorithm>
#include <charconv>

namespace conclave::replication {

namespace {

constexpr uint8_t lease_params_version = 1;
constexpr uint8_t lease_version = 1;

/// Labels and holder ids are short; a bound keeps a corrupt length from
/// allocating much.
constexpr size_t lease_max_field = 1u << 16;

/// A length-prefixed field of at most lease_max_field bytes.
std::string bounded_bytes(store::byte_reader& r, bool& ok) {
  auto s = r.bytes();
  if (s.size() > lease_max_field)
    ok = false;
  return s;
}

bool ttl_ok(std::chrono::milliseconds ttl) {
  return ttl.count() >= 1 && ttl <= max_lease_ttl;
}

} // namespace

std::string encode_params(const lease_params& p) {
  std::string out;
  store::byte_writer w{out};
  w.u8(lease_params_version);
  w.u64(static_cast<uint64_t>(p.ttl.count()));
  w.u32(p.limit);
  w.u64(static_cast<uint64_t>(p.wait.count()));
  w.bytes(p.label);
  return out;
}

std::optional<lease_params> decode_params(std::string_view in) {
  store::byte_reader r{in};
  if (r.u8() != lease_params_version)
    return std::nullopt;
  lease_params p;
  bool ok = true;
  auto ttl = r.u64();
  p.limit = r.u32();
  auto wait = r.u64();
  p.label = bounded_bytes(r, ok);
  if (!ok || !r.ok() || !r.at_end())
    return std::nullopt;
  if (ttl > static_cast<uint64_t>(max_lease_ttl.count())
      || wait > static_cast<uint64_t>(max_lease_ttl.count()))
    return std::nullopt;
  p.ttl = std::chrono::milliseconds(ttl);
  p.wait = std::chrono::milliseconds(wait);
  return p;
}

std::string encode_lease(const lease& l) {
  std::string out;
  store::byte_writer w{out};
  w.u8(lease_version);
  w.u32(l.limit);
  w.u32(static_cast<uint32_t>(l.holders.size()));
  for (auto& h : l.holders) {
    w.bytes(h.holder);
    w.u64(h.token);
    w.u64(static_cast<uint64_t>(h.ttl.count()));
    w.bytes(h.label);
  }
  return out;
}

std::optional<lease> decode_lease(std::string_view in) {
  store::byte_reader r{in};
  if (r.u8() != lease_version)
    return std::nullopt;
  lease l;
  l.limit = r.u32();
  auto n = r.u32();
  if (!r.ok() || n > l.limit || l.limit == 0 || l.limit > max_lease_limit)
    return std::nullopt;
  bool ok = true;
  for (uint64_t i = 0; i < n && r.ok() && ok; ++i) {
    lease_holder h;
    h.holder = bounded_bytes(r, ok);
    h.token = r.u64();
    h.ttl = std::chrono::milliseconds(r.u64());
    h.label = bounded_bytes(r, ok);
    if (!ttl_ok(h.ttl))
      return std::nullopt;
    l.holders.push_back(std::move(h));
  }
  if (!ok || !r.ok() || !r.at_end())
    return std::nullopt;
  return l;
}

namespace {
constexpr uint8_t waiter_version = 1;
constexpr size_t waiter_place_digits = 8;
} // namespace

std::string encode_waiter(const lease_waiter& w) {
  std::string out;
  store::byte_writer b{out};
  b.u8(waiter_version);
  b.bytes(w.holder);
  b.bytes(w.label);
  b.u64(static_cast<uint64_t>(w.ttl.count()));
  b.u64(static_cast<uint64_t>(std::max<int64_t>(w.wait_left.count(), 0)));
  return out;
}

std::optional<lease_waiter> decode_waiter(std::string_view in) {
  store::byte_reader r{in};
  if (r.u8() != waiter_version)
    return std::nullopt;
  lease_waiter w;
  bool ok = true;
  w.holder = bounded_bytes(r, ok);
  w.label = bounded_bytes(r, ok);
  auto ttl = r.u64();
  auto left = r.u64();
  if (!ok || !r.ok() || !r.at_end() || ttl > static_cast<uint64_t>(max_lease_ttl.count())
      || left > static_cast<uint64_t>(max_lease_ttl.count()))
    return std::nullopt;
  w.ttl = std::chrono::milliseconds(ttl);
  w.wait_left = std::chrono::milliseconds(left);
  return w;
}

std::string waiter_key(const std::string& name, uint32_t place) {
  auto digits = std::to_string(place);
  return name + std::string(1, '\0')
         + std::string(waiter_place_digits - std::min(digits.size(), waiter_place_digits),
                       '0')
         + digits;
}

std::optional<std::pair<std::string, uint32_t>> parse_waiter_key(std::string_view key) {
  if (key.size() < waiter_place_digits + 1)
    return std::nullopt;
  auto sep = key.size() - waiter_place_digits - 1;
  if (key[sep] != '\0')
    return std::nullopt;
  uint32_t place = 0;
  auto digits = key.substr(sep + 1);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), place);
  if (ec != std::errc{} || end != digits.data() + digits.size() || place == 0)
    return std::nullopt;
  return std::make_pair(std::string{key.substr(0, sep)}, place);
}

std::string format_token(uint64_t token) {
  return std::to_string(token);
}

std::optional<uint64_t> parse_token(std::string_view s) {
  if (s.empty() || s.size() > 20 || s.front() == '0')
    return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || v == 0)
    return std::nullopt;
  return v;
}

errc check_lease_op(const txn_op& op) {
  if (op.collection.empty() || reserved_collection(op.collection))
    return errc::bad_request;
  switch (op.kind) {
  case op_kind::lease_acquire: {
    auto p = decode_params(op.value);
    if (op.key.empty() || !p || !ttl_ok(p->ttl) || p->limit == 0
        || p->limit > max_lease_limit)
      return errc::bad_request;
    return errc::ok;
  }
  case op_kind::lease_renew:
  case op_kind::lease_release:
    return op.key.empty() || !parse_token(op.value) ? errc::bad_request : errc::ok;
  case op_kind::expect_lease:
    return parse_token(op.value) ? errc::ok : errc::bad_request;
  default:
    return errc::bad_request; // lease_expire: the primary's own
  }
}

lease_step apply_lease_op(const std::optional<lease>& current, const txn_op& op, lsn at) {
  lease_step s;
  s.after = current ? *current : lease{};
  auto& holders = s.after.holders;
  auto mine = std::find_if(holders.begin(), holders.end(),
                           [&](const lease_holder& h) { return h.holder == op.key; });
  auto with_token = [&](uint64_t token) {
    return std::find_if(holders.begin(), holders.end(),
                        [&](const lease_holder& h) { return h.token == token; });
  };
  switch (op.kind) {
  case op_kind::lease_acquire: {
    auto p = decode_params(op.value);
    if (!p || !ttl_ok(p->ttl) || p->limit == 0 || p->limit > max_lease_limit) {
      s.code = errc::bad_request;
      return s;
    }
    if (mine != holders.end()) {
      // Already granted (a retry, or a grant made while the client waited):
      // the same token; the primary restarts its expiry.
      s.out = {true, format_token(mine->token)};
      return s;
    }
    if (holders.empty())
      s.after.limit = p->limit;
    if (holders.size() >= s.after.limit || s.after.limit != p->limit) {
      s.code = errc::lease_busy;
      s.out = {false, encode_lease(s.after)};
      return s;
    }
    holders.push_back(lease_holder{op.key, at.value, p->ttl, p->label});
    s.changed = true;
    s.out = {true, format_token(at.value)};
    return s;
  }
  case op_kind::lease_renew:
  case op_kind::lease_release:
  case op_kind::lease_expire: {
    auto token = parse_token(op.value);
    if (!token || mine == holders.end() || mine->token != *token) {
      s.code = errc::stale_token;
      s.out = {false, encode_lease(s.after)};
      return s;
    }
    s.out = {true, op.value};
    if (op.kind != op_kind::lease_renew) {
      holders.erase(mine);
      s.changed = true;
    }
    return s;
  }
  case op_kind::expect_lease: {
    auto token = parse_token(op.value);
    if (!token || with_token(*token) == holders.end()) {
      s.code = errc::stale_token;
      s.out = {false, encode_lease(s.after)};
      return s;
    }
    s.out = {true, op.value};
    return s;
  }
  default:
    s.code = errc::bad_request;
    return s;
  }
}

} // namespace conclave::replication
