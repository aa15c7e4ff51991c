// Helpers of the multi-process tests: run the `conclave` binary, a temporary
// cluster directory that is always torn down (`cluster down`, which signals
// only pids still running that directory's nodes), a tiny HTTP GET, and the
// check every fault test ends with: `conclave store check` on each node's
// replica once the nodes are gone (expect_replicas_clean).
#pragma once

#include "tests/support/loopback_http.hpp"
#include "tests/support/process_tools.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <array>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <optional>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace conclave::process_test {

struct run_result {
  int status = -1;
  std::string out;
};

/// Runs `conclave ARGS` through the shell; stderr is folded into out if asked.
inline run_result run_conclave(const std::string& args, bool with_stderr = false) {
  auto r = conclave::testing::run_command(std::string{CONCLAVE_BIN} + " " + args
                                          + (with_stderr ? " 2>&1" : " 2>/dev/null"));
  return {r.status, std::move(r.out)};
}

/// Lines of a command's output (newlines counted).
inline size_t line_count(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

/// Whether `text` contains `what`.
inline bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in{p};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// GET http://HOST:PORT/PATH on loopback; the body, or "" on failure.
inline std::string http_get(const std::string& host_port, const std::string& path) {
  auto colon = host_port.rfind(':');
  return conclave::testing::http_exchange(
      host_port.substr(0, colon),
      static_cast<uint16_t>(std::stoi(host_port.substr(colon + 1))),
      "GET " + path + " HTTP/1.0\r\nHost: " + host_port + "\r\n\r\n",
      std::chrono::seconds(2));
}

using conclave::testing::free_port;

/// The values of every sample in a /metrics body whose line starts with
/// `series` ("conclave_is_leader " or "conclave_peer_up{"), in order.
inline std::vector<double> samples(const std::string& body, const std::string& series) {
  std::vector<double> values;
  std::istringstream in{body};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(series, 0) == 0) {
      auto space = line.rfind(' ');
      values.push_back(std::stod(line.substr(space + 1)));
    }
  return values;
}

/// The value of the one sample `series` (name and labels exactly as exposed).
inline std::optional<double> sample(const std::string& body, const std::string& series) {
  auto v = samples(body, series + " ");
  if (v.size() != 1)
    return std::nullopt;
  return v.front();
}

/// What recovery would find in each node's replica: runs `conclave store check
/// --json --dir DATA_DIR/replica` (where a node with --data-dir keeps its
/// replica: replica_storage.cpp) for every data dir given, and expects exit 0,
/// a recoverable log with no damage, no torn or cut tail, no missing covered
/// records and every checkpoint intact. Call it only once the nodes of those
/// dirs have exited (the check takes no lock; a running node's log moves).
inline void expect_replicas_clean(const std::vector<std::filesystem::path>& data_dirs) {
  ASSERT_FALSE(data_dirs.empty());
  for (auto& d : data_dirs) {
    auto replica = d / "replica";
    ASSERT_TRUE(std::filesystem::is_directory(replica / "log")) << replica;
    auto r = run_conclave("store check --json --dir " + replica.string(), true);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_EQ(r.status, 0) << replica << ":\n" << r.out;
    ASSERT_FALSE(j.is_discarded()) << replica << ":\n" << r.out;
    EXPECT_TRUE(j.value("clean", false)) << replica << ":\n" << r.out;
    EXPECT_TRUE(j.value("recoverable", false)) << replica << ":\n" << r.out;
    EXPECT_TRUE(j["log"]["damage"].empty()) << replica << ":\n" << r.out;
    EXPECT_FALSE(j["log"].value("ends_early", true)) << replica << ":\n" << r.out;
    EXPECT_FALSE(j["log"].value("corrupt_in_middle", true)) << replica << ":\n" << r.out;
    for (auto& k : j["checkpoints"])
      EXPECT_TRUE(k.value("ok", false)) << replica << ":\n" << r.out;
  }
}

/// The sum over the members listed in `status` (`cluster status --json`)
/// that answer of the Prometheus sample `series` (name with labels, exactly
/// as exposed), and whether `absent` appears in none of their /metrics.
inline double sum_metric(const nlohmann::json& status, const std::string& series,
                         const std::string& absent, bool* absent_everywhere) {
  double sum = 0;
  if (absent_everywhere)
    *absent_everywhere = true;
  for (auto& n : status["nodes"]) {
    auto url = n.value("metrics_url", std::string{});
    auto at = url.find("://");
    if (at == std::string::npos || !n.value("alive", false))
      continue;
    auto rest = url.substr(at + 3);
    auto slash = rest.find('/');
    auto body = http_get(rest.substr(0, slash), rest.substr(slash));
    std::istringstream in{body};
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(series + " ", 0) == 0)
        sum += std::stod(line.substr(series.size() + 1));
      if (absent_everywhere && !absent.empty() && line.rfind(absent, 0) == 0)
        *absent_everywhere = false;
    }
  }
  return sum;
}

/// Starts a process that brings the cluster in `dir` down if this process
/// dies before it says it is done (a test killed at CTest's timeout cannot run
/// its TearDown, and `cluster up` starts nodes in their own sessions, so they
/// would outlive it). It waits on a pipe only this process writes to: a byte
/// means done, end of file without one means this process is gone. Returns
/// the pipe's write end and the guard's pid (-1 and 0 if none could be
/// started).
struct cluster_guard {
  int fd = -1;
  pid_t pid = 0;
};
inline cluster_guard start_cluster_guard(const std::filesystem::path& dir) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return {};
  auto script = "exec >/dev/null 2>&1 </dev/null; IFS= read -r -n 1 done <&3 "
                "|| { [ -e \"$1/cluster.json\" ] && \"$0\" cluster down --dir \"$1\"; }; "
                "exit 0";
  std::string bin = CONCLAVE_BIN;
  std::string where = dir.string();
  pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls until exec: fd 3 is the read end, every
    // other descriptor of the test process is closed.
    if (fds[0] == 3)
      ::fcntl(3, F_SETFD, 0); // dup2 onto itself would keep close-on-exec
    else
      ::dup2(fds[0], 3);
    ::close_range(4, ~0U, 0);
    ::execl("/bin/bash", "bash", "-c", script, bin.c_str(), where.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[0]);
  if (pid < 0) {
    ::close(fds[1]);
    return {};
  }
  return {fds[1], pid};
}

/// A cluster directory under /tmp, brought down (and removed) however a test
/// ends: by TearDown, or by a guard process if the test process is killed.
class cluster_test : public ::testing::Test {
protected:
  std::filesystem::path dir;

  void SetUp() override {
    dir = std::filesystem::temp_directory_path()
          / ("conclave-proc-" + std::to_string(::getpid()) + "-"
             + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir);
    // kv's primary cache goes to the test's directory, not ~/.cache.
    ::setenv("CONCLAVE_KV_CACHE_DIR", (dir / "kv-cache").c_str(), 1);
    guard_ = start_cluster_guard(dir);
  }

  void TearDown() override {
    if (std::filesystem::exists(dir / "cluster.json"))
      run_conclave("cluster down --dir " + dir.string());
    if (guard_.fd >= 0) {
      // Done: the guard exits without touching the directory.
      (void)!::write(guard_.fd, "d", 1);
      ::close(guard_.fd);
      ::waitpid(guard_.pid, nullptr, 0);
      guard_ = {};
    }
    if (!HasFailure())
      std::filesystem::remove_all(dir);
    else
      std::cerr << "logs kept in " << dir << '\n';
  }

  nlohmann::json up(int nodes, const std::string& extra = "") {
    auto r =
        run_conclave("cluster up --json --timeout-ms 20000 --nodes "
                     + std::to_string(nodes) + " --dir " + dir.string() + " " + extra);
    EXPECT_EQ(r.status, 0) << r.out;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }

  /// Ends a fault test: `cluster down`, then expect_replicas_clean on every
  /// node's data dir (DIR/node-N, the ids cluster.json lists).
  void down_and_check_replicas() {
    auto d = run_conclave("cluster down --dir " + dir.string(), true);
    EXPECT_EQ(d.status, 0) << d.out;
    auto c = nlohmann::json::parse(read_file(dir / "cluster.json"), nullptr, false);
    ASSERT_FALSE(c.is_discarded());
    std::vector<std::filesystem::path> data_dirs;
    for (auto& n : c["nodes"])
      data_dirs.push_back(dir / ("node-" + std::to_string(n["id"].get<uint64_t>())));
    expect_replicas_clean(data_dirs);
  }

  /// `cluster status --json`; its exit status must be `expected` (0: the live
  /// nodes agree on a leader, 1: they do not).
  nlohmann::json status(int expected = 0) {
    auto r = run_conclave("cluster status --json --dir " + dir.string());
    EXPECT_EQ(r.status, expected) << r.out;
    return nlohmann::json::parse(r.out);
  }

  nlohmann::json kill(uint64_t node, const std::string& sig) {
    auto r =
        run_conclave("cluster kill --json --wait --timeout-ms 10000 --dir " + dir.string()
                     + " --node " + std::to_string(node) + " --signal " + sig);
    EXPECT_EQ(r.status, 0) << r.out;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }

  /// The leader once the live nodes have agreed on the same leader and term
  /// for `quiet` (polled every 50 ms, for at most `bound`; 0 if they never
  /// did). Right after `up`, a start-up election can still hand leadership
  /// over once (two winners of one epoch under load, docs/design/node.md,
  /// known problems): a test that signals "the leader" asks this first.
  uint64_t
  settled_leader(std::chrono::milliseconds quiet = std::chrono::milliseconds(300),
                 std::chrono::milliseconds bound = std::chrono::seconds(10)) {
    auto end = std::chrono::steady_clock::now() + bound;
    uint64_t leader = 0, term = 0;
    auto since = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() < end) {
      auto r = run_conclave("cluster status --json --dir " + dir.string());
      auto j = nlohmann::json::parse(r.out, nullptr, false);
      auto now = std::chrono::steady_clock::now();
      if (r.status == 0 && j.is_object() && j["leader"].is_number()) {
        auto l = j["leader"].get<uint64_t>(), t = j["term"].get<uint64_t>();
        if (l != leader || t != term)
          leader = l, term = t, since = now;
        else if (now - since >= quiet)
          return leader;
      } else {
        leader = term = 0;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "no leader held for " << quiet.count() << " ms within "
                  << bound.count() << " ms";
    return 0;
  }

  /// Number of nodes shown as leader (a stopped or dead node is never shown so).
  static int leaders(const nlohmann::json& st) {
    int n = 0;
    for (auto& node : st["nodes"])
      if (node["is_leader"].get<bool>())
        ++n;
    return n;
  }

  /// Calls `probe` every 20 ms until it returns true or `limit` passes.
  template <class Probe>
  static bool eventually(Probe probe, std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!probe()) {
      if (std::chrono::steady_clock::now() >= deadline)
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

private:
  cluster_guard guard_;
};

} // namespace conclave::process_test
