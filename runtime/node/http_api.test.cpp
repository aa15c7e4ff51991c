#include "runtime/node/http_api.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace conclave::node;
using nlohmann::json;

namespace {

/// Node 1 of three, following leader 2, both peers linked, a caught-up replica.
http_view follower_view() {
  http_view v;
  auto& s = v.status;
  s.id = 1;
  s.cluster = "c";
  s.address = "127.0.0.1:7001";
  s.leader = 2;
  s.term = 5;
  s.term_leader = 2;
  s.peers = {{2, "127.0.0.1:7002", true, "alive"}, {3, "127.0.0.1:7003", true, "alive"}};
  replica_summary r;
  r.role = "secondary";
  r.commit_lsn = 40;
  r.applied_lsn = 40;
  s.replica = r;
  v.leader_silence_seconds = 0.02;
  return v;
}

json body(const http_response& r) {
  return json::parse(r.body);
}

TEST(http_api, livez_answers_with_the_node_id) {
  auto r = handle_http({"GET", "/livez"}, follower_view());
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(body(r)["id"], 1);
}

TEST(http_api, unknown_route_and_method_are_4xx_with_a_json_error) {
  auto r = handle_http({"GET", "/nope"}, follower_view());
  EXPECT_EQ(r.status, 404);
  EXPECT_TRUE(body(r)["error"].is_string());
  auto m = handle_http({"POST", "/v1/cluster"}, follower_view());
  EXPECT_EQ(m.status, 405);
  EXPECT_NE(body(m)["error"].get<std::string>().find("GET"), std::string::npos);
}

TEST(http_api, ready_follower_of_a_linked_leader_with_a_caught_up_replica) {
  auto r = handle_http({"GET", "/readyz"}, follower_view());
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body(r)["ready"], true);
}

TEST(http_api, readyz_gives_the_reason_it_is_not_ready) {
  auto expect_unready = [](const http_view& v, const std::string& word) {
    auto r = handle_http({"GET", "/readyz"}, v);
    EXPECT_EQ(r.status, 503);
    auto reason = body(r)["reason"].get<std::string>();
    EXPECT_NE(reason.find(word), std::string::npos) << reason;
  };
  auto v = follower_view();
  v.status.leader = 0;
  expect_unready(v, "no leader");

  v = follower_view();
  v.status.peers[0].connected = false;
  v.status.peers[1].connected = false;
  expect_unready(v, "1 of 3 members linked");

  v = follower_view();
  v.status.peers[0].connected = false; // the leader's link, a majority still linked
  expect_unready(v, "leader (node 2) is not linked");

  v = follower_view();
  v.status.leader = 1;
  v.status.is_leader = true;
  v.status.acting = false;
  expect_unready(v, "no majority lease");

  v = follower_view();
  v.status.replica->role = "syncing";
  expect_unready(v, "syncing");

  v = follower_view();
  v.status.replica->commit_lsn = 5000;
  v.status.replica->applied_lsn = 3000;
  expect_unready(v, "2000 records behind");
}

TEST(http_api, apply_lag_within_the_bound_is_ready) {
  auto v = follower_view();
  v.status.replica->commit_lsn = 1040;
  v.status.replica->applied_lsn = 40;
  EXPECT_EQ(unready_reason(v), "");
  v.bounds.max_apply_lag = 999;
  EXPECT_NE(unready_reason(v), "");
}

TEST(http_api, cluster_lists_members_leader_term_and_role) {
  auto v = follower_view();
  v.status.peers[1].state = "suspected";
  v.status.peers[1].connected = false;
  auto j = body(handle_http({"GET", "/v1/cluster"}, v));
  EXPECT_EQ(j["role"], "follower");
  EXPECT_EQ(j["leader"], 2);
  EXPECT_EQ(j["term"]["epoch"], 5);
  EXPECT_EQ(j["term"]["leader"], 2);
  EXPECT_EQ(j["acting"], false);
  ASSERT_EQ(j["members"].size(), 3u);
  EXPECT_EQ(j["members"][0]["self"], true);
  EXPECT_EQ(j["members"][2]["id"], 3);
  EXPECT_EQ(j["members"][2]["address"], "127.0.0.1:7003");
  EXPECT_EQ(j["members"][2]["state"], "suspected");
  EXPECT_EQ(j["members"][2]["linked"], false);
  EXPECT_DOUBLE_EQ(j["leader_silence_ms"].get<double>(), 20.0);

  v.status.leader = 1;
  v.status.is_leader = true;
  v.status.acting = true;
  auto l = body(handle_http({"GET", "/v1/cluster"}, v));
  EXPECT_EQ(l["role"], "leader");
  EXPECT_FALSE(l.contains("leader_silence_ms"));
}

TEST(http_api, replicas_show_lsns_and_the_lag_per_secondary) {
  auto v = follower_view();
  v.status.replica->role = "primary";
  v.status.replica->commit_lsn = 90;
  v.status.replica->applied_lsn = 88;
  v.lags = {{2, 3, 300, 0.5}, {3, 0, 0, 0}};
  auto j = body(handle_http({"GET", "/v1/replicas"}, v));
  EXPECT_EQ(j["replica"]["role"], "primary");
  EXPECT_EQ(j["replica"]["commit_lsn"], 90);
  EXPECT_EQ(j["replica"]["applied_lsn"], 88);
  ASSERT_EQ(j["replica"]["lag"].size(), 2u);
  EXPECT_EQ(j["replica"]["lag"][0]["peer"], 2);
  EXPECT_EQ(j["replica"]["lag"][0]["records"], 3);

  v.status.replica.reset();
  EXPECT_TRUE(body(handle_http({"GET", "/v1/replicas"}, v))["replica"].is_null());
}

} // namespace

namespace {

TEST(http_api, cluster_lists_each_members_http_address_where_configured) {
  auto v = follower_view();
  v.http = {{1, "127.0.0.1:8001"}, {3, "127.0.0.1:8003"}};
  v.http_scheme = "https";
  auto j = body(handle_http({"GET", "/v1/cluster"}, v));
  std::map<uint64_t, json> by_id;
  for (auto& m : j["members"])
    by_id[m["id"].get<uint64_t>()] = m["http"];
  EXPECT_EQ(by_id[1], "https://127.0.0.1:8001");
  EXPECT_TRUE(by_id[2].is_null());
  EXPECT_EQ(by_id[3], "https://127.0.0.1:8003");
}

} // namespace

namespace {

/// What member `id` would answer to /v1/cluster?scope=local: its own view,
/// `states` for the others.
std::string own_view(uint64_t id, std::map<uint64_t, std::string> states) {
  json members = json::array({{{"id", id}, {"self", true}, {"state", "alive"}}});
  for (auto& [m, st] : states)
    members.push_back({{"id", m}, {"self", false}, {"state", st}});
  return json{{"id", id}, {"members", members}}.dump();
}

json member(const json& cluster, uint64_t id) {
  for (auto& m : cluster["members"])
    if (m["id"] == id)
      return m;
  return nullptr;
}

TEST(http_api, cluster_says_who_suspects_each_member) {
  auto v = follower_view(); // node 1, following 2
  v.status.peers[1].state = "suspected";
  int asked = 0;
  v.fetch_views = [&] {
    ++asked;
    return std::vector<member_view>{{2, own_view(2, {{1, "alive"}, {3, "down"}}), ""},
                                    {3, std::nullopt, "no answer: Connection"}};
  };
  auto j = body(handle_http({"GET", "/v1/cluster"}, v));
  EXPECT_EQ(asked, 1);
  auto three = member(j, 3);
  EXPECT_EQ(three["suspected_by"], json::array({1, 2}));
  EXPECT_EQ(three["seen_by"]["1"], "suspected");
  EXPECT_EQ(three["seen_by"]["2"], "down");
  auto two = member(j, 2);
  EXPECT_EQ(two["suspected_by"], json::array());
  EXPECT_EQ(two["seen_by"]["1"], "alive");
  EXPECT_FALSE(two["seen_by"].contains("2")) << "a member does not judge itself";
  EXPECT_EQ(member(j, 1)["seen_by"]["2"], "alive");
  EXPECT_EQ(j["views"]["answered"], json::array({1, 2}));
  ASSERT_EQ(j["views"]["unanswered"].size(), 1u);
  EXPECT_EQ(j["views"]["unanswered"][0]["id"], 3);
  EXPECT_NE(j["views"]["unanswered"][0]["error"].get<std::string>().find("Connection"),
            std::string::npos);

  // scope=local: this node's view alone, nobody asked (what members ask
  // each other, so one request never fans out twice).
  auto l = body(handle_http({"GET", "/v1/cluster", {{"scope", "local"}}}, v));
  EXPECT_EQ(asked, 1);
  EXPECT_FALSE(l.contains("views"));
  EXPECT_EQ(handle_http({"GET", "/v1/cluster", {{"scope", "x"}}}, v).status, 400);
}

TEST(http_api, an_answer_that_is_not_a_members_view_counts_as_none) {
  auto v = follower_view();
  for (std::string bad :
       {"", "{", "[]", "null", R"({"id":"2","members":[]})", R"({"id":3,"members":[]})",
        R"({"id":2,"members":{}})", R"({"id":2})", R"({"id":-2,"members":[]})"}) {
    v.fetch_views = [&] { return std::vector<member_view>{{2, bad, ""}}; };
    auto j = body(handle_http({"GET", "/v1/cluster"}, v));
    EXPECT_EQ(j["views"]["answered"], json::array({1})) << bad;
    EXPECT_EQ(j["views"]["unanswered"][0]["id"], 2) << bad;
    EXPECT_EQ(member(j, 3)["seen_by"].size(), 1u) << bad;
  }
  // Entries that are not members are skipped, the rest of the view counts.
  v.fetch_views = [&] {
    return std::vector<member_view>{
        {2,
         R"({"id":2,"members":[1,{"id":"3","state":"down"},{"id":3},)"
         R"({"id":3,"state":7},{"id":1,"state":"suspected"}]})",
         ""}};
  };
  auto j = body(handle_http({"GET", "/v1/cluster"}, v));
  EXPECT_EQ(j["views"]["answered"], json::array({1, 2}));
  EXPECT_EQ(member(j, 1)["suspected_by"], json::array({2}));
  EXPECT_EQ(member(j, 3)["suspected_by"], json::array());
}

TEST(http_api, last_heard_is_shown_where_this_node_expects_to_hear) {
  auto v = follower_view(); // follower of 2: hears only 2
  v.peer_silence = {{1, 0.0}, {2, 0.012}, {3, 4.0}};
  auto j = body(handle_http({"GET", "/v1/cluster", {{"scope", "local"}}}, v));
  EXPECT_DOUBLE_EQ(member(j, 2)["last_heard_ms"].get<double>(), 12.0);
  EXPECT_TRUE(member(j, 3)["last_heard_ms"].is_null());
  EXPECT_TRUE(member(j, 1)["last_heard_ms"].is_null());
  v.status.leader = 1;
  v.status.is_leader = true; // a leader hears every follower's acks
  j = body(handle_http({"GET", "/v1/cluster", {{"scope", "local"}}}, v));
  EXPECT_DOUBLE_EQ(member(j, 3)["last_heard_ms"].get<double>(), 4000.0);
  EXPECT_DOUBLE_EQ(member(j, 2)["last_heard_ms"].get<double>(), 12.0);
}

} // namespace
