#include "runtime/node/status_file.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace conclave::node;
namespace fs = std::filesystem;

namespace {

struct status_file_test : testing::Test {
  fs::path dir = fs::temp_directory_path()
                 / ("conclave-status-" + std::to_string(::getpid()) + "-"
                    + testing::UnitTest::GetInstance()->current_test_info()->name());
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }

  std::string read(const fs::path& p) {
    std::ifstream in{p};
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
};

} // namespace

TEST_F(status_file_test, the_status_round_trips_through_json) {
  node_status s;
  s.id = 3;
  s.cluster = "c";
  s.address = "127.0.0.1:1";
  s.leader = 5;
  s.term = 7;
  s.term_leader = 5;
  s.peers.push_back({5, "127.0.0.1:5", true, "alive"});
  auto back = status_from_json(to_json(s));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->leader, 5u);
  EXPECT_EQ(back->term, 7u);
  ASSERT_EQ(back->peers.size(), 1u);
  EXPECT_TRUE(back->peers[0].connected);
  EXPECT_FALSE(status_from_json("{\"id\": "));
}

TEST_F(status_file_test, the_replica_summary_round_trips_through_json) {
  node_status s;
  s.id = 1;
  replica_summary r;
  r.role = "primary";
  r.commit_lsn = 12;
  r.digest = 0x9f2c61d0a4b3e871ull;
  r.snapshots_installed = 2;
  r.session_duplicates = 4;
  r.healing = true;
  s.replica = r;
  auto back = status_from_json(to_json(s));
  ASSERT_TRUE(back && back->replica);
  EXPECT_EQ(*back->replica, r);
  EXPECT_EQ(back->replica->session_duplicates, 4u);
  EXPECT_TRUE(back->replica->healing);
}

TEST_F(status_file_test, the_file_is_replaced_and_no_temporary_is_left) {
  auto p = dir / "status.json";
  ASSERT_TRUE(write_file_atomically(p.string(), "one"));
  ASSERT_TRUE(write_file_atomically(p.string(), "two"));
  EXPECT_EQ(read(p), "two");
  EXPECT_FALSE(fs::exists(dir / "status.json.tmp"));
}

TEST_F(status_file_test, the_writer_stamps_a_leader_change_and_tracks_links) {
  node_status s;
  s.id = 1;
  s.peers.push_back({2, "127.0.0.1:2", false, "alive"});
  auto p = dir / "status.json";
  status_writer w{p.string(), s};
  EXPECT_EQ(status_from_json(read(p))->leader, 0u);
  w.update_leadership(2, 1, 2, false, false, {{2, "alive"}});
  auto first = status_from_json(read(p));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->leader, 2u);
  EXPECT_GT(first->leader_since_us, 0);
  w.update_leadership(2, 1, 2, false, false, {{2, "alive"}});
  EXPECT_EQ(status_from_json(read(p))->leader_since_us, first->leader_since_us);
  w.set_connected(2, true);
  EXPECT_TRUE(status_from_json(read(p))->peers[0].connected);
  w.set_running(false);
  EXPECT_FALSE(status_from_json(read(p))->running);
}

TEST_F(status_file_test, the_writer_stamps_when_the_leader_starts_acting) {
  node_status s;
  s.id = 1;
  auto p = dir / "status.json";
  status_writer w{p.string(), s};
  w.update_leadership(1, 4, 1, true, false, {}); // elected, lease not granted yet
  EXPECT_EQ(status_from_json(read(p))->acting_since_us, 0);
  w.update_leadership(1, 4, 1, true, true, {});
  auto acting = status_from_json(read(p));
  ASSERT_TRUE(acting);
  EXPECT_GE(acting->acting_since_us, acting->leader_since_us);
  EXPECT_GT(acting->acting_since_us, 0);
  w.update_leadership(1, 4, 1, true, true, {}); // still acting: same stamp
  EXPECT_EQ(status_from_json(read(p))->acting_since_us, acting->acting_since_us);
}

TEST_F(status_file_test, the_replica_section_round_trips_and_is_absent_without_one) {
  node_status s;
  s.id = 2;
  auto back = status_from_json(to_json(s));
  ASSERT_TRUE(back);
  EXPECT_FALSE(back->replica);
  auto p = dir / "status.json";
  status_writer w{p.string(), s};
  replica_summary r;
  r.role = "primary";
  r.serving = true;
  r.commit_lsn = 9;
  r.applied_lsn = 9;
  r.durable_lsn = 10;
  r.last_lsn = 11;
  r.digest = 0xfedcba9876543210ull;
  w.update_replica(r);
  auto read_back = status_from_json(read(p));
  ASSERT_TRUE(read_back && read_back->replica);
  EXPECT_EQ(*read_back->replica, r);
  EXPECT_NE(read(p).find("\"fedcba9876543210\""), std::string::npos);
}
