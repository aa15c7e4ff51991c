// The pause guard (peer_links) and the connector's redial timing, driven by a
// hand-set clock: no sockets, no sleeping.
#include "runtime/node/peer_links.hpp"
#include "runtime/node/peer_connector.hpp"

#include <gtest/gtest.h>

#include <sstream>

using namespace conclave::node;
using namespace std::chrono_literals;
using time_point = std::chrono::steady_clock::time_point;

namespace {

struct links_fixture : ::testing::Test {
  std::ostringstream log_text;
  std::shared_ptr<peer_links> links;
  time_point t0{std::chrono::seconds(100)};

  links_fixture() {
    node_options o;
    o.id = 1;
    o.listen = "127.0.0.1:7001";
    o.peers = "1@127.0.0.1:7001,2@127.0.0.1:7002";
    auto cfg = make_node_config(o).value();
    auto probe = std::make_shared<node_probe>(
        cfg, std::make_shared<status_writer>("", node_status{}));
    links = std::make_shared<peer_links>(
        membership{"conclave", 1, {2}}, probe,
        std::make_shared<conclave::election::directory_transport>(),
        std::make_shared<node_log>(1, log_format::text, &log_text),
        [this] { return t0; });
    links->set_pause_guard(250ms, 1500ms);
  }
};

} // namespace

TEST_F(links_fixture, regular_ticks_are_no_pause) {
  for (int i = 0; i < 10; ++i)
    links->tick(t0 + i * 50ms);
  EXPECT_FALSE(links->just_resumed(t0 + 460ms));
  EXPECT_EQ(log_text.str().find("paused"), std::string::npos);
}

TEST_F(links_fixture, a_gap_in_the_ticks_opens_the_window_which_then_closes) {
  links->tick(t0);
  links->tick(t0 + 50ms);
  links->tick(t0 + 50ms + 2s); // frozen for two seconds
  EXPECT_NE(log_text.str().find("was paused for 2000 ms"), std::string::npos)
      << log_text.str();
  auto resumed = t0 + 50ms + 2s;
  EXPECT_TRUE(links->just_resumed(resumed + 10ms));
  for (auto t = resumed; t <= resumed + 1500ms; t += 50ms)
    links->tick(t);
  EXPECT_TRUE(links->just_resumed(resumed + 1490ms));
  EXPECT_FALSE(links->just_resumed(resumed + 1510ms));
}

TEST_F(links_fixture, an_overdue_tick_counts_as_a_pause_before_the_main_thread_runs) {
  links->tick(t0);
  EXPECT_FALSE(links->just_resumed(t0 + 200ms));
  EXPECT_TRUE(links->just_resumed(t0 + 300ms)); // no tick since: still frozen
}

TEST(redial_schedule, waits_double_up_to_the_maximum_and_start_over_once_linked) {
  connector_options o;
  o.initial_backoff = 20ms;
  o.max_backoff = 100ms;
  time_point t{std::chrono::seconds(5)};
  redial_schedule s{o, t};
  std::vector<std::chrono::milliseconds> waits;
  for (int i = 0; i < 5; ++i)
    waits.push_back(s.after_failure(t + i * 1s).value());
  EXPECT_EQ(waits,
            (std::vector<std::chrono::milliseconds>{20ms, 40ms, 80ms, 100ms, 100ms}));
  s.reset();
  EXPECT_EQ(s.after_failure(t + 1h), 20ms); // not in repair mode: never gives up
}

TEST(redial_schedule, the_first_two_tick_cuts_in_a_row_redial_at_once) {
  connector_options o;
  o.initial_backoff = 20ms;
  o.max_backoff = 100ms;
  time_point t{std::chrono::seconds(5)};
  redial_schedule s{o, t};
  EXPECT_EQ(s.after_tick_cut(t), 0ms);
  EXPECT_EQ(s.after_tick_cut(t), 0ms);
  // A peer that never answers: waits doubling up to cut_max_backoff (1 s),
  // past max_backoff (100 ms).
  std::vector<std::chrono::milliseconds> waits;
  for (int i = 0; i < 8; ++i)
    waits.push_back(s.after_tick_cut(t).value());
  EXPECT_EQ(waits, (std::vector<std::chrono::milliseconds>{20ms, 40ms, 80ms, 160ms, 320ms,
                                                           640ms, 1000ms, 1000ms}));
  // Another failure in between starts the count again, and waits at most
  // max_backoff.
  EXPECT_EQ(s.after_failure(t), 100ms);
  EXPECT_EQ(s.after_failure(t), 100ms);
  EXPECT_EQ(s.after_tick_cut(t), 0ms);
  s.reset();
  EXPECT_EQ(s.after_tick_cut(t), 0ms);
  EXPECT_EQ(s.after_tick_cut(t), 0ms);
  EXPECT_EQ(s.after_tick_cut(t), 20ms);
}

TEST(redial_schedule, repair_mode_gives_up_after_its_time) {
  connector_options o;
  o.repair = true;
  o.repair_for = 2000ms;
  time_point t{std::chrono::seconds(5)};
  redial_schedule s{o, t};
  EXPECT_TRUE(s.after_failure(t + 1999ms));
  EXPECT_FALSE(s.after_failure(t + 2000ms));
  EXPECT_FALSE(s.after_tick_cut(t + 2000ms));
}

TEST(link_check_timing,
     right_after_a_pause_a_gate_request_waits_briefly_and_a_check_asks_again_at_once) {
  connector_options o;
  o.step_timeout = 1000ms;
  o.check_interval = 500ms;
  o.resumed_request_timeout = 200ms;
  EXPECT_EQ(gate_request_timeout(o, false), 1000ms);
  EXPECT_EQ(gate_request_timeout(o, true), 200ms);
  auto normal = link_check_timing_for(o, false);
  EXPECT_EQ(normal.timeout, 1000ms);
  EXPECT_EQ(normal.retry_after, 500ms);
  auto resumed = link_check_timing_for(o, true);
  EXPECT_EQ(resumed.timeout, 200ms);
  EXPECT_EQ(resumed.retry_after, 0ms);
  // Never longer than a step, never zero (CAF would time out at once).
  o.resumed_request_timeout = 5000ms;
  EXPECT_EQ(gate_request_timeout(o, true), 1000ms);
  o.resumed_request_timeout = 0ms;
  EXPECT_EQ(gate_request_timeout(o, true), 1ms);
}
