// A restarted member keeps the lease it may have promised before it stopped
// (DATA_DIR/lease-promise; "Adaptive lease" in docs/design/election.md), as
// real processes: 3 nodes, the leader and one follower killed with SIGKILL,
// the follower restarted with the record its last life left. The survivor
// needs the restarted member for a majority, so no leader may act before
// that member's recorded promise has lapsed. A damaged record is kept aside
// and read as the longest lease the node can have promised.
//
// The record is written by the test, as a crash right after the node's own
// durable write of it would leave it (a node raises its record only on round
// trips above half the lease, which loopback does not have). Bounded: `up`
// 20 s, every wait 15 s; the cluster is always brought down.
#include "runtime/node/promise_file.hpp"
#include "tests/process/process_support.hpp"

#include <cstdio>
#include <ctime>
#include <fstream>
#include <optional>

using namespace conclave::process_test;
using namespace std::chrono_literals;
using conclave::node::file_promise_record;

namespace {

using clock_type = std::chrono::steady_clock;

struct lease_promise_test : cluster_test {
  /// Node ids: the settled leader, and the two followers (lower id first).
  uint64_t leader = 0, follower = 0, survivor = 0;

  void SetUp() override {
    cluster_test::SetUp();
    up(3);
    leader = settled_leader();
    ASSERT_NE(leader, 0u);
    for (uint64_t id = 1; id <= 3; ++id)
      if (id != leader)
        (follower == 0 ? follower : survivor) = id;
  }

  std::filesystem::path node_dir(uint64_t id) const {
    return dir / ("node-" + std::to_string(id));
  }

  /// SIGKILL to `id`, then waits until status shows it not running.
  void kill9(uint64_t id) {
    auto r = run_conclave("cluster kill --dir " + dir.string() + " --node "
                              + std::to_string(id) + " --signal KILL",
                          true);
    ASSERT_EQ(r.status, 0) << r.out;
    ASSERT_TRUE(eventually(
        [&] {
          auto s = run_conclave("cluster status --json --dir " + dir.string());
          auto j = nlohmann::json::parse(s.out, nullptr, false);
          if (!j.is_object())
            return false;
          for (auto& n : j["nodes"])
            if (n["id"].get<uint64_t>() == id)
              return !n["running"].get<bool>();
          return false;
        },
        15s))
        << "node " << id << " still running after SIGKILL";
  }

  /// When a live node was first seen leading and acting, from the restart's
  /// start (-1 ms: never) and by the wall clock.
  struct acted {
    std::chrono::milliseconds after_restart{-1};
    std::chrono::system_clock::time_point wall;
  };

  /// Kills the leader and `follower`, writes `record` as the follower's
  /// DATA_DIR/lease-promise, restarts it and answers when a live node was
  /// first seen leading and acting (looked for until 15 s after `lapse`).
  acted restart_with(const std::string& record, std::chrono::milliseconds lapse) {
    kill9(follower);
    kill9(leader);
    {
      std::ofstream f(node_dir(follower) / file_promise_record::file_name,
                      std::ios::binary | std::ios::trunc);
      f << record;
    }
    auto t0 = clock_type::now();
    auto r = run_conclave("cluster restart --timeout-ms 15000 --dir " + dir.string()
                              + " --node " + std::to_string(follower),
                          true);
    EXPECT_EQ(r.status, 0) << r.out;
    auto bound = t0 + lapse + 15s;
    while (clock_type::now() < bound) {
      auto s = run_conclave("cluster status --json --dir " + dir.string());
      auto seen = clock_type::now();
      auto j = nlohmann::json::parse(s.out, nullptr, false);
      if (j.is_object())
        for (auto& n : j["nodes"])
          if (n["alive"].get<bool>() && n["is_leader"].get<bool>()
              && n["acting"].get<bool>())
            return {std::chrono::duration_cast<std::chrono::milliseconds>(seen - t0),
                    std::chrono::system_clock::now()};
      std::this_thread::sleep_for(20ms);
    }
    return {};
  }

  /// The wall-clock time of the last line of node `id`'s log that holds
  /// `what` (text format: "2026-11-29T20:59:13.123456Z info node 1: ...").
  std::optional<std::chrono::system_clock::time_point>
  logged_at(uint64_t id, const std::string& what) {
    auto log = read_file(node_dir(id) / "node.log");
    auto at = log.rfind(what);
    if (at == std::string::npos)
      return std::nullopt;
    auto line = log.rfind('\n', at);
    line = line == std::string::npos ? 0 : line + 1;
    std::tm tm{};
    unsigned micros = 0;
    if (std::sscanf(log.c_str() + line, "%4d-%2d-%2dT%2d:%2d:%2d.%6uZ", &tm.tm_year,
                    &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &micros)
        != 7)
      return std::nullopt;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return std::chrono::system_clock::from_time_t(::timegm(&tm))
           + std::chrono::microseconds{micros};
  }
};

TEST_F(lease_promise_test,
       a_restarted_member_grants_no_lease_before_its_recorded_promise_lapsed) {
  // 3 s: far above what a restart and an election take here (well under 1 s),
  // so a node that ignored its record would let the survivor act early.
  auto recorded = 3000ms;
  auto acting = restart_with(file_promise_record::encode(recorded), recorded);
  ASSERT_GE(acting.after_restart.count(), 0) << "no leader acted after the restart";
  // Seen acting only after the promise lapsed: the restart began before the
  // node started, so its promise runs at least `recorded` from then.
  EXPECT_GE(acting.after_restart, recorded)
      << "a leader acted " << acting.after_restart.count() << " ms after node "
      << follower << " restarted";
  auto log = read_file(node_dir(follower) / "node.log");
  // Logged when the node read its record, just before its candidate reads it
  // again; the promise runs from that second read.
  auto read = logged_at(follower, "keeping the lease this member may have promised");
  ASSERT_TRUE(read) << log;
  auto started = logged_at(follower, "joined with"); // right after its candidate started
  ASSERT_TRUE(started) << log;
  auto after = std::chrono::duration_cast<std::chrono::milliseconds>(acting.wall - *read);
  EXPECT_GE(after, recorded) << "a leader acted " << after.count() << " ms after node "
                             << follower << " read its record";
  std::cerr << "[ figures ] leader acted " << acting.after_restart.count()
            << " ms after the restart began, " << after.count()
            << " ms after the node read its record, "
            << std::chrono::duration_cast<std::chrono::milliseconds>(acting.wall
                                                                     - *started)
                   .count()
            << " ms after its candidate started (" << recorded.count()
            << " ms recorded)\n";
  down_and_check_replicas();
}

TEST_F(lease_promise_test, a_damaged_record_is_kept_aside_and_read_as_the_longest_lease) {
  // Default guard: lease 100 ms, lease_max 500 ms: a record that cannot be
  // read stands for a 500 ms promise.
  // A node takes longer than that to start here, so the wait is timed from
  // when it read the record (the warning about it is logged then, just before
  // its candidate reads it): the promise runs 510 ms from there (500 ms and
  // the 10 ms drift bound).
  std::string garbage = "CPRM-not-a-record";
  auto acting = restart_with(garbage, 500ms);
  ASSERT_GE(acting.after_restart.count(), 0) << "no leader acted after the restart";
  auto d = node_dir(follower);
  EXPECT_EQ(read_file(d / "lease-promise.damaged"), garbage);
  auto read = logged_at(follower, "lease-promise cannot be read");
  ASSERT_TRUE(read) << read_file(d / "node.log");
  auto after = std::chrono::duration_cast<std::chrono::milliseconds>(acting.wall - *read);
  EXPECT_GE(after, 500ms) << "a leader acted " << after.count() << " ms after node "
                          << follower << " read its damaged record";
  std::cerr << "[ figures ] leader acted " << after.count()
            << " ms after the node read its damaged record\n";
  down_and_check_replicas();
}

} // namespace
