// Multi-process tests of the replicated store: nodes launched by `cluster up`
// (TLS), written and read through `conclave kv`, the primary killed with
// SIGKILL or frozen past its lease with SIGSTOP, a secondary killed while the
// primary checkpoints past it. What must hold: every acknowledged write
// is on the new primary, and the replicas are equal afterwards (same applied lsn, same
// digest of the records applied, from each node's status). Loopback only; bounded (`up`
// 20 s, `kill --wait` 10 s, each kv call 5 s); the cluster is always brought
// down (process_support.hpp).
#include "tests/process/process_support.hpp"

#include <atomic>
#include <mutex>
#include <set>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

using namespace conclave::process_test;
using namespace std::chrono_literals;

namespace {

struct replication_test : cluster_test {
  std::string kv(const std::string& args) {
    return "kv --timeout-ms 5000 --cluster-dir " + dir.string() + " " + args;
  }

  /// (role, applied lsn, digest) of every live node's replica, from status.
  std::vector<std::tuple<std::string, uint64_t, std::string>> replicas() {
    std::vector<std::tuple<std::string, uint64_t, std::string>> out;
    auto r = run_conclave("cluster status --json --dir " + dir.string());
    auto st = nlohmann::json::parse(r.out, nullptr, false);
    if (st.is_discarded())
      return out;
    for (auto& n : st["nodes"])
      if (n["alive"].get<bool>() && n["replica"].is_object())
        out.emplace_back(n["replica"]["role"].get<std::string>(),
                         n["replica"]["applied_lsn"].get<uint64_t>(),
                         n["replica"]["digest"].get<std::string>());
    return out;
  }

  void kill_primary_during_writes(int n);

  /// The replica part of node `id`'s status.json ({} if there is none yet).
  nlohmann::json node_status(uint64_t id) {
    auto text = read_file(dir / ("node-" + std::to_string(id)) / "status.json");
    auto s = nlohmann::json::parse(text, nullptr, false);
    return s.is_discarded() || !s.contains("replica") ? nlohmann::json::object()
                                                      : s["replica"];
  }

  /// Restarts node `id`, whose replica data was damaged: it must heal (log
  /// lines, damaged files kept, replicas equal) and hold every write in
  /// `acked` in its own state.
  void expect_healed(uint64_t id, const std::vector<std::string>& acked) {
    auto restart = run_conclave("cluster restart --timeout-ms 10000 --dir " + dir.string()
                                    + " --node " + std::to_string(id),
                                true);
    ASSERT_EQ(restart.status, 0) << restart.out;
    EXPECT_TRUE(eventually(
        [&] { return replicas_equal(3) && !node_status(id).value("healing", true); },
        10s))
        << node_status(id).dump();
    auto log = read_file(dir / ("node-" + std::to_string(id)) / "node.log");
    EXPECT_NE(log.find("moved it aside"), std::string::npos) << log;
    EXPECT_NE(log.find("rebuilt"), std::string::npos) << log;
    // Nothing deleted: the damaged files are kept beside the new ones.
    size_t aside = 0;
    for (auto& e : std::filesystem::directory_iterator{
             dir / ("node-" + std::to_string(id)) / "replica"})
      aside += e.path().filename().string().rfind("damaged-", 0) == 0 ? 1 : 0;
    EXPECT_GE(aside, 1u);
    for (auto& key : acked) {
      auto r = run_conclave(kv("get " + key + " --at " + std::to_string(id)));
      EXPECT_EQ(r.status, 0) << key;
      EXPECT_EQ(r.out, "v" + key.substr(1) + "\n") << key;
    }
  }

  /// Puts PREFIXi = vi for i in [from, to); the keys acknowledged go to `acked`.
  void write(const std::string& prefix, int from, int to,
             std::vector<std::string>& acked) {
    for (int i = from; i < to; ++i) {
      auto key = prefix + std::to_string(i);
      if (run_conclave(kv("put " + key + " v" + std::to_string(i))).status == 0)
        acked.push_back(key);
    }
  }

  /// Every live replica reports the same applied lsn (> 0) and digest.
  bool replicas_equal(size_t live) {
    auto rs = replicas();
    if (rs.size() != live)
      return false;
    for (auto& r : rs)
      if (std::get<1>(r) == 0 || std::get<1>(r) != std::get<1>(rs.front())
          || std::get<2>(r) != std::get<2>(rs.front()))
        return false;
    return true;
  }
};

} // namespace

/// Writes through kv while the primary of an n-node cluster is killed.
void replication_test::kill_primary_during_writes(int n) {
  auto j = up(n);
  auto leader = j["leader"].get<uint64_t>();
  // The first write also waits for the primary's sync phase.
  ASSERT_EQ(run_conclave(kv("put first 1"), true).status, 0);
  // Writes go on while the primary is killed: record the acknowledged ones.
  // Paced by acknowledgements, not by time (a loaded machine runs kv slowly):
  // the kill comes after 3 acknowledged writes, the writer stops after 3 more.
  std::mutex mtx;
  std::vector<std::string> acked;
  std::atomic<bool> stop{false};
  std::thread writer{[&] {
    for (int i = 0; i < 500 && !stop; ++i) {
      auto key = "k" + std::to_string(i);
      if (run_conclave(kv("put " + key + " v" + std::to_string(i))).status == 0) {
        std::lock_guard<std::mutex> guard{mtx};
        acked.push_back(key);
      }
    }
  }};
  auto acked_count = [&] {
    std::lock_guard<std::mutex> guard{mtx};
    return acked.size();
  };
  bool before = eventually([&] { return acked_count() >= 3; }, 15s);
  auto at_kill = acked_count();
  auto k = kill(leader, "KILL");
  bool after = eventually([&] { return acked_count() >= at_kill + 3; }, 15s);
  stop = true;
  writer.join();
  ASSERT_TRUE(before && after) << acked_count() << " write(s) acknowledged, " << at_kill
                               << " before the kill";
  EXPECT_NE(k["leader"].get<uint64_t>(), leader);
  std::lock_guard<std::mutex> guard{mtx};
  // Every acknowledged write is on the new primary (kv get reads the primary's).
  for (auto& key : acked) {
    auto r = run_conclave(kv("get " + key));
    EXPECT_EQ(r.status, 0) << key;
    EXPECT_EQ(r.out, "v" + key.substr(1) + "\n") << key;
  }
  // The two live replicas converge on the same records.
  EXPECT_TRUE(eventually([&] { return replicas_equal(static_cast<size_t>(n - 1)); }, 5s));
  auto rs = replicas();
  ASSERT_EQ(rs.size(), static_cast<size_t>(n - 1));
  EXPECT_EQ(std::count_if(rs.begin(), rs.end(),
                          [](auto& r) { return std::get<0>(r) == "primary"; }),
            1);
  // The killed node comes back and catches up to the same state.
  auto restart = run_conclave("cluster restart --timeout-ms 10000 --dir " + dir.string()
                                  + " --node " + std::to_string(leader),
                              true);
  ASSERT_EQ(restart.status, 0) << restart.out;
  EXPECT_TRUE(eventually([&] { return replicas_equal(static_cast<size_t>(n)); }, 5s));
  auto again =
      run_conclave(kv("get " + acked.front() + " --at " + std::to_string(leader)));
  EXPECT_EQ(again.status, 0);
  EXPECT_EQ(again.out, "v" + acked.front().substr(1) + "\n");
  down_and_check_replicas();
}

TEST_F(replication_test, kill_9_of_the_primary_loses_no_acknowledged_write) {
  kill_primary_during_writes(3);
}

TEST_F(replication_test, kill_9_of_the_primary_of_five_loses_no_acknowledged_write) {
  kill_primary_during_writes(5);
}

TEST_F(replication_test, a_secondary_sends_the_client_to_the_primary) {
  auto j = up(3, "--insecure");
  auto leader = j["leader"].get<uint64_t>();
  uint64_t secondary = leader == 1 ? 2 : 1;
  ASSERT_EQ(run_conclave(kv("put a 1"), true).status, 0);
  // kv starts at the lowest id; a write acknowledged means it followed the
  // secondary's not_primary answer, or started at the primary.
  auto st = status();
  std::string peers;
  for (auto& n : st["nodes"])
    if (n["id"].get<uint64_t>() == secondary)
      peers = std::to_string(secondary) + "@" + n["address"].get<std::string>();
  for (auto& n : st["nodes"])
    if (n["id"].get<uint64_t>() == leader)
      peers += "," + std::to_string(leader) + "@" + n["address"].get<std::string>();
  auto w =
      run_conclave("kv --json --timeout-ms 5000 --peers " + peers + " put b 2", true);
  ASSERT_EQ(w.status, 0) << w.out;
  EXPECT_EQ(nlohmann::json::parse(w.out)["node"], leader);
  // A read at the secondary is its own applied state, and says so.
  ASSERT_TRUE(eventually(
      [&] {
        auto r = run_conclave("kv --json --timeout-ms 5000 --peers " + peers
                              + " get b --at " + std::to_string(secondary));
        return r.status == 0 && nlohmann::json::parse(r.out)["role"] == "secondary";
      },
      3s));
}

TEST_F(replication_test,
       kv_lists_by_prefix_uses_queues_in_order_and_increments_atomically) {
  up(3, "--insecure");
  for (auto kvp : {"put p2 two", "put p1 one", "put q three"})
    ASSERT_EQ(run_conclave(kv(kvp), true).status, 0) << kvp;
  auto l = run_conclave(kv("list p"), true);
  EXPECT_EQ(l.status, 0);
  EXPECT_EQ(l.out, "p1\tone\np2\ttwo\n");
  auto jobs = [&](const std::string& args) { return kv("--collection jobs " + args); };
  EXPECT_EQ(run_conclave(jobs("enqueue first")).status, 0);
  EXPECT_EQ(run_conclave(jobs("enqueue second")).status, 0);
  auto d1 = run_conclave(jobs("dequeue"));
  EXPECT_EQ(d1.status, 0);
  EXPECT_EQ(d1.out, "first\n");
  EXPECT_EQ(run_conclave(jobs("dequeue")).out, "second\n");
  auto empty = run_conclave(jobs("dequeue"), true);
  EXPECT_EQ(empty.status, 1);
  EXPECT_NE(empty.out.find("queue empty"), std::string::npos) << empty.out;
  // A queue is not a dictionary: refused by the store, not retried.
  auto wrong = run_conclave(jobs("get x"), true);
  EXPECT_EQ(wrong.status, 1);
  EXPECT_NE(wrong.out.find("wrong_kind"), std::string::npos) << wrong.out;
  // incr: read-modify-write in one interactive transaction. Three processes
  // increment one counter at once; none of the 12 increments is lost.
  std::vector<std::thread> incrs;
  std::atomic<int> ok{0};
  for (int p = 0; p < 3; ++p)
    incrs.emplace_back([&] {
      for (int i = 0; i < 4; ++i)
        ok += run_conclave(kv("incr hits"), true).status == 0 ? 1 : 0;
    });
  for (auto& t : incrs)
    t.join();
  EXPECT_EQ(ok.load(), 12);
  EXPECT_EQ(run_conclave(kv("get hits")).out, "12\n");
  EXPECT_EQ(run_conclave(kv("incr hits --by -2")).out, "10\n");
  // Not an integer: one line, exit 1, nothing written.
  auto text = run_conclave(kv("incr p1"), true);
  EXPECT_EQ(text.status, 1);
  EXPECT_NE(text.out.find("not a decimal integer"), std::string::npos) << text.out;
  EXPECT_EQ(run_conclave(kv("get p1")).out, "one\n");
}

TEST(replication_cli, bad_kv_flags_and_a_foreign_data_dir_are_exit_2_with_one_line) {
  auto expect_bad = [](const std::string& args, const std::string& line) {
    auto r = run_conclave(args, true);
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find(line), std::string::npos) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  };
  expect_bad("kv get a", "give --peers");
  expect_bad("kv --peers 1@127.0.0.1:1 put a", "VALUE is required");
  expect_bad("kv --peers 1@127.0.0.1:1 put a 1 --at 1", "");
  expect_bad("kv --peers 1@127.0.0.1:1 get a --at 7", "--at: node 7 is not in --peers");
  expect_bad("kv --peers nonsense get a", "--peers");
  expect_bad("kv --peers 1@127.0.0.1:1 --tls-ca x get a", "--tls-key");
  expect_bad("kv --peers 1@127.0.0.1:1 frobnicate", "");
  expect_bad("kv --peers 1@127.0.0.1:1 incr a --by x", "--by");
  // A data dir recorded for node 1 is refused to node 2 before anything starts.
  auto data = std::filesystem::temp_directory_path()
              / ("conclave-foreign-" + std::to_string(::getpid()));
  std::filesystem::create_directories(data);
  {
    std::ofstream id{data / "identity.json"};
    id << R"({"cluster": "conclave", "id": 1})" << '\n';
  }
  auto port = std::to_string(free_port());
  expect_bad("node --id 2 --listen 127.0.0.1:" + port
                 + " --peers 1@127.0.0.1:1,2@127.0.0.1:" + port + " --data-dir "
                 + data.string(),
             "belongs to node 1 of cluster 'conclave', not node 2");
  EXPECT_TRUE(std::filesystem::exists(data / "identity.json"));
  std::filesystem::remove_all(data);
}

TEST_F(replication_test,
       kill_9_of_every_node_then_a_restart_keeps_every_acknowledged_write) {
  up(3, "--insecure");
  std::vector<std::string> acked;
  for (int i = 0; i < 15; ++i) {
    auto key = "d" + std::to_string(i);
    if (run_conclave(kv("put " + key + " v" + std::to_string(i))).status == 0)
      acked.push_back(key);
  }
  ASSERT_EQ(acked.size(), 15u);
  for (uint64_t id = 1; id <= 3; ++id)
    EXPECT_EQ(run_conclave("cluster kill --dir " + dir.string() + " --signal KILL --node "
                           + std::to_string(id))
                  .status,
              0);
  ASSERT_TRUE(eventually(
      [&] {
        for (auto& n : status(1)["nodes"])
          if (n["running"].get<bool>())
            return false;
        return true;
      },
      5s));
  // The same directory again: each node recovers its log and term from its
  // data dir (new ports; the identity is the same cluster and id).
  up(3, "--insecure");
  for (auto& key : acked) {
    auto r = run_conclave(kv("get " + key));
    EXPECT_EQ(r.status, 0) << key;
    EXPECT_EQ(r.out, "v" + key.substr(1) + "\n") << key;
  }
  EXPECT_TRUE(eventually([&] { return replicas_equal(3); }, 5s));
  EXPECT_EQ(run_conclave(kv("put after restart"), true).status, 0);
  down_and_check_replicas();
}

TEST_F(replication_test, sigstop_of_the_primary_past_its_lease_then_sigcont_rejoins_it) {
  // Plaintext, as the election's SIGSTOP test (cluster_process.test.cpp).
  auto j = up(3, "--insecure");
  auto leader = j["leader"].get<uint64_t>();
  ASSERT_EQ(run_conclave(kv("put first 1"), true).status, 0);
  std::mutex mtx;
  std::vector<std::string> acked;
  std::atomic<bool> stop{false};
  std::thread writer{[&] {
    for (int i = 0; i < 500 && !stop; ++i) {
      auto key = "s" + std::to_string(i);
      if (run_conclave(kv("put " + key + " v" + std::to_string(i))).status == 0) {
        std::lock_guard<std::mutex> guard{mtx};
        acked.push_back(key);
      }
    }
  }};
  auto acked_count = [&] {
    std::lock_guard<std::mutex> guard{mtx};
    return acked.size();
  };
  bool before = eventually([&] { return acked_count() >= 2; }, 8s);
  auto at_stop = acked_count();
  auto k = kill(leader, "STOP"); // waits for the new leader
  // Writes continue on a new primary while the old one is frozen.
  bool after = eventually([&] { return acked_count() >= at_stop + 2; }, 12s);
  stop = true;
  writer.join();
  ASSERT_TRUE(before && after) << acked_count() << " write(s) acknowledged, " << at_stop
                               << " before the stop";
  EXPECT_NE(k["leader"].get<uint64_t>(), leader);
  kill(leader, "CONT");
  // Every acknowledged write is on the new primary.
  for (auto& key : acked) {
    auto r = run_conclave(kv("get " + key));
    EXPECT_EQ(r.status, 0) << key;
    EXPECT_EQ(r.out, "v" + key.substr(1) + "\n") << key;
  }
  // The resumed node is a secondary with the same records as the others: it
  // acknowledged nothing the others lack.
  EXPECT_TRUE(eventually([&] { return replicas_equal(3); }, 5s));
  auto st = status();
  for (auto& n : st["nodes"])
    if (n["id"].get<uint64_t>() == leader && n["replica"].is_object()) {
      EXPECT_EQ(n["replica"]["role"].get<std::string>(), "secondary") << st.dump(2);
    }
  auto rs = replicas();
  EXPECT_EQ(std::count_if(rs.begin(), rs.end(),
                          [](auto& r) { return std::get<0>(r) == "primary"; }),
            1);
  down_and_check_replicas();
}

TEST_F(
    replication_test,
    kill_9_of_a_secondary_then_its_return_after_the_log_was_truncated_by_a_checkpoint) {
  // Checkpoints every 10 records: the primary's log is truncated past the
  // dead secondary's position, so it catches up by a streamed checkpoint.
  auto j = up(3, "--insecure --checkpoint-every 10");
  auto leader = j["leader"].get<uint64_t>();
  uint64_t victim = leader == 1 ? 2 : 1;
  std::vector<std::string> acked;
  auto write = [&](int from, int to) { replication_test::write("c", from, to, acked); };
  write(0, 5);
  ASSERT_EQ(acked.size(), 5u);
  kill(victim, "KILL");
  write(5, 40);
  EXPECT_EQ(acked.size(), 40u); // the other two are a majority
  // The primary checkpointed past everything the victim had.
  uint64_t ckpt = 0;
  ASSERT_TRUE(eventually(
      [&] {
        auto r = node_status(leader);
        ckpt = r.value("checkpoint_lsn", uint64_t{0});
        return ckpt > 10;
      },
      5s))
      << node_status(leader).dump();
  auto restart = run_conclave("cluster restart --timeout-ms 10000 --dir " + dir.string()
                                  + " --node " + std::to_string(victim),
                              true);
  ASSERT_EQ(restart.status, 0) << restart.out;
  EXPECT_TRUE(eventually([&] { return replicas_equal(3); }, 10s));
  auto back = node_status(victim);
  EXPECT_GE(back.value("snapshots_installed", uint64_t{0}), 1u) << back.dump();
  EXPECT_GE(back.value("checkpoint_lsn", uint64_t{0}), ckpt) << back.dump();
  EXPECT_GE(node_status(leader).value("snapshots_sent", uint64_t{0}), 1u);
  // Every acknowledged write is on the primary and, once converged, on the
  // returned secondary's own state.
  for (auto& key : acked) {
    auto r = run_conclave(kv("get " + key));
    EXPECT_EQ(r.status, 0) << key;
    EXPECT_EQ(r.out, "v" + key.substr(1) + "\n") << key;
  }
  auto mine = run_conclave(kv("get c7 --at " + std::to_string(victim)));
  EXPECT_EQ(mine.status, 0);
  EXPECT_EQ(mine.out, "v7\n");
  down_and_check_replicas();
}

namespace {

/// Flips one byte `at` bytes into the first file (by name; the last with
/// `last`) with extension `ext` in `where`; false if there is none.
bool flip_byte_in(const std::filesystem::path& where, const std::string& ext, size_t at,
                  bool last = false) {
  std::vector<std::filesystem::path> files;
  for (auto& e : std::filesystem::directory_iterator{where})
    if (e.path().extension() == ext)
      files.push_back(e.path());
  if (files.empty())
    return false;
  std::sort(files.begin(), files.end());
  std::fstream f{last ? files.back() : files.front(),
                 std::ios::in | std::ios::out | std::ios::binary};
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(at));
  f.put(static_cast<char>(c ^ 0x20));
  return true;
}

/// Flips a byte in the first log segment of node `id`'s replica: its oldest
/// write, so later writes follow and this is corruption, not a torn tail.
void flip_log_byte(const std::filesystem::path& dir, uint64_t id, size_t at) {
  auto log = dir / ("node-" + std::to_string(id)) / "replica" / "log";
  EXPECT_TRUE(flip_byte_in(log, ".wal", at)) << "no log segment in " << log;
}

} // namespace

TEST_F(replication_test,
       a_replica_whose_log_was_damaged_heals_from_its_peers_losing_nothing) {
  auto j = up(3);
  auto leader = j["leader"].get<uint64_t>();
  uint64_t victim = leader == 1 ? 2 : 1;
  std::vector<std::string> acked;
  auto write = [&](int from, int to) { replication_test::write("d", from, to, acked); };
  auto heals = [&](uint64_t id) { expect_healed(id, acked); };
  // A secondary: stopped, a byte of its log flipped, started again.
  write(0, 20);
  ASSERT_EQ(acked.size(), 20u);
  kill(victim, "KILL");
  flip_log_byte(dir, victim, 40);
  heals(victim);
  // The old primary, after a failover: the same.
  write(20, 30);
  ASSERT_EQ(acked.size(), 30u);
  auto k = kill(leader, "KILL");
  ASSERT_NE(k["leader"].get<uint64_t>(), leader);
  flip_log_byte(dir, leader, 40);
  write(30, 35);
  heals(leader);
  down_and_check_replicas();
}

TEST_F(replication_test,
       a_replica_whose_checkpoint_was_damaged_heals_from_its_peers_too) {
  // Checkpoints every 10 records: the secondary holds one after 25 writes.
  auto j = up(3, "--checkpoint-every 10");
  auto leader = j["leader"].get<uint64_t>();
  uint64_t victim = leader == 1 ? 2 : 1;
  std::vector<std::string> acked;
  write("e", 0, 25, acked);
  ASSERT_EQ(acked.size(), 25u);
  ASSERT_TRUE(
      eventually([&] { return node_status(victim).value("checkpoint_lsn", 0) > 0; }, 5s))
      << node_status(victim).dump();
  kill(victim, "KILL");
  ASSERT_TRUE(flip_byte_in(
      dir / ("node-" + std::to_string(victim)) / "replica" / "checkpoints", ".ckpt", 20,
      true)); // the newest: the one recovery reads
  write("e", 25, 30, acked);
  expect_healed(victim, acked);
  down_and_check_replicas();
}

namespace {

/// Mounts a tmpfs of `size` at each path, and detaches them all when it goes
/// out of scope (lazily: the nodes may still hold files there).
struct tmpfs_mounts {
  std::vector<std::filesystem::path> paths;
  std::string error; // why a mount failed, if one did

  bool mount(const std::filesystem::path& p, const std::string& size) {
    std::filesystem::create_directories(p);
    if (::mount("tmpfs", p.c_str(), "tmpfs", 0, ("size=" + size).c_str()) != 0) {
      error = std::strerror(errno);
      return false;
    }
    paths.push_back(p);
    return true;
  }
  ~tmpfs_mounts() {
    for (auto& p : paths)
      ::umount2(p.c_str(), MNT_DETACH);
  }
};

/// Fills the file system of `dir` with one file until a write fails.
void fill_up(const std::filesystem::path& dir) {
  int fd = ::open((dir / "filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  std::string chunk(64 * 1024, 'f');
  for (;;) {
    auto n = ::write(fd, chunk.data(), chunk.size());
    if (n <= 0)
      break;
    if (static_cast<size_t>(n) < chunk.size())
      chunk.resize(chunk.size() - static_cast<size_t>(n));
  }
  ::close(fd);
}

} // namespace

// The leader's disk fills up under writes: its replica's storage fails, and
// the node logs why, leaves the group as after SIGTERM and stops. Another
// node leads and serves every acknowledged write; once there is room again,
// the node restarts and catches up. Each node's replica directory is its own
// tmpfs, so only the leader's fills (needs root to mount, as CI runs).
TEST_F(replication_test,
       a_primary_whose_disk_fills_up_leaves_and_loses_no_acknowledged_write) {
  tmpfs_mounts mounts;
  for (int n = 1; n <= 3; ++n)
    if (!mounts.mount(dir / ("node-" + std::to_string(n)) / "replica", "64m"))
      GTEST_SKIP() << "cannot mount a tmpfs here (" << mounts.error
                   << "): this test needs root";
  up(3);
  auto leader = settled_leader();
  ASSERT_NE(leader, 0u);
  auto node_dir = dir / ("node-" + std::to_string(leader));
  std::vector<std::string> acked;
  write("s", 0, 5, acked);
  ASSERT_EQ(acked.size(), 5u);
  fill_up(node_dir / "replica");
  // The log goes on in its preallocated segment, then cannot grow: write
  // 20 KB values until the leader's storage has failed.
  const std::string big(20000, 'b');
  std::vector<std::string> acked_big;
  auto failed = [&] {
    return read_file(node_dir / "node.log").find("replica storage failed")
           != std::string::npos;
  };
  // Bounded in time: a node that ignored the failure would time out every put.
  auto give_up = std::chrono::steady_clock::now() + 60s;
  for (int i = 0; i < 300 && !failed() && std::chrono::steady_clock::now() < give_up;
       ++i) {
    auto key = "big" + std::to_string(i);
    if (run_conclave(kv("put " + key + " " + big)).status == 0)
      acked_big.push_back(key);
  }
  ASSERT_TRUE(failed()) << "the leader's storage never failed";
  auto log = read_file(node_dir / "node.log");
  EXPECT_NE(log.find("leaving the group"), std::string::npos) << log;
  // The node stops, and another one leads.
  EXPECT_TRUE(eventually(
      [&] {
        auto st = nlohmann::json::parse(
            run_conclave("cluster status --json --dir " + dir.string()).out, nullptr,
            false);
        if (st.is_discarded() || !st["leader"].is_number()
            || st["leader"].get<uint64_t>() == leader)
          return false;
        for (auto& n : st["nodes"])
          if (n["id"].get<uint64_t>() == leader && n["alive"].get<bool>())
            return false;
        return true;
      },
      15s));
  EXPECT_TRUE(eventually(
      [&] {
        return read_file(node_dir / "node.log").find("stopped") != std::string::npos;
      },
      15s));
  // Every acknowledged write is there, written before or during the failure.
  write("s", 5, 8, acked);
  EXPECT_EQ(acked.size(), 8u);
  for (auto& key : acked) {
    auto r = run_conclave(kv("get " + key));
    EXPECT_EQ(r.status, 0) << key;
    EXPECT_EQ(r.out, "v" + key.substr(1) + "\n") << key;
  }
  for (auto& key : acked_big) {
    auto r = run_conclave(kv("get " + key));
    EXPECT_EQ(r.status, 0) << key;
    EXPECT_EQ(r.out, big + "\n") << key;
  }
  // Room again: the node restarts, reopens what it had and catches up.
  std::filesystem::remove(node_dir / "replica" / "filler");
  auto restart = run_conclave("cluster restart --timeout-ms 10000 --dir " + dir.string()
                                  + " --node " + std::to_string(leader),
                              true);
  ASSERT_EQ(restart.status, 0) << restart.out;
  EXPECT_TRUE(eventually([&] { return replicas_equal(3); }, 10s));
  down_and_check_replicas();
}
