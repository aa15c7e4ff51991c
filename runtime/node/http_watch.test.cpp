#include "runtime/node/http_watch.hpp"

#include "protocols/workflow/records.hpp"
#include "protocols/workflow/store_layout.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <thread>

using namespace conclave::node;
using nlohmann::json;

namespace {

std::vector<uint64_t> seqs(const watch_batch& b) {
  std::vector<uint64_t> out;
  for (auto& e : b.events)
    out.push_back(e.seq);
  return out;
}

TEST(http_watch, event_ids_round_trip_and_reject_garbage) {
  auto p = parse_event_id(event_id(1700, 42));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->boot, 1700);
  EXPECT_EQ(p->seq, 42u);
  for (auto bad : {"", "12", "-3", "3-", "a-1", "1-b", "1-2x", "1--2"})
    EXPECT_FALSE(parse_event_id(bad)) << bad;
}

TEST(http_watch, a_reader_gets_what_came_after_its_position_in_order) {
  watch_ring r{7, 8};
  for (int i = 0; i < 5; ++i)
    r.publish("leader", "{}");
  EXPECT_EQ(r.last_seq(), 5u);
  auto b = r.read(watch_position{7, 2}, 100);
  EXPECT_FALSE(b.gap);
  EXPECT_EQ(seqs(b), (std::vector<uint64_t>{3, 4, 5}));
  EXPECT_EQ(seqs(r.read(watch_position{7, 2}, 2)), (std::vector<uint64_t>{3, 4}));
  auto none = r.read(watch_position{7, 5}, 100);
  EXPECT_TRUE(none.events.empty());
  EXPECT_FALSE(none.gap);
  // A new client (no position) starts after the newest event.
  EXPECT_TRUE(r.read(std::nullopt, 100).events.empty());
}

TEST(http_watch, resuming_within_the_window_misses_nothing_beyond_it_says_gap) {
  watch_ring r{7, 4};
  for (int i = 0; i < 10; ++i)
    r.publish("member", std::to_string(i));
  // Kept: 7..10. A client that saw 6 misses nothing.
  auto ok = r.read(watch_position{7, 6}, 100);
  EXPECT_FALSE(ok.gap);
  EXPECT_EQ(seqs(ok), (std::vector<uint64_t>{7, 8, 9, 10}));
  EXPECT_EQ(ok.events.front().data, "6");
  // One that saw 5 lost 6: it gets everything kept and is told.
  auto lost = r.read(watch_position{7, 5}, 100);
  EXPECT_TRUE(lost.gap);
  EXPECT_EQ(seqs(lost), (std::vector<uint64_t>{7, 8, 9, 10}));
}

TEST(http_watch, a_position_from_another_life_or_the_future_is_a_gap) {
  watch_ring r{9, 16};
  r.publish("leader", "a");
  r.publish("leader", "b");
  auto other = r.read(watch_position{8, 1}, 100);
  EXPECT_TRUE(other.gap);
  EXPECT_EQ(seqs(other), (std::vector<uint64_t>{1, 2}));
  auto future = r.read(watch_position{9, 50}, 100);
  EXPECT_TRUE(future.gap);
  EXPECT_EQ(seqs(future), (std::vector<uint64_t>{1, 2}));
}

TEST(http_watch, wait_returns_on_publish_on_close_and_on_its_deadline) {
  watch_ring r{1, 16};
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::thread publisher{[&] { r.publish("leader", "x"); }};
  auto b = r.wait(watch_position{1, 0}, 10, until);
  publisher.join();
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_EQ(b.events[0].data, "x");
  // Nothing new and a deadline already past: an empty batch at once.
  auto idle = r.wait(watch_position{1, 1}, 10, std::chrono::steady_clock::now());
  EXPECT_TRUE(idle.events.empty());
  EXPECT_FALSE(idle.closed);
  std::thread closer{[&] { r.close(); }};
  auto closed = r.wait(watch_position{1, 1}, 10, until);
  closer.join();
  EXPECT_TRUE(closed.closed);
}

TEST(http_watch, stream_slots_are_bounded) {
  watch_ring r{1, 16, 2};
  EXPECT_TRUE(r.try_open_stream());
  EXPECT_TRUE(r.try_open_stream());
  EXPECT_FALSE(r.try_open_stream());
  EXPECT_EQ(r.open_streams(), 2u);
  r.close_stream();
  EXPECT_TRUE(r.try_open_stream());
  r.close();
  r.close_stream();
  EXPECT_FALSE(r.try_open_stream()) << "a closed ring opens no stream";
}

node_status three_nodes() {
  node_status s;
  s.id = 1;
  s.leader = 3;
  s.term = 4;
  s.term_leader = 3;
  s.peers = {{2, "127.0.0.1:2", true, "alive"}, {3, "127.0.0.1:3", true, "alive"}};
  return s;
}

TEST(http_watch, status_changes_become_leader_member_and_running_events) {
  auto before = three_nodes();
  EXPECT_TRUE(status_events(before, before, 5).empty());

  auto after = before;
  after.peers[1].connected = false;
  after.peers[1].state = "down";
  after.leader = 2;
  after.term = 5;
  after.term_leader = 2;
  auto ev = status_events(before, after, 99);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].first, "leader");
  auto l = json::parse(ev[0].second);
  EXPECT_EQ(l["leader"], 2);
  EXPECT_EQ(l["term"]["epoch"], 5);
  EXPECT_EQ(l["node"], 1);
  EXPECT_EQ(l["at_us"], 99);
  EXPECT_EQ(ev[1].first, "member");
  auto m = json::parse(ev[1].second);
  EXPECT_EQ(m["id"], 3);
  EXPECT_EQ(m["state"], "down");
  EXPECT_EQ(m["linked"], false);

  auto acting = three_nodes();
  acting.leader = 1;
  acting.term_leader = 1;
  acting.is_leader = true;
  auto acting2 = acting;
  acting2.acting = true;
  auto a = status_events(acting, acting2, 1);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(json::parse(a[0].second)["acting"], true);

  auto stopped = before;
  stopped.running = false;
  auto s = status_events(before, stopped, 1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].first, "running");
}

TEST(http_watch, sse_frames_carry_the_resumable_id) {
  watch_event e{12, "leader", R"({"leader":2})"};
  EXPECT_EQ(sse_frame(77, e), "id: 77-12\nevent: leader\ndata: {\"leader\":2}\n\n");
}

TEST(http_watch, a_status_writer_listener_sees_every_change_in_order) {
  status_writer w{"", three_nodes()};
  watch_ring r{1, 64};
  node_status prev = w.snapshot();
  w.set_listener([&](const node_status& now) {
    for (auto& [type, data] : status_events(prev, now, 0))
      r.publish(type, data);
    prev = now;
  });
  w.update_leadership(2, 5, 2, false, false, {{2, "alive"}, {3, "down"}});
  w.set_connected(3, false);
  w.update_leadership(2, 5, 2, false, false, {{2, "alive"}, {3, "down"}}); // no change
  auto b = r.read(watch_position{1, 0}, 100);
  ASSERT_EQ(b.events.size(), 3u);
  EXPECT_EQ(b.events[0].type, "leader");
  EXPECT_EQ(b.events[1].type, "member");
  EXPECT_EQ(json::parse(b.events[1].data)["state"], "down");
  EXPECT_EQ(json::parse(b.events[2].data)["linked"], false);
  w.set_listener(nullptr);
}

} // namespace

namespace {

conclave::workflow::job_view two_step_job(conclave::workflow::job_state s,
                                          uint32_t current, uint32_t attempt) {
  namespace wf = conclave::workflow;
  wf::job_view v;
  v.job.id = wf::job_id{"j-1"};
  v.job.state = s;
  v.job.step_count = 2;
  v.job.current = wf::step_index{current};
  for (uint32_t i = 0; i < 2; ++i) {
    wf::step_record r;
    r.job = v.job.id;
    r.index = wf::step_index{i};
    r.spec.agent_kind = "echo";
    r.attempt = wf::attempt{i == current ? attempt : 0};
    v.steps.push_back(r);
  }
  return v;
}

conclave::replication::observed_write
job_write(const std::optional<conclave::workflow::job_view>& before,
          const std::optional<conclave::workflow::job_view>& after) {
  conclave::replication::observed_write w;
  w.collection = conclave::workflow::layout::jobs;
  w.key = "j-1";
  if (before)
    w.before = conclave::workflow::encode_doc(*before);
  if (after)
    w.after = conclave::workflow::encode_doc(*after);
  return w;
}

} // namespace

TEST(http_watch, job_writes_become_job_events_only_on_state_or_step_changes) {
  namespace wf = conclave::workflow;
  using conclave::replication::committed_changes;
  using conclave::replication::lsn;
  auto pending = two_step_job(wf::job_state::pending, 0, 0);
  auto running = two_step_job(wf::job_state::processing, 0, 1);
  auto running_again = running; // a change of something else: a new lock
  running_again.steps[0].agent = 7;
  auto second = two_step_job(wf::job_state::processing, 1, 3);
  auto done = two_step_job(wf::job_state::processed, 2, 3);
  committed_changes c;
  c.at = lsn{12};
  c.writes = {job_write(std::nullopt, pending), job_write(pending, running),
              job_write(running, running_again), job_write(running_again, second),
              job_write(second, done)};
  // Not a job document: other collections, garbage, a removal.
  c.writes.push_back({"wf.ready", "x", std::nullopt, std::string{"r"}});
  c.writes.push_back({wf::layout::jobs, "j-2", std::nullopt, std::string{"garbage"}});
  c.writes.push_back({wf::layout::jobs, "j-3", wf::encode_doc(done), std::nullopt});
  auto ev = conclave::node::store_events(c, 3, 1000);
  ASSERT_EQ(ev.size(), 4u);
  std::vector<std::pair<std::string, std::string>> moves{{"pending", ""},
                                                         {"processing", "pending"},
                                                         {"processing", "processing"},
                                                         {"processed", "processing"}};
  std::vector<uint32_t> steps{0, 0, 1, 2};
  for (size_t i = 0; i < ev.size(); ++i) {
    EXPECT_EQ(ev[i].first, "job");
    auto j = nlohmann::json::parse(ev[i].second);
    EXPECT_EQ(j["node"], 3);
    EXPECT_EQ(j["id"], "j-1");
    EXPECT_EQ(j["state"], moves[i].first) << i;
    if (moves[i].second.empty())
      EXPECT_TRUE(j["previous"].is_null());
    else
      EXPECT_EQ(j["previous"], moves[i].second) << i;
    EXPECT_EQ(j["step"], steps[i]) << i;
    EXPECT_EQ(j["steps"], 2);
    EXPECT_EQ(j["lsn"], 12);
    EXPECT_EQ(j["at_us"], 1000);
  }
  // A finished job names its last step's attempt.
  EXPECT_EQ(nlohmann::json::parse(ev[3].second)["attempt"], 0);
  EXPECT_EQ(nlohmann::json::parse(ev[1].second)["attempt"], 1);
  EXPECT_EQ(nlohmann::json::parse(ev[2].second)["attempt"], 3);
}

TEST(http_watch, lease_changes_become_lease_events) {
  using namespace conclave::replication;
  committed_changes c;
  c.at = lsn{40};
  c.leases = {{"m", "a", 40, lease_change_kind::granted},
              {"n", "b", 9, lease_change_kind::released},
              {"o", "c", 7, lease_change_kind::expired}};
  auto ev = conclave::node::store_events(c, 2, 5);
  ASSERT_EQ(ev.size(), 3u);
  std::vector<std::string> kinds{"granted", "released", "expired"};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(ev[i].first, "lease");
    auto j = nlohmann::json::parse(ev[i].second);
    EXPECT_EQ(j["node"], 2);
    EXPECT_EQ(j["name"], c.leases[i].name);
    EXPECT_EQ(j["holder"], c.leases[i].holder);
    EXPECT_EQ(j["token"], c.leases[i].token);
    EXPECT_EQ(j["event"], kinds[i]);
  }
}

TEST(http_watch, the_ring_knows_once_it_was_watched) {
  conclave::node::watch_ring ring{1, 8, 2};
  EXPECT_FALSE(ring.ever_watched());
  ASSERT_TRUE(ring.try_open_stream());
  ring.close_stream();
  EXPECT_TRUE(ring.ever_watched());
}

#include "runtime/node/ui_assets.hpp"

namespace {

std::string asset_text(const std::string& path) {
  auto* a = find_ui_asset(path);
  return a ? std::string(reinterpret_cast<const char*>(a->data), a->size) : "";
}

TEST(http_ui, the_page_is_compiled_in_and_served_under_ui) {
  for (auto p : {"/", "/ui", "/ui/", "/ui/index.html"}) {
    auto* a = find_ui_asset(p);
    ASSERT_NE(a, nullptr) << p;
    EXPECT_EQ(std::string{a->content_type}.rfind("text/html", 0), 0u);
  }
  EXPECT_NE(asset_text("/").find("<title>conclave status</title>"), std::string::npos);
  EXPECT_NE(asset_text("/ui/app.js").find("/v1/watch"), std::string::npos);
  EXPECT_NE(asset_text("/ui/style.css").find("body"), std::string::npos);
  EXPECT_EQ(find_ui_asset("/ui/nothing.js"), nullptr);
  EXPECT_EQ(find_ui_asset("/index.html"), nullptr);
}

} // namespace
