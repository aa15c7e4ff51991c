// The node's HTTP/JSON API against real nodes on loopback: every route that
// docs/reference/http.md documents, over TLS as `cluster up` configures it,
// and malformed requests answered 4xx with a JSON error and counted.
#include "tests/process/process_support.hpp"

#include <httplib.h>
#include <openssl/ssl.h>

#include <csignal>
#include <mutex>
#include <thread>

using namespace conclave::process_test;
using nlohmann::json;

namespace {

/// The whole response (status line, headers, body) to `request` sent raw.
std::string raw_exchange(const std::string& host_port, const std::string& request) {
  int fd = conclave::testing::tcp_connect(host_port, nullptr, std::chrono::seconds(3));
  std::string response;
  if (fd >= 0) {
    // No half-close: the server takes it for a client gone and answers nothing.
    ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0)
      response.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return response;
}

int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12)
    return 0;
  return std::stoi(response.substr(9, 3));
}

json body_of(const std::string& response) {
  auto at = response.find("\r\n\r\n");
  return json::parse(at == std::string::npos ? "" : response.substr(at + 4), nullptr,
                     false);
}

/// `conclave lock NAME -- sleep 20` in the background, stopped by its pid
/// (SIGTERM: it releases the lease and ends its command) whatever happens.
struct background_lock {
  pid_t pid;
  background_lock(const std::string& name, const std::filesystem::path& dir,
                  const std::string& flags = "")
      : pid(static_cast<pid_t>(
          std::stol(run_conclave("lock " + name + " --dir " + dir.string() + " " + flags
                                 + " -- sleep 20 >/dev/null 2>&1 & echo $!")
                        .out))) {}
  ~background_lock() { ::kill(pid, SIGTERM); }
};

using http_api_process = cluster_test;

TEST_F(http_api_process, every_documented_route_answers_over_tls) {
  auto up_json = up(3);
  auto st = status();
  auto tls = dir / "tls";
  std::map<uint64_t, std::string> http;
  for (auto& n : st["nodes"]) {
    ASSERT_TRUE(n["http"].is_string()) << n.dump();
    http[n["id"].get<uint64_t>()] = n["http"].get<std::string>();
  }
  ASSERT_EQ(http.size(), 3u);
  auto client = [&](const std::string& host_port, bool with_cert) {
    auto colon = host_port.rfind(':');
    auto c = with_cert
                 ? std::make_unique<httplib::SSLClient>(
                     host_port.substr(0, colon), std::stoi(host_port.substr(colon + 1)),
                     (tls / "client.pem").string(), (tls / "client.key").string())
                 : std::make_unique<httplib::SSLClient>(
                     host_port.substr(0, colon), std::stoi(host_port.substr(colon + 1)));
    // The certificates name members (CN node-ID), not addresses: the CA is
    // checked by the handshake below only on the server's side.
    c->enable_server_certificate_verification(false);
    c->set_connection_timeout(2);
    c->set_read_timeout(3);
    return c;
  };
  // Every node becomes ready once a leader acts and its replica caught up.
  for (auto& [id, addr] : http) {
    auto c = client(addr, true);
    EXPECT_TRUE(eventually(
        [&] {
          auto r = c->Get("/readyz");
          return r && r->status == 200;
        },
        std::chrono::seconds(10)))
        << "node " << id;
    auto live = c->Get("/livez");
    ASSERT_TRUE(live);
    EXPECT_EQ(live->status, 200);
    EXPECT_EQ(json::parse(live->body)["id"], id);
  }
  auto leader = st["nodes"][0]["leader"].get<uint64_t>();
  for (auto& [id, addr] : http) {
    auto c = client(addr, false); // reads need no client certificate
    auto r = c->Get("/v1/cluster");
    ASSERT_TRUE(r) << "node " << id;
    ASSERT_EQ(r->status, 200);
    auto j = json::parse(r->body);
    EXPECT_EQ(j["id"], id);
    EXPECT_EQ(j["leader"], leader);
    EXPECT_EQ(j["members"].size(), 3u);
    EXPECT_EQ(j["role"], id == leader ? "leader" : "follower");
    EXPECT_EQ(j["acting"], id == leader);
    EXPECT_GT(j["term"]["epoch"].get<uint64_t>(), 0u);
    for (auto& m : j["members"])
      EXPECT_TRUE(m["address"].is_string() && m["state"].is_string()
                  && m["linked"].is_boolean() && m["suspected_by"].is_array()
                  && m["seen_by"].is_object());
    // Every member answered with its own view.
    EXPECT_EQ(j["views"]["answered"].size(), 3u) << j.dump();

    auto rep = c->Get("/v1/replicas");
    ASSERT_TRUE(rep);
    ASSERT_EQ(rep->status, 200);
    auto rj = json::parse(rep->body)["replica"];
    EXPECT_EQ(rj["role"], id == leader ? "primary" : "secondary");
    EXPECT_TRUE(rj["commit_lsn"].is_number() && rj["applied_lsn"].is_number());
    EXPECT_TRUE(rj["lag"].is_array());

    auto none = c->Get("/v1/nothing");
    ASSERT_TRUE(none);
    EXPECT_EQ(none->status, 404);
    EXPECT_TRUE(json::parse(none->body)["error"].is_string());
  }

  // kill -9 of a follower: the leader's /v1/cluster says who suspects it and
  // that it did not answer.
  uint64_t victim = 0;
  int victim_pid = 0;
  for (auto& n : st["nodes"])
    if (n["id"].get<uint64_t>() != leader) {
      victim = n["id"].get<uint64_t>();
      victim_pid = n["pid"].get<int>();
    }
  ASSERT_GT(victim_pid, 0);
  auto c = client(http[leader], false);
  // SIGSTOP first: the stopped member accepts the leader's connection but
  // never answers; /v1/cluster still answers within its bound on the
  // members' views (400 ms) and says which member's view is missing.
  ASSERT_EQ(::kill(victim_pid, SIGSTOP), 0);
  for (int round = 0; round < 3; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = c->Get("/v1/cluster");
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - t0);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
    auto j = json::parse(r->body);
    std::printf("[cluster] /v1/cluster with node %llu stopped: %lld ms\n",
                static_cast<unsigned long long>(victim),
                static_cast<long long>(took.count()));
    EXPECT_LT(took.count(), 2000) << "a stopped member held /v1/cluster";
    ASSERT_EQ(j["views"]["unanswered"].size(), 1u) << j.dump();
    EXPECT_EQ(j["views"]["unanswered"][0]["id"], victim) << j.dump();
    EXPECT_EQ(j["views"]["answered"].size(), 2u) << j.dump();
  }
  ASSERT_EQ(::kill(victim_pid, SIGCONT), 0);
  ASSERT_EQ(::kill(victim_pid, SIGKILL), 0);
  json seen;
  EXPECT_TRUE(eventually(
      [&] {
        auto r = c->Get("/v1/cluster");
        if (!r || r->status != 200)
          return false;
        seen = json::parse(r->body);
        for (auto& m : seen["members"])
          if (m["id"] == victim)
            for (auto& by : m["suspected_by"])
              if (by == leader)
                return seen["views"]["unanswered"].size() == 1
                       && seen["views"]["unanswered"][0]["id"] == victim;
        return false;
      },
      std::chrono::seconds(5)))
      << seen.dump();
}

/// An HTTPS client of `cluster up`'s node at `host_port`, with or without the
/// client certificate `cluster up` makes.
std::unique_ptr<httplib::SSLClient> tls_client(const std::filesystem::path& tls,
                                               const std::string& host_port,
                                               bool with_cert) {
  auto colon = host_port.rfind(':');
  auto host = host_port.substr(0, colon);
  auto port = std::stoi(host_port.substr(colon + 1));
  auto c = with_cert ? std::make_unique<httplib::SSLClient>(
               host, port, (tls / "client.pem").string(), (tls / "client.key").string())
                     : std::make_unique<httplib::SSLClient>(host, port);
  c->enable_server_certificate_verification(false);
  c->set_connection_timeout(2);
  c->set_read_timeout(8); // the store's answer is bounded by 5 s
  return c;
}

json parsed(const httplib::Result& r) {
  return r ? json::parse(r->body, nullptr, false) : json{};
}

TEST_F(http_api_process, data_routes_kv_jobs_and_leases_over_tls) {
  up(3);
  auto st = status();
  auto tls = dir / "tls";
  auto leader = st["nodes"][0]["leader"].get<uint64_t>();
  // A follower's API: its answers come from the primary through the client.
  std::string addr;
  for (auto& n : st["nodes"])
    if (n["id"].get<uint64_t>() != leader)
      addr = n["http"].get<std::string>();
  ASSERT_FALSE(addr.empty());
  auto writer = tls_client(tls, addr, true);
  auto reader = tls_client(tls, addr, false);
  ASSERT_TRUE(eventually(
      [&] {
        auto r = writer->Get("/readyz");
        return r && r->status == 200;
      },
      std::chrono::seconds(10)));

  // Writes need the client certificate: refused, counted, nothing written.
  auto refused = reader->Put("/v1/kv/greeting", R"({"value":"hi"})", "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 403);
  EXPECT_TRUE(parsed(refused)["error"].is_string());
  auto job_refused = reader->Post(
      "/v1/jobs", R"({"steps":[{"kind":"sleep","payload":"1"}]})", "application/json");
  ASSERT_TRUE(job_refused);
  EXPECT_EQ(job_refused->status, 403);
  auto absent = reader->Get("/v1/kv/greeting");
  ASSERT_TRUE(absent);
  EXPECT_EQ(absent->status, 404);

  // The store client may still be starting right after `cluster up`.
  int put_status = 0;
  json put;
  ASSERT_TRUE(eventually(
      [&] {
        auto r = writer->Put("/v1/kv/greeting", R"({"value":"hi"})", "application/json");
        put_status = r ? r->status : 0;
        put = parsed(r);
        return put_status != 0 && put_status != 503;
      },
      std::chrono::seconds(10)));
  ASSERT_EQ(put_status, 200) << put.dump();
  EXPECT_EQ(put["node"], leader);
  EXPECT_GT(put["lsn"].get<uint64_t>(), 0u);
  auto got = reader->Get("/v1/kv/greeting");
  ASSERT_TRUE(got);
  ASSERT_EQ(got->status, 200);
  EXPECT_EQ(parsed(got)["value"], "hi");
  // What `conclave kv` reads is what the API wrote, and the reverse.
  auto cli = run_conclave("kv --dir " + dir.string() + " get greeting");
  EXPECT_EQ(cli.status, 0);
  EXPECT_EQ(cli.out, "hi\n");
  ASSERT_EQ(run_conclave("kv --dir " + dir.string() + " put from-cli yes").status, 0);
  EXPECT_EQ(parsed(reader->Get("/v1/kv/from-cli"))["value"], "yes");

  for (auto k : {"p/1", "p/2", "p/3"})
    ASSERT_EQ(writer
                  ->Put((std::string{"/v1/kv/"} + k).c_str(), R"({"value":"v"})",
                        "application/json")
                  ->status,
              200);
  auto page = parsed(reader->Get("/v1/kv?prefix=p/&limit=2"));
  ASSERT_EQ(page["items"].size(), 2u) << page.dump();
  EXPECT_EQ(page["items"][0]["key"], "p/1");
  EXPECT_EQ(page["next"], "p/2");
  auto rest = parsed(reader->Get("/v1/kv?prefix=p/&limit=2&after=p/2"));
  ASSERT_EQ(rest["items"].size(), 1u);
  EXPECT_TRUE(rest["next"].is_null());

  // Compare-and-put: a stale expectation is 409 and changes nothing.
  auto stale = writer->Post(
      "/v1/kv", R"({"key":"greeting","expected":"bye","value":"x"})", "application/json");
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 409);
  EXPECT_TRUE(parsed(stale)["error"].is_string());
  EXPECT_EQ(parsed(reader->Get("/v1/kv/greeting"))["value"], "hi");
  auto swap =
      writer->Post("/v1/kv", R"({"key":"greeting","expected":"hi","value":"hello"})",
                   "application/json");
  ASSERT_TRUE(swap);
  EXPECT_EQ(swap->status, 200);
  EXPECT_EQ(parsed(reader->Get("/v1/kv/greeting"))["value"], "hello");
  auto del = writer->Delete("/v1/kv/greeting");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 200);
  EXPECT_EQ(reader->Get("/v1/kv/greeting")->status, 404);

  // Jobs: submit, follow to processed, list, explain, cancel and resubmit.
  auto sub = writer->Post("/v1/jobs",
                          R"({"id":"web-1","steps":[{"kind":"sleep","payload":"10"}]})",
                          "application/json");
  ASSERT_TRUE(sub);
  ASSERT_EQ(sub->status, 201) << sub->body;
  EXPECT_EQ(parsed(sub)["id"], "web-1");
  EXPECT_TRUE(eventually(
      [&] { return parsed(reader->Get("/v1/jobs/web-1"))["state"] == "processed"; },
      std::chrono::seconds(15)));
  auto one = parsed(reader->Get("/v1/jobs/web-1"));
  EXPECT_EQ(one["steps"].size(), 1u);
  auto listed = parsed(reader->Get("/v1/jobs?state=processed&limit=10"));
  ASSERT_TRUE(listed["jobs"].is_array()) << listed.dump();
  ASSERT_EQ(listed["jobs"].size(), 1u);
  EXPECT_EQ(listed["jobs"][0]["id"], "web-1");
  EXPECT_EQ(listed["jobs"][0]["state"], "processed");
  EXPECT_TRUE(listed["jobs"][0]["steps"].is_array());
  EXPECT_TRUE(listed["next"].is_null());
  auto explained = reader->Get("/v1/jobs/web-1/explain");
  ASSERT_TRUE(explained);
  EXPECT_EQ(explained->status, 200);
  EXPECT_EQ(parsed(explained)["id"], "web-1");
  EXPECT_TRUE(parsed(explained)["text"].is_string());
  EXPECT_EQ(writer->Post("/v1/jobs/web-1/cancel", "", "application/json")->status, 409);
  EXPECT_EQ(reader->Get("/v1/jobs/nope")->status, 404);
  auto bad_kind = writer->Post("/v1/jobs", R"({"steps":[{"kind":"no-such-kind"}]})",
                               "application/json");
  EXPECT_EQ(bad_kind->status, 400);
  ASSERT_EQ(writer
                ->Post("/v1/jobs",
                       R"({"id":"web-2","steps":[{"kind":"sleep","payload":"60000"}]})",
                       "application/json")
                ->status,
            201);
  auto cancelled = writer->Post("/v1/jobs/web-2/cancel", "", "application/json");
  ASSERT_TRUE(cancelled);
  EXPECT_EQ(cancelled->status, 200) << cancelled->body;
  EXPECT_EQ(parsed(cancelled)["state"], "cancelled");
  auto again = writer->Post("/v1/jobs/web-2/resubmit", "", "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200) << again->body;
  EXPECT_TRUE(parsed(again)["state"].is_string());
  writer->Post("/v1/jobs/web-2/cancel", "", "application/json");

  // Leases: a `conclave lock` holder is seen with its token.
  EXPECT_TRUE(parsed(reader->Get("/v1/leases/web-lock"))["holders"].empty());
  background_lock lock{"web-lock", dir};
  json held;
  EXPECT_TRUE(eventually(
      [&] {
        held = parsed(reader->Get("/v1/leases/web-lock"));
        return held["holders"].size() == 1;
      },
      std::chrono::seconds(10)))
      << held.dump();
  if (held["holders"].size() == 1) {
    EXPECT_GT(held["holders"][0]["token"].get<uint64_t>(), 0u);
  }
  // A second `conclave lock --wait` queues behind it: shown as a waiter.
  background_lock second{"web-lock", dir, "--wait 1m"};
  EXPECT_TRUE(eventually(
      [&] {
        held = parsed(reader->Get("/v1/leases/web-lock"));
        return held["waiters"].size() == 1;
      },
      std::chrono::seconds(10)))
      << held.dump();
  if (held["waiters"].size() == 1) {
    EXPECT_EQ(held["waiters"][0]["place"], 1);
    EXPECT_GT(held["waiters"][0]["wait_left_ms"].get<int64_t>(), 0);
    EXPECT_NE(held["waiters"][0]["holder"], held["holders"][0]["holder"]);
  }
  auto all = parsed(reader->Get("/v1/leases"));
  ASSERT_TRUE(all["leases"].is_array()) << all.dump();
  bool listed_lock = false;
  for (auto& l : all["leases"])
    listed_lock = listed_lock || l["name"] == "web-lock";
  EXPECT_TRUE(listed_lock) << all.dump();
}

TEST_F(http_api_process, malformed_requests_get_4xx_with_a_json_error_and_are_counted) {
  up(1, "--insecure");
  auto st = status();
  auto addr = st["nodes"][0]["http"].get<std::string>();
  auto metrics = st["nodes"][0]["metrics_url"].get<std::string>();
  auto metrics_addr = metrics.substr(7, metrics.find("/metrics") - 7);

  const char noise[] = "\x16\x03\x01\x02\x00\x01\xff garbage\r\n\r\n";
  auto garbage = raw_exchange(addr, std::string(noise, sizeof(noise) - 1));
  EXPECT_EQ(status_of(garbage), 400) << garbage;
  EXPECT_TRUE(body_of(garbage)["error"].is_string()) << garbage;

  std::string big_header = "GET /livez HTTP/1.0\r\nHost: x\r\n";
  for (int i = 0; i < 40; ++i)
    big_header +=
        "X-Filler-" + std::to_string(i) + ": " + std::string(1000, 'a') + "\r\n";
  auto headers = raw_exchange(addr, big_header + "\r\n");
  EXPECT_EQ(status_of(headers), 431) << headers.substr(0, 200);
  EXPECT_TRUE(body_of(headers)["error"].is_string());

  auto body = raw_exchange(addr, "PUT /v1/cluster HTTP/1.0\r\nHost: x\r\nContent-Length: "
                                 "100000\r\n\r\n"
                                     + std::string(100000, '{'));
  EXPECT_EQ(status_of(body), 413) << body.substr(0, 200);
  EXPECT_TRUE(body_of(body)["error"].is_string());

  auto method =
      raw_exchange(addr, "POST /v1/cluster HTTP/1.0\r\nHost: x\r\nContent-Length: "
                         "9\r\n\r\n{not json");
  EXPECT_EQ(status_of(method), 405) << method;

  auto m = http_get(metrics_addr, "/metrics");
  for (auto code : {"400", "431", "413", "405"})
    EXPECT_EQ(sample(m, std::string{"conclave_http_rejected_requests_total{status=\""}
                            + code + "\"}"),
              1.0)
        << code << "\n"
        << m;
  // The node answers normally afterwards.
  EXPECT_EQ(status_of(raw_exchange(addr, "GET /livez HTTP/1.0\r\n\r\n")), 200);
}

} // namespace

namespace {

/// The server-sent events in `text` as (id, event, data), complete ones only.
struct sse_event {
  std::string id, event, data;
};
std::vector<sse_event> parse_sse(const std::string& text) {
  std::vector<sse_event> out;
  size_t at = 0;
  for (;;) {
    auto end = text.find("\n\n", at);
    if (end == std::string::npos)
      return out;
    sse_event e;
    std::istringstream in{text.substr(at, end - at)};
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("id: ", 0) == 0)
        e.id = line.substr(4);
      else if (line.rfind("event: ", 0) == 0)
        e.event = line.substr(7);
      else if (line.rfind("data: ", 0) == 0)
        e.data = line.substr(6);
    }
    if (!e.event.empty())
      out.push_back(e);
    at = end + 2;
  }
}

using namespace std::chrono_literals;
using http_watch_process = cluster_test;

TEST_F(http_watch_process,
       a_follower_streams_the_failover_and_a_resumed_stream_replays_it) {
  up(3);
  auto st = status();
  auto leader = st["nodes"][0]["leader"].get<uint64_t>();
  std::string follower_http;
  for (auto& n : st["nodes"])
    if (n["id"].get<uint64_t>() != leader && follower_http.empty())
      follower_http = n["http"].get<std::string>();
  auto colon = follower_http.rfind(':');
  auto host = follower_http.substr(0, colon);
  auto port = std::stoi(follower_http.substr(colon + 1));
  auto client = [&] {
    auto c = std::make_unique<httplib::SSLClient>(host, port);
    c->enable_server_certificate_verification(false);
    c->set_connection_timeout(2);
    c->set_read_timeout(5);
    return c;
  };
  // True for the event that names a leader other than the old one, and for
  // the one that reports the old leader down: by its proof of death (state
  // "down" while its link may still show up) or by its dropped link. Either
  // may come first: with a proof of death the new leader is elected at once,
  // and its announcement can reach this follower before the follower's own
  // proof does.
  auto names_new_leader = [&](const sse_event& e) {
    if (e.event != "leader")
      return false;
    auto l = json::parse(e.data).value("leader", uint64_t{0});
    return l != 0 && l != leader;
  };
  auto reports_old_leader_down = [&](const sse_event& e) {
    if (e.event != "member")
      return false;
    auto m = json::parse(e.data);
    return m["id"] == leader && (m["state"] == "down" || m["linked"] == false);
  };
  // Every stream read below ends by itself within 20 s (the node keeps an
  // idle stream open).
  auto bounded = [](auto&& more) {
    auto until = std::chrono::steady_clock::now() + 20s;
    return [more, until](const std::string& text) {
      return more(text) && text.size() < 1000000
             && std::chrono::steady_clock::now() < until;
    };
  };
  // Reads until both of those events arrived.
  auto read_failover = [&](std::string& text) {
    auto more = bounded([&](const std::string& t) {
      bool named = false, down = false;
      for (auto& e : parse_sse(t)) {
        named = named || names_new_leader(e);
        down = down || reports_old_leader_down(e);
      }
      return !(named && down);
    });
    client()->Get("/v1/watch", [&](const char* d, size_t n) {
      text.append(d, n);
      return more(text);
    });
  };
  std::string live;
  std::thread reader{[&] { read_failover(live); }};
  // The stream is open once its hello arrived.
  ASSERT_TRUE(eventually([&] { return has(live, "event: hello"); }, 5s)) << live;
  kill(leader, "KILL");
  reader.join();
  auto events = parse_sse(live);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].event, "hello");
  std::vector<sse_event> changes(events.begin() + 1, events.end());
  for (auto& e : changes)
    EXPECT_FALSE(e.id.empty()) << e.event;
  auto named = std::find_if(changes.begin(), changes.end(), names_new_leader);
  auto down = std::find_if(changes.begin(), changes.end(), reports_old_leader_down);
  ASSERT_NE(named, changes.end()) << live;
  ASSERT_NE(down, changes.end()) << live;
  // Up to the later of the two (the chunk may hold more): at least two
  // changes, so the first is not the last.
  changes.erase(std::max(named, down) + 1, changes.end());
  ASSERT_GE(changes.size(), 2u) << live;
  auto last = changes.back();
  auto until_last = bounded(
      [&](const std::string& text) { return !has(text, "id: " + last.id + "\n"); });

  // Resuming after the first change replays every later one, same ids.
  std::string resumed;
  client()->Get("/v1/watch", {{"Last-Event-ID", changes.front().id}},
                [&](const char* d, size_t n) {
                  resumed.append(d, n);
                  return until_last(resumed);
                });
  auto again = parse_sse(resumed);
  std::vector<std::string> want, got;
  for (size_t i = 1; i < changes.size(); ++i)
    want.push_back(changes[i].id);
  for (auto& e : again)
    if (!e.id.empty() && (got.empty() || got.back() != last.id))
      got.push_back(e.id); // up to `last` (its chunk may hold later events)
  EXPECT_EQ(got, want) << resumed;
  for (auto& e : again)
    EXPECT_NE(e.event, "reset") << resumed;

  // An id from another run of the node: reset first, then what is kept.
  std::string other;
  auto until_last_again = bounded(
      [&](const std::string& text) { return !has(text, "id: " + last.id + "\n"); });
  client()->Get("/v1/watch", {{"Last-Event-ID", "1-1"}}, [&](const char* d, size_t n) {
    other.append(d, n);
    return until_last_again(other);
  });
  auto o = parse_sse(other);
  ASSERT_GE(o.size(), 2u) << other;
  EXPECT_EQ(o[1].event, "reset") << other;
}

TEST_F(http_watch_process, a_follower_streams_job_transitions_and_lease_grants) {
  up(3);
  auto st = status();
  auto leader = st["nodes"][0]["leader"].get<uint64_t>();
  std::string follower_http, leader_http;
  for (auto& n : st["nodes"]) {
    if (n["id"].get<uint64_t>() == leader)
      leader_http = n["http"].get<std::string>();
    else if (follower_http.empty())
      follower_http = n["http"].get<std::string>();
  }
  ASSERT_FALSE(follower_http.empty());
  ASSERT_FALSE(leader_http.empty());
  auto tls = dir / "tls";
  // The follower's stream, read until the job is processed and the lock's
  // grant arrived (or 40 s: keep-alive comments call back every 5 s).
  std::string live;
  std::mutex mtx;
  auto done = [](const std::string& text) {
    bool processed = false, granted = false;
    for (auto& e : parse_sse(text)) {
      if (e.event == "job" && json::parse(e.data)["id"] == "watch-1"
          && json::parse(e.data)["state"] == "processed")
        processed = true;
      if (e.event == "lease" && json::parse(e.data)["name"] == "watch-lock"
          && json::parse(e.data)["event"] == "granted")
        granted = true;
    }
    return processed && granted;
  };
  auto deadline = std::chrono::steady_clock::now() + 40s;
  std::thread reader{[&] {
    auto c = tls_client(tls, follower_http, false);
    c->Get("/v1/watch", [&](const char* d, size_t n) {
      std::lock_guard<std::mutex> guard{mtx};
      live.append(d, n);
      return !done(live) && std::chrono::steady_clock::now() < deadline;
    });
  }};
  struct join_reader {
    std::thread& t;
    ~join_reader() {
      if (t.joinable())
        t.join();
    }
  } joiner{reader};
  auto text = [&] {
    std::lock_guard<std::mutex> guard{mtx};
    return live;
  };
  ASSERT_TRUE(eventually([&] { return has(text(), "event: hello"); }, 5s)) << text();

  // A job submitted on the leader; the store client may still be starting.
  auto writer = tls_client(tls, leader_http, true);
  int sub_status = 0;
  std::string sub_body;
  ASSERT_TRUE(eventually(
      [&] {
        auto r = writer->Post(
            "/v1/jobs", R"({"id":"watch-1","steps":[{"kind":"sleep","payload":"10"}]})",
            "application/json");
        sub_status = r ? r->status : 0;
        sub_body = r ? r->body : "";
        return sub_status != 0 && sub_status != 503;
      },
      10s));
  ASSERT_EQ(sub_status, 201) << sub_body;

  // A lease taken by `conclave lock`, stopped by its pid whatever happens.
  background_lock lock{"watch-lock", dir};
  reader.join();

  auto events = parse_sse(live);
  ASSERT_TRUE(done(live)) << live;
  std::vector<std::string> states;
  json grant;
  for (auto& e : events) {
    EXPECT_FALSE(e.event != "hello" && e.id.empty()) << e.event;
    if (e.event == "job") {
      auto j = json::parse(e.data);
      if (j["id"] != "watch-1")
        continue;
      EXPECT_NE(j["node"].get<uint64_t>(), leader) << e.data; // the follower's own
      if (states.empty())
        EXPECT_TRUE(j["previous"].is_null()) << e.data;
      else
        EXPECT_EQ(j["previous"], states.back()) << e.data;
      states.push_back(j["state"].get<std::string>());
    }
    if (e.event == "lease" && json::parse(e.data)["name"] == "watch-lock"
        && grant.is_null())
      grant = json::parse(e.data);
  }
  ASSERT_FALSE(states.empty()) << live;
  EXPECT_EQ(states.front(), "pending") << live;
  EXPECT_EQ(states.back(), "processed") << live;
  EXPECT_NE(std::find(states.begin(), states.end(), "processing"), states.end()) << live;
  ASSERT_FALSE(grant.is_null()) << live;
  EXPECT_EQ(grant["event"], "granted");
  EXPECT_GT(grant["token"].get<uint64_t>(), 0u);
  EXPECT_FALSE(grant["holder"].get<std::string>().empty());
  // Made by the follower's own replica: the events name the node streaming.
  EXPECT_NE(grant["node"].get<uint64_t>(), leader);
}

} // namespace

namespace {

/// GET /livez over TLS on a new connection, offering `session` when given;
/// whether the answer was 200, whether the session was resumed, and the
/// session to offer next time (the caller frees it).
struct tls_get_result {
  bool ok = false;
  bool reused = false;
  SSL_SESSION* session = nullptr;
};
tls_get_result tls_livez(const std::string& host_port, SSL_CTX* ctx,
                         SSL_SESSION* session) {
  tls_get_result r;
  int fd = conclave::testing::tcp_connect(host_port, nullptr, std::chrono::seconds(3));
  if (fd < 0)
    return r;
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  if (session)
    SSL_set_session(ssl, session);
  if (SSL_connect(ssl) == 1) {
    std::string req = "GET /livez HTTP/1.0\r\nHost: " + host_port + "\r\n\r\n";
    SSL_write(ssl, req.data(), static_cast<int>(req.size()));
    std::string resp;
    char buf[4096];
    int n;
    while ((n = SSL_read(ssl, buf, sizeof(buf))) > 0)
      resp.append(buf, static_cast<size_t>(n));
    r.ok = resp.rfind("HTTP/1.1 200", 0) == 0;
    r.reused = SSL_session_reused(ssl) == 1;
    r.session = SSL_get1_session(ssl); // TLS 1.3: the ticket came after the handshake
  }
  SSL_shutdown(ssl);
  SSL_free(ssl);
  ::close(fd);
  return r;
}

TEST_F(http_api_process, a_tls_client_resumes_its_session_as_browsers_do) {
  up(1);
  auto addr = status()["nodes"][0]["http"].get<std::string>();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT);
  auto first = tls_livez(addr, ctx, nullptr);
  ASSERT_TRUE(first.ok);
  ASSERT_NE(first.session, nullptr);
  auto second = tls_livez(addr, ctx, first.session);
  EXPECT_TRUE(second.ok) << "the server refused a resumed session";
  EXPECT_TRUE(second.reused);
  SSL_SESSION_free(first.session);
  if (second.session)
    SSL_SESSION_free(second.session);
  SSL_CTX_free(ctx);
}

} // namespace
