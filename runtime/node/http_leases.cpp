#include "runtime/node/http_leases.hpp"

#include "actors/replication/lease_state.hpp"

#include <nlohmann/json.hpp>

#include <map>

namespace conclave::node {

namespace rp = conclave::replication;
using nlohmann::json;

namespace {

const std::string leases_path = "/v1/leases";

http_response leases_answer(int status, const json& j) {
  return {status, j.dump(-1, ' ', false, json::error_handler_t::replace),
          "application/json"};
}

/// One lease as JSON; nothing if its stored row does not decode.
std::optional<json> lease_json(const std::string& name, const std::string& row) {
  auto l = rp::decode_lease(row);
  if (!l)
    return std::nullopt;
  json holders = json::array();
  for (auto& h : l->holders)
    holders.push_back({{"holder", h.holder},
                       {"token", h.token},
                       {"ttl_ms", h.ttl.count()},
                       {"label", h.label}});
  return json{{"name", name}, {"limit", l->limit}, {"holders", holders}};
}

/// Waiters listed at most per answer (the rest: "waiters_more").
constexpr uint32_t max_waiters_listed = 1000;

struct waiters_answer {
  std::map<std::string, json> by_lease; ///< lease name → its waiters, in order
  bool more = false;
  std::optional<http_response> error;
};

/// The acquires waiting at the acting primary whose lease name starts with
/// `prefix` (one lease: its name and a NUL).
waiters_answer waiters_of(kv_store* store, const std::string& prefix) {
  waiters_answer out;
  rp::list_request l;
  l.collection = rp::lease_waiters_collection;
  l.prefix = prefix;
  l.limit = max_waiters_listed;
  auto r = store->list(l);
  if (r.code == rp::errc::unknown_collection)
    return out;
  if (r.code != rp::errc::ok) {
    out.error = store_error(r.code, false);
    return out;
  }
  out.more = r.more;
  for (auto& i : r.items) {
    auto k = rp::parse_waiter_key(i.key);
    auto w = rp::decode_waiter(i.value);
    if (!k || !w)
      continue; // not from a primary of this version: shown as no waiter
    auto& list = out.by_lease[k->first];
    if (list.is_null())
      list = json::array();
    list.push_back({{"place", k->second},
                    {"holder", w->holder},
                    {"label", w->label},
                    {"ttl_ms", w->ttl.count()},
                    {"wait_left_ms", w->wait_left.count()}});
  }
  return out;
}

json waiters_for(const waiters_answer& w, const std::string& name) {
  auto i = w.by_lease.find(name);
  return i == w.by_lease.end() ? json::array() : i->second;
}

} // namespace

std::optional<http_response> handle_leases(const http_request& req, kv_store* store) {
  auto& p = req.path;
  if (p != leases_path && p.rfind(leases_path + "/", 0) != 0)
    return std::nullopt;
  if (req.method != "GET" && req.method != "HEAD")
    return http_error(405, "/v1/leases answers GET only");
  if (!store)
    return http_error(503, "the node's store client is not running (starting or "
                           "stopping)");
  if (p != leases_path) {
    auto name = p.substr(leases_path.size() + 1);
    if (name.empty())
      return http_error(404, "no lease name in the path (/v1/leases/NAME)");
    auto r = store->get(rp::read_request{rp::lease_collection, name});
    if (r.code == rp::errc::unknown_collection) { // no lease was ever taken
      r.code = rp::errc::ok;
      r.found = false;
    }
    if (r.code != rp::errc::ok)
      return store_error(r.code, false);
    if (!r.found) // a lease nobody holds has no row (and nobody waits)
      return leases_answer(200, {{"name", name},
                                 {"limit", nullptr},
                                 {"holders", json::array()},
                                 {"waiters", json::array()},
                                 {"applied_lsn", r.applied.value}});
    auto j = lease_json(name, r.value);
    if (!j)
      return http_error(500, "the stored row of lease '" + name + "' does not decode");
    auto w = waiters_of(store, name + std::string(1, '\0'));
    if (w.error)
      return *w.error;
    (*j)["waiters"] = waiters_for(w, name);
    (*j)["waiters_more"] = w.more;
    (*j)["applied_lsn"] = r.applied.value;
    return leases_answer(200, *j);
  }
  auto limit = query_number(req, "limit", default_kv_page, 1, max_kv_page);
  if (!limit)
    return http_error(400, "limit: expected a number from 1 to "
                               + std::to_string(max_kv_page));
  rp::list_request l;
  l.collection = rp::lease_collection;
  l.limit = static_cast<uint32_t>(*limit);
  if (auto i = req.query.find("after"); i != req.query.end())
    l.start_after = i->second;
  auto r = store->list(l);
  if (r.code == rp::errc::unknown_collection) {
    r.code = rp::errc::ok;
    r.items.clear();
    r.more = false;
  }
  if (r.code != rp::errc::ok)
    return store_error(r.code, false);
  waiters_answer w;
  if (!r.items.empty()) {
    w = waiters_of(store, "");
    if (w.error)
      return *w.error;
  }
  json leases = json::array();
  for (auto& i : r.items) {
    auto j = lease_json(i.key, i.value);
    if (!j)
      return http_error(500, "the stored row of lease '" + i.key + "' does not decode");
    (*j)["waiters"] = waiters_for(w, i.key);
    leases.push_back(*j);
  }
  json next = nullptr;
  if (r.more && !r.items.empty())
    next = r.items.back().key;
  return leases_answer(200, {{"leases", leases},
                             {"next", next},
                             {"waiters_more", w.more},
                             {"applied_lsn", r.applied.value}});
}

} // namespace conclave::node
