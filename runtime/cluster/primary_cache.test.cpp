// The primary hint of a one-shot client: the cache file (round trip, one
// file per cluster and member list, anything but one number reads as "no
// hint") and the leader the status files of a cluster directory name (the
// newest term wins).
#include "runtime/cluster/primary_cache.hpp"

#include "runtime/cluster/cluster.hpp"
#include "runtime/node/status_file.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace conclave::cluster;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream{p} << text;
}

const std::string peers = "1@127.0.0.1:7001,2@127.0.0.1:7002,3@127.0.0.1:7003";

} // namespace

TEST(primary_cache, what_is_written_is_read_back) {
  conclave::test::temp_dir tmp;
  auto f = primary_cache_file((tmp / "cache").string(), "c1", peers);
  EXPECT_EQ(read_primary_cache(f), 0u); // nothing yet
  write_primary_cache(f, 3);            // creates the directory
  EXPECT_EQ(read_primary_cache(f), 3u);
  write_primary_cache(f, 2);
  EXPECT_EQ(read_primary_cache(f), 2u);
  // No temporary file left behind.
  size_t files = 0;
  for (auto& e : fs::directory_iterator{tmp / "cache"})
    files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
}

TEST(primary_cache, another_cluster_or_member_list_has_its_own_file) {
  auto a = primary_cache_file("/x", "c1", peers);
  EXPECT_NE(a, primary_cache_file("/x", "c2", peers));
  EXPECT_NE(a, primary_cache_file("/x", "c1", "1@127.0.0.1:7001"));
  EXPECT_EQ(a, primary_cache_file("/x", "c1", peers));
  EXPECT_EQ(primary_cache_file("", "c1", peers), "");
}

TEST(primary_cache, anything_but_one_number_is_no_hint) {
  conclave::test::temp_dir tmp;
  auto f = (tmp / "p").string();
  for (std::string text :
       {"", "x\n", "3x\n", "-1\n", " 3\n", "99999999999999999999999\n"}) {
    write(f, text);
    EXPECT_EQ(read_primary_cache(f), 0u) << "'" << text << "'";
  }
  write(f, "7");
  EXPECT_EQ(read_primary_cache(f), 7u);
  // An empty name (no cache directory) reads nothing and writes nothing.
  EXPECT_EQ(read_primary_cache(""), 0u);
  write_primary_cache("", 3);
}

TEST(primary_cache, a_directory_that_cannot_be_made_is_ignored) {
  conclave::test::temp_dir tmp;
  write(tmp / "file", "x");
  auto f = primary_cache_file((tmp / "file" / "sub").string(), "c1", peers);
  write_primary_cache(f, 3); // no exception, nothing written
  EXPECT_EQ(read_primary_cache(f), 0u);
}

TEST(primary_cache, the_default_directory_follows_xdg_then_home) {
  auto saved_xdg = std::getenv("XDG_CACHE_HOME");
  auto saved_home = std::getenv("HOME");
  std::string xdg = saved_xdg ? saved_xdg : "", home = saved_home ? saved_home : "";
  ::setenv("XDG_CACHE_HOME", "/c", 1);
  ::setenv("HOME", "/h", 1);
  EXPECT_EQ(default_cache_dir(), "/c/conclave");
  ::setenv("XDG_CACHE_HOME", "relative", 1); // not absolute: ignored
  EXPECT_EQ(default_cache_dir(), "/h/.cache/conclave");
  ::unsetenv("XDG_CACHE_HOME");
  ::unsetenv("HOME");
  EXPECT_EQ(default_cache_dir(), "");
  saved_xdg ? ::setenv("XDG_CACHE_HOME", xdg.c_str(), 1) : ::unsetenv("XDG_CACHE_HOME");
  saved_home ? ::setenv("HOME", home.c_str(), 1) : ::unsetenv("HOME");
}

TEST(primary_cache, the_status_files_name_the_leader_of_the_newest_term) {
  conclave::test::temp_dir tmp;
  auto dir = tmp.path().string();
  EXPECT_EQ(leader_named_in(dir), 0u); // no cluster.json
  write(tmp / "cluster.json", init_cluster_json("c1", {{1, "127.0.0.1:7001", ""},
                                                       {2, "127.0.0.1:7002", ""},
                                                       {3, "127.0.0.1:7003", ""}}));
  EXPECT_EQ(leader_named_in(dir), 0u); // no status files
  auto status = [&](uint64_t id, uint64_t leader, uint64_t term, bool running) {
    conclave::node::node_status s;
    s.id = id;
    s.leader = leader;
    s.term = term;
    s.running = running;
    write(tmp / ("node-" + std::to_string(id)) / "status.json",
          conclave::node::to_json(s));
  };
  status(1, 1, 4, true); // the old leader's last view (frozen, say)
  EXPECT_EQ(leader_named_in(dir), 1u);
  status(2, 3, 5, true); // the others moved on
  status(3, 3, 5, true);
  EXPECT_EQ(leader_named_in(dir), 3u);
  status(2, 2, 9, false); // a node that shut down names nobody
  EXPECT_EQ(leader_named_in(dir), 3u);
  write(tmp / "node-3" / "status.json", "{not json");
  EXPECT_EQ(leader_named_in(dir), 1u); // only node 1's view is left
}
