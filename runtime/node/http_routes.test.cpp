// The data routes of the HTTP API without sockets: write authorization,
// /v1/kv, /v1/leases and /v1/jobs against an in-memory store and a fake
// workflow client that record what the routes asked for.
#include "runtime/node/http_routes.hpp"
#include "runtime/node/http_jobs.hpp"
#include "runtime/node/http_kv.hpp"
#include "runtime/node/http_leases.hpp"

#include "actors/replication/lease_state.hpp"
#include "actors/replication/txn_apply.hpp"
#include "protocols/workflow/store_layout.hpp"
#include "tests/support/store_reads.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>

using namespace conclave::node;
namespace rp = conclave::replication;
namespace wf = conclave::workflow;
using nlohmann::json;

namespace {

/// A dictionary store that applies puts, removes and the two conditions, and
/// can be told to answer a code instead.
class memory_store : public kv_store {
public:
  std::map<std::string, std::map<std::string, std::string>> data;
  std::optional<rp::errc> force; ///< answer this code to everything
  std::vector<rp::txn_request> txns;
  std::vector<rp::list_request> lists;
  uint64_t lsn = 10;

  rp::read_result get(const rp::read_request& req) override {
    rp::read_result r;
    r.primary = rp::node_id{2};
    r.applied = rp::lsn{lsn};
    if (force) {
      r.code = *force;
      return r;
    }
    auto c = data.find(req.collection);
    if (c == data.end()) {
      r.code = rp::errc::unknown_collection;
      return r;
    }
    auto i = c->second.find(req.key);
    r.found = i != c->second.end();
    if (r.found)
      r.value = i->second;
    return r;
  }

  rp::list_result list(const rp::list_request& req) override {
    lists.push_back(req);
    rp::list_result r;
    r.primary = rp::node_id{2};
    r.applied = rp::lsn{lsn};
    if (force) {
      r.code = *force;
      return r;
    }
    auto c = data.find(req.collection);
    if (c == data.end()) {
      r.code = rp::errc::unknown_collection;
      return r;
    }
    for (auto i = c->second.upper_bound(req.start_after); i != c->second.end(); ++i) {
      if (i->first.rfind(req.prefix, 0) != 0)
        continue;
      if (req.limit != 0 && r.items.size() == req.limit) {
        r.more = true;
        break;
      }
      r.items.push_back({i->first, i->second});
    }
    return r;
  }

  rp::txn_result transact(const rp::txn_request& req) override {
    txns.push_back(req);
    rp::txn_result r;
    r.primary = rp::node_id{2};
    r.at = rp::lsn{++lsn};
    if (force) {
      r.code = *force;
      return r;
    }
    auto copy = data;
    for (auto& op : req.ops) {
      auto& d = copy[op.collection];
      auto i = d.find(op.key);
      rp::op_output out{i != d.end(), i != d.end() ? i->second : std::string{}};
      switch (op.kind) {
      case rp::op_kind::put:
        d[op.key] = op.value;
        break;
      case rp::op_kind::remove:
        d.erase(op.key);
        break;
      case rp::op_kind::expect_value:
        if (i == d.end() || i->second != op.value) {
          r.code = rp::errc::condition_failed;
          return r;
        }
        break;
      case rp::op_kind::expect_absent:
        if (i != d.end()) {
          r.code = rp::errc::condition_failed;
          return r;
        }
        break;
      default:
        r.code = rp::errc::bad_request;
        return r;
      }
      r.outputs.push_back(out);
    }
    data = copy;
    return r;
  }
};

http_request req(std::string method, std::string path,
                 std::map<std::string, std::string> query = {}, std::string body = {}) {
  http_request r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.query = std::move(query);
  r.body = std::move(body);
  return r;
}

json json_of(const http_response& r) {
  return json::parse(r.body);
}

http_response kv(const http_request& r, memory_store& s) {
  auto out = handle_kv(r, &s);
  EXPECT_TRUE(out.has_value()) << r.path;
  return out ? *out : http_response{};
}

// -- authorization ---------------------------------------------------------------

TEST(http_routes, a_write_over_tls_needs_a_verified_client_certificate) {
  memory_store s;
  http_backends b;
  b.kv = std::shared_ptr<kv_store>(&s, [](kv_store*) {});
  auto put = req("PUT", "/v1/kv/a", {}, R"({"value":"1"})");
  put.tls = true;
  auto r = route_request(put, {}, b);
  EXPECT_EQ(r.status, 403);
  EXPECT_TRUE(json_of(r)["error"].is_string());
  EXPECT_TRUE(s.txns.empty()); // nothing reached the store
  for (auto m : {"POST", "DELETE", "PATCH"}) {
    auto w = req(m, "/v1/kv");
    w.tls = true;
    EXPECT_EQ(route_request(w, {}, b).status, 403) << m;
  }

  put.client_verified = true;
  EXPECT_EQ(route_request(put, {}, b).status, 200);
  EXPECT_EQ(s.data["kv"]["a"], "1");

  auto read = req("GET", "/v1/kv/a");
  read.tls = true; // no certificate: reads are open
  EXPECT_EQ(route_request(read, {}, b).status, 200);

  auto plain = req("DELETE", "/v1/kv/a"); // plain HTTP is loopback only
  EXPECT_EQ(route_request(plain, {}, b).status, 200);
  EXPECT_EQ(s.data["kv"].count("a"), 0u);
}

TEST(http_routes, data_routes_answer_503_until_the_node_has_its_clients) {
  for (auto path : {"/v1/kv", "/v1/kv/x", "/v1/leases", "/v1/jobs", "/v1/jobs/j1"}) {
    auto r = route_request(req("GET", path), {}, {});
    EXPECT_EQ(r.status, 503) << path;
    EXPECT_TRUE(json_of(r)["error"].is_string());
  }
  // The node's own routes still answer.
  EXPECT_EQ(route_request(req("GET", "/livez"), {}, {}).status, 200);
}

// -- /v1/kv ------------------------------------------------------------------------

TEST(http_kv, get_put_delete_one_key) {
  memory_store s;
  EXPECT_EQ(kv(req("GET", "/v1/kv/k"), s).status, 404); // no collection yet
  auto put = kv(req("PUT", "/v1/kv/dir/k", {}, R"({"value":"v1"})"), s);
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(json_of(put)["lsn"], 11);
  EXPECT_EQ(json_of(put)["node"], 2);
  ASSERT_EQ(s.txns.size(), 1u);
  EXPECT_EQ(s.txns[0].mode, rp::commit_mode::strong);
  EXPECT_EQ(s.txns[0].ops[0].kind, rp::op_kind::put);
  EXPECT_EQ(s.txns[0].ops[0].collection, "kv");
  EXPECT_EQ(s.txns[0].ops[0].key, "dir/k"); // slashes belong to the key

  auto got = json_of(kv(req("GET", "/v1/kv/dir/k"), s));
  EXPECT_EQ(got["key"], "dir/k");
  EXPECT_EQ(got["value"], "v1");
  EXPECT_EQ(got["node"], 2);
  EXPECT_EQ(kv(req("GET", "/v1/kv/other"), s).status, 404);

  auto del = kv(req("DELETE", "/v1/kv/dir/k"), s);
  EXPECT_EQ(del.status, 200);
  EXPECT_EQ(json_of(del)["existed"], true);
  EXPECT_EQ(kv(req("GET", "/v1/kv/dir/k"), s).status, 404);

  // Another collection.
  kv(req("PUT", "/v1/kv/k", {{"collection", "c2"}}, R"({"value":"x"})"), s);
  EXPECT_EQ(s.data["c2"]["k"], "x");
}

TEST(http_kv, bad_requests_are_400_and_reach_no_store) {
  memory_store s;
  for (auto b : {"", "not json", "[1]", "{}", R"({"value":5})", R"({"value":null})"})
    EXPECT_EQ(kv(req("PUT", "/v1/kv/k", {}, b), s).status, 400) << b;
  EXPECT_EQ(kv(req("GET", "/v1/kv", {{"limit", "0"}}), s).status, 400);
  EXPECT_EQ(kv(req("GET", "/v1/kv", {{"limit", "1001"}}), s).status, 400);
  EXPECT_EQ(kv(req("GET", "/v1/kv", {{"limit", "ten"}}), s).status, 400);
  EXPECT_EQ(kv(req("GET", "/v1/kv/k", {{"encoding", "hex"}}), s).status, 400);
  EXPECT_EQ(
      kv(req("GET", "/v1/kv/k", {{"collection", std::string("\0lease", 6)}}), s).status,
      400);
  EXPECT_EQ(kv(req("POST", "/v1/kv", {}, R"({"key":"k","value":"v"})"), s).status, 400)
      << "expected is required";
  EXPECT_EQ(kv(req("POST", "/v1/kv", {}, R"({"expected":null,"value":"v"})"), s).status,
            400);
  EXPECT_EQ(
      kv(req("POST", "/v1/kv", {}, R"({"key":"k","expected":null,"value":"v","x":1})"), s)
          .status,
      400);
  EXPECT_EQ(kv(req("PATCH", "/v1/kv/k"), s).status, 405);
  EXPECT_EQ(kv(req("PUT", "/v1/kv"), s).status, 405);
  EXPECT_TRUE(s.txns.empty());
  EXPECT_TRUE(s.lists.empty());
  EXPECT_FALSE(handle_kv(req("GET", "/v1/kvx"), &s).has_value());
}

TEST(http_kv, list_pages_by_prefix_and_after) {
  memory_store s;
  for (auto k : {"a/1", "a/2", "a/3", "b/1"})
    s.data["kv"][k] = std::string{"v"} + k;
  auto p1 = kv(req("GET", "/v1/kv", {{"prefix", "a/"}, {"limit", "2"}}), s);
  ASSERT_EQ(p1.status, 200) << p1.body;
  auto j1 = json_of(p1);
  ASSERT_EQ(j1["items"].size(), 2u);
  EXPECT_EQ(j1["items"][0]["key"], "a/1");
  EXPECT_EQ(j1["items"][0]["value"], "va/1");
  EXPECT_EQ(j1["next"], "a/2");
  EXPECT_EQ(s.lists.back().limit, 2u);
  auto j2 = json_of(
      kv(req("GET", "/v1/kv", {{"prefix", "a/"}, {"limit", "2"}, {"after", "a/2"}}), s));
  ASSERT_EQ(j2["items"].size(), 1u);
  EXPECT_EQ(j2["items"][0]["key"], "a/3");
  EXPECT_TRUE(j2["next"].is_null());
  EXPECT_EQ(s.lists.back().start_after, "a/2");
  // Default page size; an unknown collection lists as empty.
  auto j3 = json_of(kv(req("GET", "/v1/kv", {{"collection", "none"}}), s));
  EXPECT_TRUE(j3["items"].empty());
  EXPECT_EQ(s.lists.back().limit, default_kv_page);
}

TEST(http_kv, compare_and_put_commits_or_answers_409) {
  memory_store s;
  // Absent expected: creates.
  auto create =
      kv(req("POST", "/v1/kv", {}, R"({"key":"k","expected":null,"value":"1"})"), s);
  ASSERT_EQ(create.status, 200) << create.body;
  EXPECT_EQ(s.txns.back().ops[0].kind, rp::op_kind::expect_absent);
  EXPECT_EQ(s.data["kv"]["k"], "1");
  // A second create fails.
  auto again =
      kv(req("POST", "/v1/kv", {}, R"({"key":"k","expected":null,"value":"2"})"), s);
  EXPECT_EQ(again.status, 409);
  EXPECT_TRUE(json_of(again)["error"].is_string());
  EXPECT_EQ(s.data["kv"]["k"], "1");
  // Expected value: swaps, then a stale one fails.
  EXPECT_EQ(kv(req("POST", "/v1/kv", {}, R"({"key":"k","expected":"1","value":"2"})"), s)
                .status,
            200);
  EXPECT_EQ(s.txns.back().ops[0].kind, rp::op_kind::expect_value);
  EXPECT_EQ(s.txns.back().ops[0].value, "1");
  EXPECT_EQ(s.data["kv"]["k"], "2");
  EXPECT_EQ(kv(req("POST", "/v1/kv", {}, R"({"key":"k","expected":"1","value":"3"})"), s)
                .status,
            409);
  // Value null: deletes if it still holds the expected value.
  EXPECT_EQ(kv(req("POST", "/v1/kv", {}, R"({"key":"k","expected":"2","value":null})"), s)
                .status,
            200);
  EXPECT_EQ(s.txns.back().ops[1].kind, rp::op_kind::remove);
  EXPECT_EQ(s.data["kv"].count("k"), 0u);
}

TEST(http_kv, store_failures_map_to_status_codes) {
  memory_store s;
  s.force = rp::errc::outcome_unknown;
  auto w = kv(req("PUT", "/v1/kv/k", {}, R"({"value":"v"})"), s);
  EXPECT_EQ(w.status, 504);
  EXPECT_NE(json_of(w)["error"].get<std::string>().find("outcome unknown"),
            std::string::npos);
  s.force = rp::errc::timeout;
  auto g = kv(req("GET", "/v1/kv/k"), s);
  EXPECT_EQ(g.status, 504);
  EXPECT_EQ(json_of(g)["error"].get<std::string>().find("outcome unknown"),
            std::string::npos);
  s.force = rp::errc::primary_changed; // a write the client gave up on
  auto pc = kv(req("DELETE", "/v1/kv/k"), s);
  EXPECT_EQ(pc.status, 504);
  EXPECT_NE(json_of(pc)["error"].get<std::string>().find("outcome unknown"),
            std::string::npos);
  s.force = rp::errc::too_large;
  EXPECT_EQ(kv(req("PUT", "/v1/kv/k", {}, R"({"value":"v"})"), s).status, 413);
  s.force = rp::errc::wrong_kind;
  EXPECT_EQ(kv(req("GET", "/v1/kv/k"), s).status, 409);
  s.force = rp::errc::sessions_full;
  EXPECT_EQ(kv(req("PUT", "/v1/kv/k", {}, R"({"value":"v"})"), s).status, 503);
}

TEST(http_kv, base64_carries_bytes_that_are_not_utf8) {
  EXPECT_EQ(to_base64(""), "");
  EXPECT_EQ(to_base64("f"), "Zg==");
  EXPECT_EQ(to_base64("fo"), "Zm8=");
  EXPECT_EQ(to_base64("foo"), "Zm9v");
  for (std::string s : {std::string{}, std::string{"f"}, std::string{"fo"},
                        std::string{"\xff\x00\x80", 3}, std::string(100, '\xfe')})
    EXPECT_EQ(from_base64(to_base64(s)), s);
  for (auto bad : {"Zg=", "Z===", "Zm9v!", "Zg==Zg==", "=Zg="})
    EXPECT_FALSE(from_base64(bad).has_value()) << bad;

  memory_store s;
  std::string key{"k\xff", 2}, value{"\x00\x01\xfe", 3};
  auto put = kv(req("PUT", "/v1/kv/" + to_base64(key), {{"encoding", "base64"}},
                    json{{"value", to_base64(value)}}.dump()),
                s);
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(s.data["kv"][key], value);
  auto got =
      json_of(kv(req("GET", "/v1/kv/" + to_base64(key), {{"encoding", "base64"}}), s));
  EXPECT_EQ(got["value"], to_base64(value));
  // Without base64 the answer is still JSON: bytes that are not UTF-8 are
  // replaced.
  auto plain = kv(req("GET", "/v1/kv", {}), s);
  EXPECT_EQ(plain.status, 200);
  EXPECT_FALSE(json::parse(plain.body, nullptr, false).is_discarded());
  EXPECT_EQ(kv(req("GET", "/v1/kv/%%%", {{"encoding", "base64"}}), s).status, 400);
}

// -- /v1/leases ----------------------------------------------------------------

TEST(http_leases, holders_and_tokens_of_the_lease_table) {
  memory_store s;
  auto none = handle_leases(req("GET", "/v1/leases"), &s);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 200);
  EXPECT_TRUE(json_of(*none)["leases"].empty());

  rp::lease l;
  l.limit = 2;
  l.holders.push_back({"h1", 41, std::chrono::milliseconds{10000}, "host pid 7"});
  l.holders.push_back({"h2", 57, std::chrono::milliseconds{5000}, ""});
  s.data[rp::lease_collection]["jobs"] = rp::encode_lease(l);
  s.data[rp::lease_collection]["x"] =
      rp::encode_lease(rp::lease{1, {{"h3", 60, std::chrono::milliseconds{1000}, ""}}});

  auto all = handle_leases(req("GET", "/v1/leases", {{"limit", "1"}}), &s);
  ASSERT_EQ(all->status, 200) << all->body;
  auto j = json_of(*all);
  ASSERT_EQ(j["leases"].size(), 1u);
  EXPECT_EQ(j["leases"][0]["name"], "jobs");
  EXPECT_EQ(j["leases"][0]["limit"], 2);
  EXPECT_EQ(j["leases"][0]["holders"][1]["holder"], "h2");
  EXPECT_EQ(j["leases"][0]["holders"][1]["token"], 57);
  EXPECT_EQ(j["leases"][0]["holders"][0]["ttl_ms"], 10000);
  EXPECT_EQ(j["next"], "jobs");
  EXPECT_EQ(s.lists.front().collection, rp::lease_collection);
  EXPECT_TRUE(j["leases"][0]["waiters"].empty());

  auto one = handle_leases(req("GET", "/v1/leases/x"), &s);
  EXPECT_EQ(json_of(*one)["holders"][0]["token"], 60);
  auto free = handle_leases(req("GET", "/v1/leases/free"), &s);
  EXPECT_EQ(free->status, 200);
  EXPECT_TRUE(json_of(*free)["holders"].empty());
  EXPECT_EQ(handle_leases(req("PUT", "/v1/leases/x"), &s)->status, 405);
  s.data[rp::lease_collection]["bad"] = "garbage";
  EXPECT_EQ(handle_leases(req("GET", "/v1/leases/bad"), &s)->status, 500);
}

TEST(http_leases, waiters_in_queue_order_from_the_primarys_list) {
  memory_store s;
  s.data[rp::lease_collection]["jobs"] =
      rp::encode_lease(rp::lease{1, {{"h1", 41, std::chrono::milliseconds{10000}, ""}}});
  s.data[rp::lease_collection]["jobsx"] =
      rp::encode_lease(rp::lease{1, {{"h9", 50, std::chrono::milliseconds{10000}, ""}}});
  auto waiter = [](std::string holder, int64_t left) {
    return rp::encode_waiter({holder, "pid " + holder, std::chrono::milliseconds{3000},
                              std::chrono::milliseconds{left}});
  };
  auto& w = s.data[rp::lease_waiters_collection];
  w[rp::waiter_key("jobs", 1)] = waiter("h2", 900);
  w[rp::waiter_key("jobs", 2)] = waiter("h3", 1900);
  w[rp::waiter_key("jobsx", 1)] = waiter("h4", 50);
  w[rp::waiter_key("jobs", 3)] = "garbage"; // skipped, not fatal

  auto one = handle_leases(req("GET", "/v1/leases/jobs"), &s);
  ASSERT_EQ(one->status, 200) << one->body;
  auto j = json_of(*one);
  ASSERT_EQ(j["waiters"].size(), 2u) << j.dump();
  EXPECT_EQ(j["waiters"][0]["holder"], "h2");
  EXPECT_EQ(j["waiters"][0]["place"], 1);
  EXPECT_EQ(j["waiters"][0]["wait_left_ms"], 900);
  EXPECT_EQ(j["waiters"][1]["holder"], "h3");
  EXPECT_EQ(j["waiters"][1]["label"], "pid h3");
  EXPECT_EQ(j["waiters"][1]["ttl_ms"], 3000);
  // One lease's waiters only: "jobs" is a prefix of "jobsx", not its waiters.
  EXPECT_EQ(s.lists.back().prefix, std::string("jobs") + '\0');

  auto all = json_of(*handle_leases(req("GET", "/v1/leases"), &s));
  ASSERT_EQ(all["leases"].size(), 2u);
  EXPECT_EQ(all["leases"][0]["waiters"].size(), 2u);
  EXPECT_EQ(all["leases"][1]["waiters"][0]["holder"], "h4");
  EXPECT_EQ(all["waiters_more"], false);

  s.force = rp::errc::timeout; // the waiters cannot be asked: no half answer
  EXPECT_EQ(handle_leases(req("GET", "/v1/leases"), &s)->status, 504);
}

TEST(lease_waiter_rows, keys_and_rows_round_trip_and_garbage_is_refused) {
  for (uint32_t place : {1u, 9u, 10u, 99999999u}) {
    auto k = rp::waiter_key(std::string("a\0b", 3), place);
    auto back = rp::parse_waiter_key(k);
    ASSERT_TRUE(back) << place;
    EXPECT_EQ(back->first, std::string("a\0b", 3));
    EXPECT_EQ(back->second, place);
  }
  EXPECT_LT(rp::waiter_key("l", 2), rp::waiter_key("l", 10))
      << "keys sort in queue order";
  for (std::string bad : {std::string{}, std::string("x"),
                          std::string("l\0"
                                      "0000000x"),
                          std::string("l\0"
                                      "00000000"),
                          std::string("l-00000001")})
    EXPECT_FALSE(rp::parse_waiter_key(bad)) << bad;
  rp::lease_waiter w{"h", "label", std::chrono::milliseconds{5},
                     std::chrono::milliseconds{7}};
  auto row = rp::encode_waiter(w);
  auto back = rp::decode_waiter(row);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->holder, "h");
  EXPECT_EQ(back->label, "label");
  EXPECT_EQ(back->wait_left.count(), 7);
  for (size_t cut = 0; cut < row.size(); ++cut)
    EXPECT_FALSE(rp::decode_waiter(row.substr(0, cut))) << cut;
  EXPECT_FALSE(rp::decode_waiter(row + "x"));
}

// -- /v1/jobs ------------------------------------------------------------------

template <class T>
job_call<T> answered(T v) {
  job_call<T> c;
  c.value = std::move(v);
  return c;
}

class fake_jobs : public jobs_service {
public:
  std::map<wf::job_id, wf::job_view> jobs;
  std::vector<wf::job_spec> submitted;
  std::optional<wf::errc> refuse;
  bool time_out = false;

  template <class T>
  job_call<T> failed() {
    job_call<T> c;
    c.code = refuse;
    c.timed_out = time_out;
    c.error = "refused";
    return c;
  }

  job_call<wf::job_id> submit(const wf::job_spec& spec) override {
    if (refuse || time_out)
      return failed<wf::job_id>();
    submitted.push_back(spec);
    return answered(wf::job_id{spec.id.value.empty() ? "gen-1" : spec.id.value});
  }
  job_call<wf::job_view> get(const wf::job_id& id) override {
    auto i = jobs.find(id);
    if (i == jobs.end()) {
      job_call<wf::job_view> c;
      c.code = wf::errc::unknown_job;
      return c;
    }
    return answered(i->second);
  }
  job_call<std::vector<wf::job_id>> list(wf::step_state s) override {
    if (time_out)
      return failed<std::vector<wf::job_id>>();
    std::vector<wf::job_id> out;
    for (auto& [id, v] : jobs)
      if (v.job.state == s)
        out.push_back(id);
    return answered(out);
  }
  job_call<wf::step_state> cancel(const wf::job_id& id) override {
    if (refuse || time_out)
      return failed<wf::step_state>();
    return answered(wf::step_state::cancelled);
  }
  job_call<wf::step_state> resubmit(const wf::job_id& id) override {
    return answered(wf::step_state::pending);
  }
  job_call<wf::stuck_report> explain(const wf::job_id& id) override {
    auto v = get(id);
    if (!v.value)
      return failed<wf::stuck_report>();
    return answered(wf::explain(*v.value, now()));
  }
  wf::timestamp now() override { return wf::timestamp{1'000'000'000}; }

  void add(const std::string& id, wf::step_state s) {
    wf::job_view v;
    v.job.id = wf::job_id{id};
    v.job.state = s;
    v.job.step_count = 1;
    wf::step_record st;
    st.job = v.job.id;
    st.spec.agent_kind = "sleep";
    st.state = s;
    v.steps.push_back(st);
    jobs[v.job.id] = v;
  }
};

std::optional<http_response> jobs_route(const http_request& r, fake_jobs& j,
                                        memory_store& s) {
  return handle_jobs(r, &j, &s);
}

TEST(http_jobs, submit_takes_the_spec_file_json_and_checks_kinds) {
  fake_jobs j;
  memory_store s;
  s.data[wf::layout::agents]["1"] = wf::layout::encode_kinds({"sleep", "echo"});
  auto ok = jobs_route(req("POST", "/v1/jobs", {},
                           R"({"id":"j1","steps":[{"kind":"sleep","payload":"5"}]})"),
                       j, s);
  ASSERT_EQ(ok->status, 201) << ok->body;
  EXPECT_EQ(json_of(*ok)["id"], "j1");
  ASSERT_EQ(j.submitted.size(), 1u);
  EXPECT_EQ(j.submitted[0].steps.at(0).agent_kind, "sleep");

  auto unserved =
      jobs_route(req("POST", "/v1/jobs", {}, R"({"steps":[{"kind":"nope"}]})"), j, s);
  EXPECT_EQ(unserved->status, 400);
  EXPECT_NE(json_of(*unserved)["error"].get<std::string>().find("nope"),
            std::string::npos);
  for (auto bad : {"", "{", R"({"steps":[]})", R"({"steps":[{"kind":"sleep","x":1}]})"})
    EXPECT_EQ(jobs_route(req("POST", "/v1/jobs", {}, bad), j, s)->status, 400) << bad;
  EXPECT_EQ(j.submitted.size(), 1u);

  j.refuse = wf::errc::job_exists;
  EXPECT_EQ(
      jobs_route(req("POST", "/v1/jobs", {}, R"({"steps":[{"kind":"echo"}]})"), j, s)
          ->status,
      409);
  j.refuse.reset();
  j.time_out = true;
  auto late =
      jobs_route(req("POST", "/v1/jobs", {}, R"({"steps":[{"kind":"echo"}]})"), j, s);
  EXPECT_EQ(late->status, 504);
  EXPECT_NE(json_of(*late)["error"].get<std::string>().find("outcome unknown"),
            std::string::npos);
}

TEST(http_jobs, list_pages_in_id_order_with_next) {
  fake_jobs j;
  memory_store s;
  j.add("a", wf::step_state::processed);
  j.add("b", wf::step_state::pending);
  j.add("c", wf::step_state::processed);
  j.add("d", wf::step_state::processed);
  auto p1 =
      jobs_route(req("GET", "/v1/jobs", {{"state", "processed"}, {"limit", "2"}}), j, s);
  ASSERT_EQ(p1->status, 200) << p1->body;
  auto b1 = json_of(*p1);
  ASSERT_EQ(b1["jobs"].size(), 2u);
  EXPECT_EQ(b1["jobs"][0]["id"], "a");
  EXPECT_EQ(b1["jobs"][0]["state"], "processed");
  EXPECT_EQ(b1["jobs"][0]["steps"].size(), 1u);
  EXPECT_EQ(b1["jobs"][1]["id"], "c");
  EXPECT_EQ(b1["next"], "c");
  auto b2 = json_of(*jobs_route(
      req("GET", "/v1/jobs", {{"state", "processed"}, {"limit", "2"}, {"after", "c"}}), j,
      s));
  ASSERT_EQ(b2["jobs"].size(), 1u);
  EXPECT_EQ(b2["jobs"][0]["id"], "d");
  EXPECT_TRUE(b2["next"].is_null());
  // Every state when none is given.
  auto all = json_of(*jobs_route(req("GET", "/v1/jobs"), j, s));
  EXPECT_EQ(all["jobs"].size(), 4u);
  EXPECT_EQ(all["jobs"][1]["id"], "b");
  EXPECT_EQ(jobs_route(req("GET", "/v1/jobs", {{"state", "odd"}}), j, s)->status, 400);
  EXPECT_EQ(jobs_route(req("GET", "/v1/jobs", {{"limit", "501"}}), j, s)->status, 400);
  j.time_out = true;
  EXPECT_EQ(jobs_route(req("GET", "/v1/jobs"), j, s)->status, 504);
}

TEST(http_jobs, get_cancel_resubmit_explain) {
  fake_jobs j;
  memory_store s;
  j.add("j1", wf::step_state::pending);
  auto g = jobs_route(req("GET", "/v1/jobs/j1"), j, s);
  ASSERT_EQ(g->status, 200);
  EXPECT_EQ(json_of(*g)["id"], "j1");
  EXPECT_EQ(jobs_route(req("GET", "/v1/jobs/nope"), j, s)->status, 404);
  auto c = jobs_route(req("POST", "/v1/jobs/j1/cancel"), j, s);
  ASSERT_EQ(c->status, 200);
  EXPECT_EQ(json_of(*c)["state"], "cancelled");
  EXPECT_EQ(json_of(*jobs_route(req("POST", "/v1/jobs/j1/resubmit"), j, s))["state"],
            "pending");
  auto e = jobs_route(req("GET", "/v1/jobs/j1/explain"), j, s);
  ASSERT_EQ(e->status, 200) << e->body;
  EXPECT_EQ(json_of(*e)["id"], "j1");
  EXPECT_TRUE(json_of(*e).contains("next"));
  EXPECT_EQ(jobs_route(req("GET", "/v1/jobs/j1/cancel"), j, s)->status, 405);
  EXPECT_EQ(jobs_route(req("DELETE", "/v1/jobs/j1"), j, s)->status, 405);
  j.refuse = wf::errc::wrong_state;
  EXPECT_EQ(jobs_route(req("POST", "/v1/jobs/j1/cancel"), j, s)->status, 409);
  EXPECT_FALSE(handle_jobs(req("GET", "/v1/jobsx"), &j, &s).has_value());
}

// -- /v1/kv writes with the caller's session ------------------------------------------

/// The store as the replicas apply it: every write is one record applied to a
/// store_core with the session table (txn_apply.hpp).
class applying_store : public kv_store {
public:
  conclave::store::store_core core;
  uint64_t lsn = 0;
  std::vector<rp::txn_request> txns;

  rp::read_result get(const rp::read_request&) override { return {}; }
  rp::list_result list(const rp::list_request&) override { return {}; }
  rp::txn_result transact(const rp::txn_request& req) override {
    txns.push_back(req);
    rp::txn_result r;
    r.primary = rp::node_id{1};
    r.code = rp::check_request(req, {});
    if (r.code != rp::errc::ok)
      return r;
    auto out = rp::apply_txn(core, req.ops, rp::lsn{++lsn});
    r.code = out.code;
    r.at = out.first_at ? *out.first_at : rp::lsn{lsn};
    r.outputs = out.outputs;
    return r;
  }
  std::optional<std::string> value(const std::string& key) {
    return conclave::test::committed_value(core, "kv", key);
  }
};

TEST(http_kv, a_retried_write_with_its_session_is_applied_once) {
  applying_store s;
  std::map<std::string, std::string> session{{"session", "c1"}, {"seq", "1"}};
  auto first = handle_kv(req("PUT", "/v1/kv/k", session, R"({"value":"a"})"), &s);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200) << first->body;
  EXPECT_EQ(json_of(*first)["lsn"], 1);
  // The answer is lost; another writer's put lands before the retry.
  auto other = handle_kv(req("PUT", "/v1/kv/k", {}, R"({"value":"b"})"), &s);
  ASSERT_EQ(other->status, 200);
  auto retry = handle_kv(req("PUT", "/v1/kv/k", session, R"({"value":"a"})"), &s);
  ASSERT_EQ(retry->status, 200) << retry->body;
  EXPECT_EQ(json_of(*retry)["lsn"], 1); // the first outcome
  EXPECT_EQ(s.value("k"), "b");         // not applied again over the other write

  // A delete likewise; the next sequence number is a new write.
  std::map<std::string, std::string> two{{"session", "c1"}, {"seq", "2"}};
  EXPECT_EQ(handle_kv(req("DELETE", "/v1/kv/k", two), &s)->status, 200);
  EXPECT_EQ(handle_kv(req("PUT", "/v1/kv/k", {}, R"({"value":"c"})"), &s)->status, 200);
  EXPECT_EQ(handle_kv(req("DELETE", "/v1/kv/k", two), &s)->status, 200);
  EXPECT_EQ(s.value("k"), "c");
  std::map<std::string, std::string> three{{"session", "c1"}, {"seq", "3"}};
  EXPECT_EQ(handle_kv(req("DELETE", "/v1/kv/k", three), &s)->status, 200);
  EXPECT_EQ(s.value("k"), std::nullopt);

  // Without a session every request is a new write.
  handle_kv(req("PUT", "/v1/kv/n", {}, R"({"value":"1"})"), &s);
  handle_kv(req("PUT", "/v1/kv/n", {}, R"({"value":"2"})"), &s);
  handle_kv(req("PUT", "/v1/kv/n", {}, R"({"value":"1"})"), &s);
  EXPECT_EQ(s.value("n"), "1");
}

TEST(http_kv, a_malformed_session_is_400_and_reaches_no_store) {
  applying_store s;
  for (auto q : std::vector<std::map<std::string, std::string>>{
           {{"session", "c1"}},
           {{"seq", "1"}},
           {{"session", ""}, {"seq", "1"}},
           {{"session", "c1"}, {"seq", "0"}},
           {{"session", "c1"}, {"seq", "x"}},
           {{"session", std::string(65, 'a')}, {"seq", "1"}}}) {
    auto r = handle_kv(req("PUT", "/v1/kv/k", q, R"({"value":"a"})"), &s);
    EXPECT_EQ(r->status, 400) << r->body;
  }
  EXPECT_TRUE(s.txns.empty());
}

} // namespace
