// Nodes in network namespaces standing in for hosts: each namespace has its
// own address (10.213.0.N/24) on a bridge that lives in a switch namespace of
// its own, so nothing is added to the machine's own network and no packet can
// leave it. Needs root (or CAP_SYS_ADMIN) and iproute2; tests skip otherwise.
// Every namespace and process is removed however the test ends; if the test
// process is killed outright, its nodes die with it and the next run deletes
// its namespaces.
//
// The switch can also cut links the way a network does (no reset, packets
// vanish): `isolate` takes a node's port down, `move_to_island` moves ports to
// a second bridge (a partition whose sides still reach their own members),
// and `reconnect` puts a port back on the first bridge, up. A client address
// on the first bridge (10.213.0.254) lets the test run clients from the
// switch namespace.
#pragma once

#include "tests/process/process_support.hpp"

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <map>
#include <sys/prctl.h>
#include <sys/stat.h>

namespace conclave::process_test {

int netns_sh(const std::string& cmd) {
  return conclave::testing::run_command(cmd + " >/dev/null 2>&1").status;
}

struct netns_view {
  uint64_t leader = 0;
  uint64_t term = 0;
  uint64_t term_leader = 0;
  bool is_leader = false;
  bool acting = false;
  int pid = 0;
};

class netns_cluster : public ::testing::Test {
protected:
  /// How many nodes (namespaces) SetUp makes; a test's constructor may change it.
  int nodes = 3;
  std::string tag = std::to_string(::getpid());
  std::filesystem::path dir;
  std::vector<std::string> namespaces; ///< created by this test, deleted in TearDown
  std::map<int, pid_t> pids;           ///< node id → our child running it

  std::string ns(int i) const { return "cnc" + tag + "-" + std::to_string(i); }
  std::string switch_ns() const { return "cnc" + tag + "-sw"; }
  std::string address(int i) const { return "10.213.0." + std::to_string(i); }
  const std::string client_address = "10.213.0.254";
  std::string port(int i) const { return "p" + std::to_string(i); }

  /// Node `i`'s link goes down at the switch: its packets vanish, its TCP
  /// connections hang without a reset, as when a cable is pulled.
  void isolate(int i) {
    ASSERT_EQ(netns_sh("ip -n " + switch_ns() + " link set " + port(i) + " down"), 0);
  }
  /// Node `i`'s port moves to the island bridge: it reaches the nodes moved
  /// there and nothing else (the clients stay on the first bridge).
  void move_to_island(int i) {
    ASSERT_EQ(netns_sh("ip -n " + switch_ns() + " link set " + port(i) + " master br1"),
              0);
  }
  /// Node `i`'s port back on the first bridge, up.
  void reconnect(int i) {
    ASSERT_EQ(
        netns_sh("ip -n " + switch_ns() + " link set " + port(i) + " master br0 up"), 0);
  }

  void SetUp() override {
    if (::geteuid() != 0)
      GTEST_SKIP() << "needs root to create network namespaces (ip netns add)";
    if (netns_sh("ip -V") != 0)
      GTEST_SKIP() << "needs the ip tool (Debian package iproute2)";
    remove_namespaces_of_dead_runs();
    dir = std::filesystem::temp_directory_path() / ("conclave-netns-" + tag);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    // kv's primary cache goes to the test's directory, not ~/.cache.
    ::setenv("CONCLAVE_KV_CACHE_DIR", (dir / "kv-cache").c_str(), 1);
    // The probe namespace is the switch: if it cannot be made, skip.
    if (netns_sh("ip netns add " + switch_ns()) != 0)
      GTEST_SKIP() << "cannot create network namespaces here (ip netns add failed)";
    namespaces.push_back(switch_ns());
    ASSERT_EQ(netns_sh("ip -n " + switch_ns() + " link add br0 type bridge"), 0);
    ASSERT_EQ(netns_sh("ip -n " + switch_ns() + " link set br0 up"), 0);
    // The island: a second bridge for partitions whose sides keep their links.
    ASSERT_EQ(netns_sh("ip -n " + switch_ns() + " link add br1 type bridge"), 0);
    ASSERT_EQ(netns_sh("ip -n " + switch_ns() + " link set br1 up"), 0);
    // Clients run in the switch namespace, on the first bridge.
    ASSERT_EQ(
        netns_sh("ip -n " + switch_ns() + " addr add " + client_address + "/24 dev br0"),
        0);
    ASSERT_EQ(netns_sh("ip -n " + switch_ns() + " link set lo up"), 0);
    for (int i = 1; i <= nodes; ++i) {
      ASSERT_EQ(netns_sh("ip netns add " + ns(i)), 0) << ns(i);
      namespaces.push_back(ns(i));
      auto port = "p" + std::to_string(i);
      // Both ends are born inside namespaces: nothing in the machine's own.
      ASSERT_EQ(netns_sh("ip link add eth0 netns " + ns(i) + " type veth peer name "
                         + port + " netns " + switch_ns()),
                0);
      ASSERT_EQ(netns_sh("ip -n " + switch_ns() + " link set " + port + " master br0 up"),
                0);
      ASSERT_EQ(netns_sh("ip -n " + ns(i) + " addr add " + address(i) + "/24 dev eth0"),
                0);
      ASSERT_EQ(netns_sh("ip -n " + ns(i) + " link set eth0 up"), 0);
      ASSERT_EQ(netns_sh("ip -n " + ns(i) + " link set lo up"), 0);
    }
  }

  /// A run killed outright (SIGKILL, ctest's timeout) could not delete its
  /// namespaces (its nodes died with it: PR_SET_PDEATHSIG). Namespaces named
  /// as this test names them, cncPID-*, whose PID no longer exists, are such
  /// leftovers; any other namespace is left alone.
  static void remove_namespaces_of_dead_runs() {
    auto list = conclave::testing::run_command("ip netns list 2>/dev/null");
    std::istringstream in{list.out};
    std::string name, rest;
    while (in >> name && std::getline(in, rest)) {
      auto dash = name.find('-');
      if (name.rfind("cnc", 0) != 0 || dash == std::string::npos || dash == 3)
        continue;
      auto pid = name.substr(3, dash - 3);
      if (pid.find_first_not_of("0123456789") != std::string::npos)
        continue;
      if (!std::filesystem::exists("/proc/" + pid))
        netns_sh("ip netns del " + name);
    }
  }

  void TearDown() override {
    for (auto& [id, pid] : pids) {
      ::kill(pid, SIGKILL); // our own child: not reaped yet, so not reused
      ::waitpid(pid, nullptr, 0);
    }
    pids.clear();
    for (auto& n : namespaces) // deleting one deletes its veth ends and the bridge
      EXPECT_EQ(netns_sh("ip netns del " + n), 0) << n;
    if (!dir.empty()) {
      if (!HasFailure() && std::getenv("CONCLAVE_KEEP_TEST_FILES") == nullptr)
        std::filesystem::remove_all(dir);
      else
        std::cerr << "files and logs kept in " << dir << '\n';
    }
  }

  /// Starts node `id` in its namespace from its installed config.
  void start(int id) {
    auto log = (dir / ("node-" + std::to_string(id) + ".log")).string();
    auto cfg = (dir / "etc" / ("node-" + std::to_string(id) + ".conf")).string();
    std::vector<std::string> args{"ip",         "netns", "exec",     ns(id),
                                  CONCLAVE_BIN, "node",  "--config", cfg};
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    auto pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // If the test process itself dies (a crash, ctest's timeout), so does the node.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::execvp("ip", argv.data()); // `ip netns exec` execs the node: same pid
      ::_exit(127);
    }
    pids[id] = pid;
  }

  std::optional<netns_view> read_view(int id) {
    auto text = read_file(dir / "data" / ("node-" + std::to_string(id)) / "status.json");
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return std::nullopt;
    netns_view v;
    v.leader = j.value("leader", uint64_t{0});
    v.term = j.value("term", uint64_t{0});
    v.term_leader = j.value("term_leader", uint64_t{0});
    v.is_leader = j.value("is_leader", false);
    v.acting = j.value("acting", false);
    v.pid = j.value("pid", 0);
    return v;
  }

  /// The leader the given nodes agree on (same leader and term, read from
  /// their status.json, written by the running process), which claims it
  /// and acts; 0 if none.
  uint64_t agreed_leader(const std::vector<int>& ids) {
    std::optional<netns_view> first;
    bool leader_acts = false;
    for (int id : ids) {
      auto v = read_view(id);
      if (!v || v->pid != pids[id] || v->leader == 0)
        return 0;
      if (!first)
        first = v;
      else if (v->leader != first->leader || v->term != first->term
               || v->term_leader != first->term_leader)
        return 0;
      if (static_cast<uint64_t>(id) == v->leader && v->is_leader && v->acting)
        leader_acts = true;
    }
    return leader_acts ? first->leader : 0;
  }

  uint64_t wait_for_leader(const std::vector<int>& ids, std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      if (auto leader = agreed_leader(ids))
        return leader;
      if (std::chrono::steady_clock::now() >= deadline)
        return 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  run_result kv_in(int id, const std::string& args, int timeout_ms = 8000) {
    return kv_in_namespace(ns(id), args, timeout_ms);
  }

  /// `conclave kv` from the switch namespace (the client address on br0).
  run_result kv_from_switch(const std::string& args, int timeout_ms = 8000) {
    return kv_in_namespace(switch_ns(), args, timeout_ms);
  }

  run_result kv_in_namespace(const std::string& name, const std::string& args,
                             int timeout_ms) {
    auto r = conclave::testing::run_command(
        "ip netns exec " + name + " " + CONCLAVE_BIN + " kv --timeout-ms "
        + std::to_string(timeout_ms) + " --cluster-dir " + (dir / "out").string() + " "
        + args + " 2>&1");
    return {r.status, r.out};
  }

  /// Writes the files of `cluster init` for the fixture's nodes (port 7001)
  /// into DIR/out and installs them into DIR/etc, one shared config dir.
  void init_and_install(const std::string& extra = "") {
    std::string hosts;
    for (int i = 1; i <= nodes; ++i)
      hosts += (i == 1 ? "" : ",") + std::to_string(i) + "@" + address(i) + ":7001";
    auto out = dir / "out";
    auto etc = dir / "etc";
    auto init = run_conclave("cluster init --hosts " + hosts + " --dir " + out.string()
                                 + " --cluster netns --config-dir " + etc.string()
                                 + " --data-dir " + (dir / "data").string() + " " + extra,
                             true);
    ASSERT_EQ(init.status, 0) << init.out;
    // "Install" every node's files, as a copy to each host's /etc/conclave would.
    std::filesystem::create_directories(etc);
    for (int i = 1; i <= nodes; ++i)
      for (auto& f :
           std::filesystem::directory_iterator{out / ("node-" + std::to_string(i))})
        std::filesystem::copy_file(f.path(), etc / f.path().filename(),
                                   std::filesystem::copy_options::overwrite_existing);
  }

  /// Stops every node still running (SIGTERM, as systemd would) and checks
  /// every node's replica (expect_replicas_clean), the stopped ones' too.
  void stop_all_and_check_replicas() {
    for (auto& [id, pid] : pids) {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
    pids.clear();
    std::vector<std::filesystem::path> data_dirs;
    for (int i = 1; i <= nodes; ++i)
      data_dirs.push_back(dir / "data" / ("node-" + std::to_string(i)));
    expect_replicas_clean(data_dirs);
  }

  std::filesystem::path log_of(int id) const {
    return dir / ("node-" + std::to_string(id) + ".log");
  }
};

} // namespace conclave::process_test
