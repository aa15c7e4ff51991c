#include "actors/replication/lease_state.hpp"

#include <algorithm>
#include <charconv>

namespace conclave::replication {

namespace {

constexpr uint8_t lease_params_version = 1;
constexpr uint8_t lease_version = 1;

void lease_put_u(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void lease_put_bytes(std::string& out, std::string_view b) {
  lease_put_u(out, b.size(), 4);
  out.append(b);
}

struct lease_reader {
  std::string_view in;
  bool ok = true;

  uint64_t u(int n) {
    if (!ok || in.size() < static_cast<size_t>(n)) {
      ok = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; ++i)
      v |= uint64_t{static_cast<unsigned char>(in[i])} << (8 * i);
    in.remove_prefix(n);
    return v;
  }

  std::string bytes(size_t max) {
    auto n = u(4);
    if (!ok || n > max || in.size() < n) {
      ok = false;
      return {};
    }
    std::string out{in.substr(0, n)};
    in.remove_prefix(n);
    return out;
  }
};

/// Labels and holder ids are short; a bound keeps a corrupt length from
/// allocating much.
constexpr size_t lease_max_field = 1u << 16;

bool ttl_ok(std::chrono::milliseconds ttl) {
  return ttl.count() >= 1 && ttl <= max_lease_ttl;
}

} // namespace

std::string encode_params(const lease_params& p) {
  std::string out;
  out.push_back(static_cast<char>(lease_params_version));
  lease_put_u(out, static_cast<uint64_t>(p.ttl.count()), 8);
  lease_put_u(out, p.limit, 4);
  lease_put_u(out, static_cast<uint64_t>(p.wait.count()), 8);
  lease_put_bytes(out, p.label);
  return out;
}

std::optional<lease_params> decode_params(std::string_view in) {
  lease_reader r{in};
  if (r.u(1) != lease_params_version)
    return std::nullopt;
  lease_params p;
  auto ttl = r.u(8);
  p.limit = static_cast<uint32_t>(r.u(4));
  auto wait = r.u(8);
  p.label = r.bytes(lease_max_field);
  if (!r.ok || !r.in.empty())
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
  out.push_back(static_cast<char>(lease_version));
  lease_put_u(out, l.limit, 4);
  lease_put_u(out, l.holders.size(), 4);
  for (auto& h : l.holders) {
    lease_put_bytes(out, h.holder);
    lease_put_u(out, h.token, 8);
    lease_put_u(out, static_cast<uint64_t>(h.ttl.count()), 8);
    lease_put_bytes(out, h.label);
  }
  return out;
}

std::optional<lease> decode_lease(std::string_view in) {
  lease_reader r{in};
  if (r.u(1) != lease_version)
    return std::nullopt;
  lease l;
  l.limit = static_cast<uint32_t>(r.u(4));
  auto n = r.u(4);
  if (!r.ok || n > l.limit || l.limit == 0 || l.limit > max_lease_limit)
    return std::nullopt;
  for (uint64_t i = 0; i < n && r.ok; ++i) {
    lease_holder h;
    h.holder = r.bytes(lease_max_field);
    h.token = r.u(8);
    h.ttl = std::chrono::milliseconds(r.u(8));
    h.label = r.bytes(lease_max_field);
    if (!ttl_ok(h.ttl))
      return std::nullopt;
    l.holders.push_back(std::move(h));
  }
  if (!r.ok || !r.in.empty())
    return std::nullopt;
  return l;
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
