// The `conclave` front (runtime/front/) against a 3-node TLS cluster: it
// serves get, put and delete itself, over the members' HTTPS API, and runs
// conclave-core for everything else; when no member answers it over HTTPS
// it hands the operation over with the write's session id and the deadline
// (CONCLAVE_KV_HANDOFF), and conclave-core honours both: a write handed over
// twice with one session is applied once, a deadline already past ends the
// run at once, and a handoff that is not one is refused (exit 2).
#include "tests/process/process_support.hpp"

#include "runtime/cluster/listen_ports.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

using namespace conclave::process_test;
namespace fs = std::filesystem;

namespace {

struct front_test : cluster_test {
  /// `conclave-core` (the full binary beside the front).
  static std::string core() {
    return (fs::path{CONCLAVE_BIN}.parent_path() / "conclave-core").string();
  }

  /// Runs `command` through the shell with stderr folded into the output.
  static run_result shell(const std::string& command) {
    auto r = conclave::testing::run_command(command + " 2>&1");
    return {r.status, std::move(r.out)};
  }

  std::string kv(const std::string& binary) const {
    return binary + " kv --timeout-ms 5000 --dir " + dir.string() + " ";
  }

  /// A handoff as the front makes it: session `id`, deadline `left` from now.
  static std::string handoff(const std::string& id, std::chrono::milliseconds left) {
    auto deadline = std::chrono::steady_clock::now() + left;
    auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch())
            .count();
    return "CONCLAVE_KV_HANDOFF=" + id + "," + std::to_string(ns) + " ";
  }
};

} // namespace

TEST_F(front_test, get_put_and_delete_need_nothing_but_the_front) {
  up(3);
  // The front alone, without conclave-core beside it: the fast path must not
  // need it, and everything else says it is missing.
  auto alone = dir / "alone";
  fs::create_directories(alone);
  fs::copy_file(CONCLAVE_BIN, alone / "conclave");
  auto front = (alone / "conclave").string();
  auto put = shell(kv(front) + "put fruit apple");
  EXPECT_EQ(put.status, 0) << put.out;
  EXPECT_TRUE(has(put.out, "ok lsn ")) << put.out;
  auto get = shell(kv(front) + "get fruit");
  EXPECT_EQ(get.status, 0) << get.out;
  EXPECT_EQ(get.out, "apple\n");
  auto json = shell(kv(front) + "--json put fruit pear");
  EXPECT_EQ(json.status, 0) << json.out;
  auto j = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << json.out;
  EXPECT_GT(j.value("lsn", uint64_t{0}), 0u) << json.out;
  auto del = shell(kv(front) + "delete fruit");
  EXPECT_EQ(del.status, 0) << del.out;
  auto gone = shell(kv(front) + "get fruit");
  EXPECT_EQ(gone.status, 1) << gone.out;
  EXPECT_EQ(gone.out, "conclave: key not found\n");
  for (auto other : {std::string{"list f"}, std::string{"--no-http get fruit"},
                     std::string{"--bogus get fruit"}}) {
    auto r = shell(kv(front) + other);
    EXPECT_EQ(r.status, 1) << other << ": " << r.out;
    EXPECT_TRUE(has(r.out, "cannot run " + (alone / "conclave-core").string()))
        << other << ": " << r.out;
  }
  auto version = shell(front + " --version");
  EXPECT_EQ(version.status, 1) << version.out;
  // With conclave-core beside it, the same front runs it for the rest.
  auto list = shell(kv(CONCLAVE_BIN) + "list \"\"");
  EXPECT_EQ(list.status, 0) << list.out;
  down_and_check_replicas();
}

TEST_F(front_test, members_without_https_hand_the_operation_to_the_cluster_links) {
  up(3);
  // Every member's HTTPS address replaced by a port nothing listens on: the
  // front's connects are refused, it hands over, conclave-core's cluster
  // links do the work.
  auto text = read_file(dir / "cluster.json");
  auto c = nlohmann::json::parse(text);
  auto closed = conclave::cluster::free_listen_ports(1);
  ASSERT_EQ(closed.size(), 1u);
  for (auto& n : c["nodes"])
    n["http"] = "127.0.0.1:" + std::to_string(closed[0]);
  std::ofstream{dir / "cluster.json"} << c.dump(2);
  auto put = shell(kv(CONCLAVE_BIN) + "put handed over");
  EXPECT_EQ(put.status, 0) << put.out;
  auto get = shell(kv(CONCLAVE_BIN) + "get handed");
  EXPECT_EQ(get.status, 0) << get.out;
  EXPECT_EQ(get.out, "over\n");
  std::ofstream{dir / "cluster.json"} << text;
  down_and_check_replicas();
}

TEST_F(front_test, a_handed_over_write_is_applied_once_and_keeps_its_deadline) {
  up(3);
  auto core_kv = core() + " kv --timeout-ms 5000 --dir " + dir.string() + " ";
  // One session, two values: the second is the first's retry, answered with
  // the first's outcome (its lsn) and not applied.
  auto session = std::string{"00112233445566778899aabbccddeeff"};
  auto first = shell(handoff(session, std::chrono::seconds(5)) + core_kv + "put once A");
  EXPECT_EQ(first.status, 0) << first.out;
  auto again = shell(handoff(session, std::chrono::seconds(5)) + core_kv + "put once B");
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(again.out, first.out);
  auto get = shell(kv(CONCLAVE_BIN) + "get once");
  EXPECT_EQ(get.out, "A\n");
  // Another session is another write.
  auto other = shell(handoff("ff", std::chrono::seconds(5)) + core_kv + "put once C");
  EXPECT_EQ(other.status, 0) << other.out;
  EXPECT_NE(other.out, first.out);
  EXPECT_EQ(shell(kv(CONCLAVE_BIN) + "get once").out, "C\n");
  // The front's deadline has passed: nothing is tried, the run ends at once.
  auto start = std::chrono::steady_clock::now();
  auto late =
      shell(handoff(session, std::chrono::milliseconds(-1)) + core_kv + "put once D");
  auto ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_EQ(late.status, 1) << late.out;
  EXPECT_EQ(line_count(late.out), 1u) << late.out;
  // The front may have delivered it: unknown, not failed.
  EXPECT_TRUE(has(late.out, "outcome unknown: no answer within 5000 ms")) << late.out;
  EXPECT_LT(ms, 1000) << late.out;
  auto late_get =
      shell(handoff(session, std::chrono::milliseconds(-1)) + core_kv + "get once");
  EXPECT_EQ(late_get.status, 1) << late_get.out;
  EXPECT_TRUE(has(late_get.out, "error: no answer within 5000 ms")) << late_get.out;
  EXPECT_FALSE(has(late_get.out, "outcome")) << late_get.out;
  EXPECT_EQ(shell(kv(CONCLAVE_BIN) + "get once").out, "C\n");
  // Not a handoff: one line, exit 2, nothing written.
  for (auto bad : {std::string{"garbage"}, std::string{"XYZ,5"}, std::string{"ab,"},
                   std::string{",-3"}}) {
    auto r = shell("CONCLAVE_KV_HANDOFF='" + bad + "' " + core_kv + "put once E");
    EXPECT_EQ(r.status, 2) << bad << ": " << r.out;
    EXPECT_EQ(line_count(r.out), 1u) << bad << ": " << r.out;
    EXPECT_TRUE(has(r.out, "CONCLAVE_KV_HANDOFF")) << r.out;
  }
  EXPECT_EQ(shell(kv(CONCLAVE_BIN) + "get once").out, "C\n");
  // Only the front hands over: a value from outside never reaches
  // conclave-core through it, whichever path the front takes.
  for (auto op : {"list once", "get once"}) {
    auto r = shell("CONCLAVE_KV_HANDOFF=garbage " + kv(CONCLAVE_BIN) + op);
    EXPECT_EQ(r.status, 0) << op << ": " << r.out;
  }
  down_and_check_replicas();
}

TEST_F(front_test, garbage_in_the_cluster_directory_is_one_line_and_exit_2) {
  fs::create_directories(dir);
  for (auto text : {std::string{"garbage{"}, std::string{"[1,2]"},
                    std::string{R"({"cluster":"c","nodes":[{"id":"x","listen":5}]})"},
                    std::string{R"({"cluster":7,"nodes":{}})"}, std::string{}}) {
    std::ofstream{dir / "cluster.json"} << text;
    for (auto op : {"get k", "put k v", "delete k"}) {
      auto r = shell(kv(CONCLAVE_BIN) + op);
      EXPECT_EQ(r.status, 2) << text << " / " << op << ": " << r.out;
      EXPECT_EQ(line_count(r.out), 1u) << text << ": " << r.out;
      EXPECT_TRUE(has(r.out, "no readable cluster.json")) << text << ": " << r.out;
    }
  }
  // No time at all: one line, exit 1, no member asked.
  std::ofstream{dir / "cluster.json"}
      << R"({"cluster":"c","nodes":[{"id":1,"listen":"127.0.0.1:1","http":"127.0.0.1:1"}]})";
  fs::create_directories(dir / "tls");
  auto r = shell(CONCLAVE_BIN + std::string{" kv --timeout-ms 0 --dir "} + dir.string()
                 + " get k");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(line_count(r.out), 1u) << r.out;
  fs::remove(dir / "cluster.json"); // nothing for TearDown to bring down
}
