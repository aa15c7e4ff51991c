#include "runtime/node/http_kv.hpp"

#include "actors/replication/lease_state.hpp"
#include "actors/replication/session_table.hpp"

#include <nlohmann/json.hpp>

namespace conclave::node {

namespace rp = conclave::replication;
using nlohmann::json;

namespace {

const std::string kv_path = "/v1/kv";

http_response kv_answer(int status, const json& j) {
  // Keys and values that are not UTF-8 (written by other clients) are shown
  // with U+FFFD instead of failing the answer; encoding=base64 gives them
  // exactly.
  return {status, j.dump(-1, ' ', false, json::error_handler_t::replace),
          "application/json"};
}

/// How keys and values travel in one request: as they are, or base64.
struct codec {
  bool base64 = false;
  std::string out(const std::string& bytes) const {
    return base64 ? to_base64(bytes) : bytes;
  }
  std::optional<std::string> in(const std::string& text) const {
    if (!base64)
      return text;
    return from_base64(text);
  }
};

/// The request's collection and codec, or the 400 that says why not.
struct common {
  std::string collection = "kv";
  codec c;
};

std::optional<http_response> parse_common(const http_request& req, common& out) {
  if (auto i = req.query.find("encoding"); i != req.query.end()) {
    if (i->second == "base64")
      out.c.base64 = true;
    else if (i->second != "utf8" && !i->second.empty())
      return http_error(400,
                        "encoding: expected utf8 or base64, got '" + i->second + "'");
  }
  if (auto i = req.query.find("collection"); i != req.query.end()) {
    if (i->second.empty())
      return http_error(400, "collection: must not be empty");
    out.collection = i->second;
  }
  if (rp::reserved_collection(out.collection))
    return http_error(400, "collection: names starting with a NUL byte are reserved");
  return std::nullopt;
}

/// The body as a JSON object, or the 400 that says why not.
std::optional<http_response> parse_object(const std::string& body, json& out) {
  out = json::parse(body, nullptr, false);
  if (out.is_discarded())
    return http_error(400, "the body is not JSON");
  if (!out.is_object())
    return http_error(400, "the body must be a JSON object");
  return std::nullopt;
}

/// A string field of `j` (decoded with `c`), or null; the 400 that says why
/// not otherwise. `required`: absent is an error (null is not).
std::optional<http_response> string_or_null(const json& j, const std::string& name,
                                            const codec& c, bool required,
                                            std::optional<std::string>& out,
                                            bool& present) {
  auto i = j.find(name);
  present = i != j.end();
  out.reset();
  if (!present)
    return required ? std::optional<http_response>{http_error(
               400, "\"" + name + "\" is missing (a string, or null)")}
                    : std::nullopt;
  if (i->is_null())
    return std::nullopt;
  if (!i->is_string())
    return http_error(400, "\"" + name + "\" must be a string or null");
  out = c.in(i->get<std::string>());
  if (!out)
    return http_error(400, "\"" + name + "\" is not base64");
  return std::nullopt;
}

http_response do_get(const common& k, const std::string& key, kv_store& s) {
  auto r = s.get(rp::read_request{k.collection, key});
  if (r.code == rp::errc::unknown_collection || (r.code == rp::errc::ok && !r.found))
    return kv_answer(404, {{"error", "no such key"}, {"key", k.c.out(key)}});
  if (r.code != rp::errc::ok)
    return store_error(r.code, false);
  return kv_answer(200, {{"key", k.c.out(key)},
                         {"value", k.c.out(r.value)},
                         {"applied_lsn", r.applied.value},
                         {"node", r.primary.value}});
}

/// `session=ID&seq=N`: the write carries the caller's client session, so a
/// retry with the same ID and N (after a lost answer) is answered with the
/// first outcome instead of being applied again (session_table.hpp). Adds the
/// session op in front of `t`'s ops, or gives the 400 that says why not.
std::optional<http_response> add_session(const http_request& req, rp::txn_request& t) {
  auto id = req.query.find("session");
  auto seq = req.query.find("seq");
  if (id == req.query.end() && seq == req.query.end())
    return std::nullopt;
  if (id == req.query.end() || id->second.empty()
      || id->second.size() > rp::max_client_id_bytes)
    return http_error(400, "session: expected 1 to "
                               + std::to_string(rp::max_client_id_bytes)
                               + " bytes, given together with seq");
  auto n = query_number(req, "seq", 0, 1, UINT64_MAX);
  if (!n || *n == 0)
    return http_error(400, "seq: expected a number from 1, given together with session");
  rp::session_call c;
  c.client = id->second;
  c.seq = *n;
  c.waiting_from = *n;
  t.ops.insert(t.ops.begin(), rp::make_session_op(c));
  return std::nullopt;
}

http_response do_write(const common& k, const http_request& hr, rp::txn_request req,
                       kv_store& s) {
  if (auto bad = add_session(hr, req))
    return *bad;
  auto r = s.transact(req);
  if (r.code != rp::errc::ok)
    return store_error(r.code, true);
  json j{{"lsn", r.at.value}, {"node", r.primary.value}};
  if (!r.outputs.empty())
    j["existed"] = r.outputs.back().found;
  return kv_answer(200, j);
}

http_response do_put(const common& k, const std::string& key, const http_request& req,
                     kv_store& s) {
  json body;
  if (auto bad = parse_object(req.body, body))
    return *bad;
  std::optional<std::string> value;
  bool present = false;
  if (auto bad = string_or_null(body, "value", k.c, true, value, present))
    return *bad;
  if (!value)
    return http_error(400, "\"value\" must be a string (DELETE removes a key)");
  rp::txn_request t;
  t.ops.push_back(rp::txn_op{k.collection, key, *value, rp::op_kind::put});
  return do_write(k, req, std::move(t), s);
}

http_response do_list(const common& k, const http_request& req, kv_store& s) {
  auto limit = query_number(req, "limit", default_kv_page, 1, max_kv_page);
  if (!limit)
    return http_error(400, "limit: expected a number from 1 to "
                               + std::to_string(max_kv_page));
  rp::list_request l;
  l.collection = k.collection;
  l.limit = static_cast<uint32_t>(*limit);
  for (auto [name, field] : {std::pair{"prefix", &l.prefix}, {"after", &l.start_after}})
    if (auto i = req.query.find(name); i != req.query.end()) {
      auto v = k.c.in(i->second);
      if (!v)
        return http_error(400, std::string{name} + ": not base64");
      *field = *v;
    }
  auto r = s.list(l);
  if (r.code == rp::errc::unknown_collection) { // nothing was ever written to it
    r.code = rp::errc::ok;
    r.items.clear();
    r.more = false;
  }
  if (r.code != rp::errc::ok)
    return store_error(r.code, false);
  json items = json::array();
  for (auto& i : r.items)
    items.push_back({{"key", k.c.out(i.key)}, {"value", k.c.out(i.value)}});
  json next = nullptr;
  if (r.more && !r.items.empty())
    next = k.c.out(r.items.back().key);
  return kv_answer(200, {{"items", items},
                         {"next", next},
                         {"applied_lsn", r.applied.value},
                         {"node", r.primary.value}});
}

http_response do_txn(const common& k, const http_request& req, kv_store& s) {
  json body;
  if (auto bad = parse_object(req.body, body))
    return *bad;
  auto key = body.find("key");
  if (key == body.end() || !key->is_string() || key->get<std::string>().empty())
    return http_error(400, "\"key\" must be a non-empty string");
  auto k_bytes = k.c.in(key->get<std::string>());
  if (!k_bytes || k_bytes->empty())
    return http_error(400, "\"key\" is not base64 or is empty");
  std::optional<std::string> expected, value;
  bool present = false;
  if (auto bad = string_or_null(body, "expected", k.c, true, expected, present))
    return *bad;
  if (auto bad = string_or_null(body, "value", k.c, true, value, present))
    return *bad;
  for (auto& [name, v] : body.items())
    if (name != "key" && name != "expected" && name != "value")
      return http_error(400, "unknown field \"" + name + "\"");
  rp::txn_request t;
  t.ops.push_back(
      expected ? rp::txn_op{k.collection, *k_bytes, *expected, rp::op_kind::expect_value}
               : rp::txn_op{k.collection, *k_bytes, {}, rp::op_kind::expect_absent});
  t.ops.push_back(value ? rp::txn_op{k.collection, *k_bytes, *value, rp::op_kind::put}
                        : rp::txn_op{k.collection, *k_bytes, {}, rp::op_kind::remove});
  auto r = s.transact(t);
  if (r.code == rp::errc::condition_failed)
    return kv_answer(409,
                     {{"error", "condition failed: the key does not hold the expected "
                                "value; nothing was written"},
                      {"key", k.c.out(*k_bytes)},
                      {"lsn", r.at.value}});
  if (r.code != rp::errc::ok)
    return store_error(r.code, true);
  return kv_answer(200, {{"lsn", r.at.value}, {"node", r.primary.value}});
}

} // namespace

http_response store_error(rp::errc code, bool write) {
  switch (code) {
  case rp::errc::bad_request:
    return http_error(400, "the store refused the request as malformed (bad_request)");
  case rp::errc::too_large:
    return http_error(413, "a key, value or the transaction exceeds the store's limits");
  case rp::errc::wrong_kind:
    return http_error(409, "the collection is a queue, not a dictionary (wrong_kind)");
  case rp::errc::unknown_collection:
    return http_error(404, "no such collection");
  case rp::errc::condition_failed:
    return http_error(409, "condition failed; nothing was written");
  case rp::errc::stale_token:
    return http_error(409, "stale_token: the lease is not held with that token");
  case rp::errc::sessions_full:
    return http_error(503, "the store's session table is full; nothing was written, "
                           "retry later");
  case rp::errc::outcome_unknown:
    return http_error(504, "outcome unknown: no majority answered in time; the write "
                           "may or may not have taken effect");
  case rp::errc::timeout:
    if (write)
      return http_error(504, "no primary answered in time; nothing was written");
    return http_error(504, "no primary answered in time");
  default:
    return http_error(write ? 504 : 503, std::string{write ? "outcome unknown: " : ""}
                                             + "the store answered "
                                             + std::string{rp::to_string(code)});
  }
}

std::optional<http_response> handle_kv(const http_request& req, kv_store* store) {
  auto& p = req.path;
  if (p != kv_path && p.rfind(kv_path + "/", 0) != 0)
    return std::nullopt;
  common k;
  if (auto bad = parse_common(req, k))
    return *bad;
  auto need_store = [&]() -> std::optional<http_response> {
    if (!store)
      return http_error(503, "the node's store client is not running (starting or "
                             "stopping)");
    return std::nullopt;
  };
  if (p == kv_path) {
    if (req.method == "GET" || req.method == "HEAD") {
      if (auto e = need_store())
        return e;
      return do_list(k, req, *store);
    }
    if (req.method == "POST") {
      if (auto e = need_store())
        return e;
      return do_txn(k, req, *store);
    }
    return http_error(405, "/v1/kv answers GET (list) and POST (compare-and-put)");
  }
  auto raw = p.substr(kv_path.size() + 1);
  if (raw.empty())
    return http_error(404, "no key in the path (/v1/kv/KEY)");
  auto key = k.c.in(raw);
  if (!key || key->empty())
    return http_error(400, "the key in the path is not base64");
  if (req.method != "GET" && req.method != "HEAD" && req.method != "PUT"
      && req.method != "DELETE")
    return http_error(405, "/v1/kv/KEY answers GET, PUT and DELETE");
  if (auto e = need_store())
    return e;
  if (req.method == "PUT")
    return do_put(k, *key, req, *store);
  if (req.method == "DELETE") {
    rp::txn_request t;
    t.ops.push_back(rp::txn_op{k.collection, *key, {}, rp::op_kind::remove});
    return do_write(k, req, std::move(t), *store);
  }
  return do_get(k, *key, *store);
}

} // namespace conclave::node
