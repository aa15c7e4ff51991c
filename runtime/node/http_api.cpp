#include "runtime/node/http_api.hpp"

#include <nlohmann/json.hpp>

namespace conclave::node {

using nlohmann::json;

namespace {

http_response ok(const json& j) {
  return {200, j.dump(), "application/json"};
}

std::string role_of(const node_status& s) {
  if (s.leader == 0)
    return "candidate";
  if (s.is_leader)
    return s.acting ? "leader" : "leader-not-acting";
  return "follower";
}

json cluster_json(const http_view& v) {
  auto& s = v.status;
  json members = json::array();
  members.push_back({{"id", s.id},
                     {"address", s.address},
                     {"self", true},
                     {"linked", true},
                     {"state", "alive"}});
  for (auto& p : s.peers)
    members.push_back({{"id", p.id},
                       {"address", p.address},
                       {"self", false},
                       {"linked", p.connected},
                       {"state", p.state}});
  for (auto& m : members) {
    auto id = m["id"].get<uint64_t>();
    auto h = v.http.find(id);
    m["http"] =
        h == v.http.end() ? json(nullptr) : json(v.http_scheme + "://" + h->second);
    // Only where this node expects to hear from the member: a leader hears
    // every follower's acks, a follower its leader's heartbeats.
    auto heard = v.peer_silence.find(id);
    bool expected = id != s.id && (s.is_leader || id == s.leader);
    m["last_heard_ms"] = expected && heard != v.peer_silence.end()
                             ? json(heard->second * 1000.0)
                             : json(nullptr);
  }
  json j{{"cluster", s.cluster},
         {"id", s.id},
         {"role", role_of(s)},
         {"leader", s.leader},
         {"term", {{"epoch", s.term}, {"leader", s.term_leader}}},
         {"acting", s.acting},
         {"leader_since_us", s.leader_since_us},
         {"members", members}};
  if (!s.is_leader && s.leader != 0)
    j["leader_silence_ms"] = v.leader_silence_seconds * 1000.0;
  return j;
}

json replicas_json(const http_view& v) {
  auto& s = v.status;
  if (!s.replica)
    return {{"id", s.id}, {"replica", nullptr}};
  auto& r = *s.replica;
  json lag = json::array();
  for (auto& l : v.lags)
    lag.push_back({{"peer", l.peer},
                   {"records", l.records},
                   {"bytes", l.bytes},
                   {"seconds", l.seconds}});
  return {{"id", s.id},
          {"replica",
           {{"role", r.role},
            {"serving", r.serving},
            {"commit_lsn", r.commit_lsn},
            {"applied_lsn", r.applied_lsn},
            {"durable_lsn", r.durable_lsn},
            {"last_lsn", r.last_lsn},
            {"checkpoint_lsn", r.checkpoint_lsn},
            {"healing", r.healing},
            {"lag", lag}}}};
}

} // namespace

void merge_member_views(json& cluster, const std::vector<member_view>& views) {
  auto self = cluster.value("id", uint64_t{0});
  // observer → (member → state), this node's own view first.
  std::map<uint64_t, std::map<uint64_t, std::string>> seen;
  for (auto& m : cluster["members"])
    if (!m.value("self", false))
      seen[self][m.value("id", uint64_t{0})] = m.value("state", "");
  json answered = json::array({self});
  json unanswered = json::array();
  for (auto& v : views) {
    std::optional<json> body;
    if (v.body) {
      auto j = json::parse(*v.body, nullptr, false);
      if (!j.is_discarded() && j.is_object() && j.contains("id")
          && j["id"].is_number_unsigned() && j["id"].get<uint64_t>() == v.from
          && j.contains("members") && j["members"].is_array())
        body = std::move(j);
    }
    if (!body) {
      unanswered.push_back(
          {{"id", v.from}, {"error", v.body ? "not a /v1/cluster answer" : v.error}});
      continue;
    }
    answered.push_back(v.from);
    auto& row = seen[v.from];
    for (auto& m : (*body)["members"]) {
      if (!m.is_object() || !m.contains("id") || !m["id"].is_number_unsigned()
          || !m.contains("state") || !m["state"].is_string())
        continue;
      auto id = m["id"].get<uint64_t>();
      if (id != v.from) // a member does not judge itself
        row[id] = m["state"].get<std::string>();
    }
  }
  for (auto& m : cluster["members"]) {
    auto id = m.value("id", uint64_t{0});
    json seen_by = json::object();
    json suspected_by = json::array();
    for (auto& [observer, states] : seen) {
      auto i = states.find(id);
      if (i == states.end())
        continue;
      seen_by[std::to_string(observer)] = i->second;
      if (i->second == "suspected" || i->second == "down")
        suspected_by.push_back(observer);
    }
    m["seen_by"] = std::move(seen_by);
    m["suspected_by"] = std::move(suspected_by);
  }
  cluster["views"] = {{"answered", answered}, {"unanswered", unanswered}};
}

http_response http_error(int status, const std::string& message) {
  return {status, json{{"error", message}}.dump(), "application/json"};
}

std::string unready_reason(const http_view& v) {
  auto& s = v.status;
  if (!s.running)
    return "the node is shutting down";
  size_t members = s.peers.size() + 1, linked = 1;
  for (auto& p : s.peers)
    if (p.connected)
      ++linked;
  if (linked < members / 2 + 1)
    return "only " + std::to_string(linked) + " of " + std::to_string(members)
           + " members linked (a majority needs " + std::to_string(members / 2 + 1) + ")";
  if (s.leader == 0)
    return "no leader known";
  if (s.is_leader && !s.acting)
    return "this node leads but holds no majority lease yet";
  if (!s.is_leader) {
    bool leader_linked = false;
    for (auto& p : s.peers)
      if (p.id == s.leader && p.connected)
        leader_linked = true;
    if (!leader_linked)
      return "the leader (node " + std::to_string(s.leader) + ") is not linked";
  }
  if (s.replica) {
    auto& r = *s.replica;
    if (r.healing)
      return "the replica is rebuilding its log from the other members";
    if (r.role == "syncing")
      return "the replica is syncing with the primary";
    if (r.commit_lsn > r.applied_lsn
        && r.commit_lsn - r.applied_lsn > v.bounds.max_apply_lag)
      return "the replica applied lsn " + std::to_string(r.applied_lsn) + ", "
             + std::to_string(r.commit_lsn - r.applied_lsn)
             + " records behind its commit lsn (bound "
             + std::to_string(v.bounds.max_apply_lag) + ")";
  }
  return {};
}

http_response handle_http(const http_request& req, const http_view& v) {
  auto route = [&](const std::string& path) { return req.path == path; };
  bool known = route("/livez") || route("/readyz") || route("/v1/cluster")
               || route("/v1/replicas");
  if (!known)
    return http_error(404, "no route " + req.path);
  if (req.method != "GET" && req.method != "HEAD")
    return http_error(405, req.path + " answers GET only");
  if (route("/livez"))
    return ok({{"live", true}, {"id", v.status.id}});
  if (route("/readyz")) {
    auto why = unready_reason(v);
    if (!why.empty())
      return {503, json{{"ready", false}, {"reason", why}}.dump(), "application/json"};
    return ok({{"ready", true}});
  }
  if (route("/v1/cluster")) {
    auto j = cluster_json(v);
    auto scope = req.query.find("scope");
    if (scope != req.query.end() && scope->second != "local" && scope->second != "all")
      return http_error(400, "scope: expected local or all");
    bool local = scope != req.query.end() && scope->second == "local";
    if (!local)
      merge_member_views(j, v.fetch_views ? v.fetch_views() : std::vector<member_view>{});
    return ok(j);
  }
  return ok(replicas_json(v));
}

} // namespace conclave::node
