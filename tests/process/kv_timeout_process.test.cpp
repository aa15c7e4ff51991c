// Multi-process tests of `conclave kv`'s time bound: with a member frozen
// (SIGSTOP), a follower or the leader, every kv process must exit within its
// --timeout-ms plus a small margin, process exit included, and without
// spinning a core. Each kv process is started by fork/exec, watched by pid,
// killed after a hard limit (so the test never hangs on it) and measured with
// wait4 (wall time, user + system CPU time). The frozen node is always
// resumed and the cluster brought down (process_support.hpp). Loopback only.
//
// The primary cache (runtime/cluster/primary_cache.hpp) decides which member
// kv dials first: a cache naming a follower, a frozen follower, or no member
// must cost a detour at most, never a wrong answer or a missed bound.
//
// get, put and delete of a --dir TLS cluster go over the members' HTTPS API
// first (runtime/cli/kv_http.hpp); `--no-http` runs take the CAF path alone,
// so both are held to the bound.
#include "tests/process/process_support.hpp"

#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/primary_cache.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <iostream>
#include <sstream>
#include <vector>

using namespace conclave::process_test;
using namespace std::chrono_literals;

namespace {

/// One kv process, measured.
struct timed_run {
  int status = -1;     ///< exit status; -1 if killed or signalled
  bool killed = false; ///< still running at the hard limit (then SIGKILLed)
  double wall_ms = 0;  ///< start to reaped
  double cpu_ms = 0;   ///< user + system CPU time of the child
  std::string out;     ///< stdout and stderr
};

/// Runs `conclave ARGS` (split at spaces), kills it by pid after `hard_limit`.
timed_run run_timed(const std::string& args, std::chrono::milliseconds hard_limit) {
  std::vector<std::string> words{CONCLAVE_BIN};
  std::istringstream in{args};
  for (std::string w; in >> w;)
    words.push_back(w);
  std::vector<char*> argv;
  for (auto& w : words)
    argv.push_back(w.data());
  argv.push_back(nullptr);
  char path[] = "/tmp/conclave-kv-timed-XXXXXX";
  int fd = ::mkstemp(path);
  timed_run r;
  if (fd < 0)
    return r;
  ::unlink(path);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int st = 0;
  rusage ru{};
  for (;;) {
    pid_t w = ::wait4(pid, &st, WNOHANG, &ru);
    if (w == pid)
      break;
    if (std::chrono::steady_clock::now() - start >= hard_limit) {
      r.killed = true;
      ::kill(pid, SIGKILL);
      ::wait4(pid, &st, 0, &ru);
      break;
    }
    std::this_thread::sleep_for(2ms);
  }
  r.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
          .count();
  auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  r.cpu_ms = ms(ru.ru_utime) + ms(ru.ru_stime);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  ::lseek(fd, 0, SEEK_SET);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0)
    r.out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return r;
}

constexpr unsigned timeout_ms = 1000;
/// What a kv process may take beyond its --timeout-ms, exit included.
constexpr double margin_ms = 200;
/// CPU time a kv process may use: start-up (TLS, the actor system) and its
/// messages, far below a core spinning for the timeout.
constexpr double cpu_limit_ms = 500;

struct kv_timeout_test : cluster_test {
  /// The node to resume in TearDown (0: none).
  uint64_t frozen = 0;

  void TearDown() override {
    if (frozen != 0)
      run_conclave("cluster kill --dir " + dir.string() + " --node "
                   + std::to_string(frozen) + " --signal CONT");
    cluster_test::TearDown();
  }

  /// Starts 3 nodes and writes once (the first write also waits for the
  /// primary's sync phase); `leader` is the leader's id.
  void up_and_write(uint64_t& leader) {
    auto j = up(3);
    leader = j["leader"].get<uint64_t>();
    ASSERT_NE(leader, 0u);
    auto w = run_conclave("kv --timeout-ms 10000 --dir " + dir.string() + " put before 1",
                          true);
    ASSERT_EQ(w.status, 0) << w.out;
  }

  timed_run kv(const std::string& args) {
    auto r = run_timed("kv --timeout-ms " + std::to_string(timeout_ms) + " --dir "
                           + dir.string() + " " + args,
                       std::chrono::milliseconds{timeout_ms} + 5s);
    std::cerr << "  kv " << args << ": exit " << r.status << " after " << r.wall_ms
              << " ms, cpu " << r.cpu_ms << " ms\n";
    return r;
  }

  /// Sends `sig` to node `id` without waiting for anything.
  void signal(uint64_t id, const std::string& sig) {
    auto r = run_conclave("cluster kill --dir " + dir.string() + " --node "
                              + std::to_string(id) + " --signal " + sig,
                          true);
    ASSERT_EQ(r.status, 0) << r.out;
  }

  /// The primary cache file kv uses for this cluster (the fixture points
  /// CONCLAVE_KV_CACHE_DIR at DIR/kv-cache).
  std::string cache_file() {
    auto a = conclave::cluster::client_access_of(dir.string());
    EXPECT_TRUE(a);
    return conclave::cluster::primary_cache_file((dir / "kv-cache").string(),
                                                 a ? a->cluster : "", a ? a->peers : "");
  }

  static void write_cache(const std::string& file, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path{file}.parent_path());
    std::ofstream{file} << text << '\n';
  }

  static void expect_bounded(const timed_run& r, const std::string& what) {
    EXPECT_FALSE(r.killed) << what << ": still running after the hard limit\n" << r.out;
    EXPECT_LE(r.wall_ms, timeout_ms + margin_ms) << what << "\n" << r.out;
    EXPECT_LE(r.cpu_ms, cpu_limit_ms) << what << "\n" << r.out;
  }
};

} // namespace

TEST_F(kv_timeout_test, a_frozen_follower_does_not_hold_kv_past_its_timeout) {
  uint64_t leader = 0;
  ASSERT_NO_FATAL_FAILURE(up_and_write(leader));
  uint64_t follower = leader == 1 ? 2 : 1;
  frozen = follower;
  signal(follower, "STOP");
  // The leader and the other follower are a majority: everything succeeds,
  // over HTTPS and over the CAF path.
  for (int i = 0; i < 4; ++i) {
    std::string path = i % 2 == 0 ? "" : "--no-http ";
    auto p = kv(path + "put k" + std::to_string(i) + " v" + std::to_string(i));
    EXPECT_EQ(p.status, 0) << p.out;
    expect_bounded(p, "put with a frozen follower " + path);
    auto g = kv(path + "get k" + std::to_string(i));
    EXPECT_EQ(g.status, 0) << g.out;
    EXPECT_EQ(g.out, "v" + std::to_string(i) + "\n");
    expect_bounded(g, "get with a frozen follower " + path);
  }
  signal(follower, "CONT");
  frozen = 0;
  down_and_check_replicas();
}

TEST_F(kv_timeout_test, a_frozen_leader_does_not_hold_kv_past_its_timeout) {
  uint64_t leader = 0;
  ASSERT_NO_FATAL_FAILURE(up_and_write(leader));
  frozen = leader;
  signal(leader, "STOP");
  // Operations started during the freeze, the first before a new leader is
  // elected: each ends within its timeout, done (0) or failed (1).
  std::vector<timed_run> runs;
  auto freeze_end = std::chrono::steady_clock::now() + 3s;
  for (int i = 0; std::chrono::steady_clock::now() < freeze_end; ++i) {
    std::string path = i % 2 == 0 ? "" : "--no-http ";
    auto p = kv(path + "put f" + std::to_string(i) + " v");
    EXPECT_TRUE(p.status == 0 || p.status == 1) << p.out;
    expect_bounded(p, "put with a frozen leader " + path);
    auto g = kv(path + "get before");
    EXPECT_TRUE(g.status == 0 || g.status == 1) << g.out;
    expect_bounded(g, "get with a frozen leader");
    runs.push_back(std::move(p));
    runs.push_back(std::move(g));
  }
  // Once the others agree on a new leader, operations succeed while the old
  // one is still frozen.
  ASSERT_TRUE(eventually(
      [&] {
        auto r = run_conclave("cluster status --json --dir " + dir.string());
        auto st = nlohmann::json::parse(r.out, nullptr, false);
        return !st.is_discarded() && r.status == 0 && leaders(st) == 1;
      },
      10s));
  auto p = kv("put after v");
  EXPECT_EQ(p.status, 0) << p.out;
  expect_bounded(p, "put with a new leader, the old one frozen");
  auto g = kv("get before");
  EXPECT_EQ(g.status, 0) << g.out;
  EXPECT_EQ(g.out, "1\n");
  expect_bounded(g, "get with a new leader, the old one frozen");
  EXPECT_GE(runs.size(), 2u);
  signal(leader, "CONT");
  frozen = 0;
  down_and_check_replicas();
}

TEST_F(kv_timeout_test, a_stale_primary_cache_costs_a_detour_not_a_wrong_answer) {
  uint64_t leader = 0;
  ASSERT_NO_FATAL_FAILURE(up_and_write(leader));
  uint64_t follower = leader == 1 ? 2 : 1;
  auto file = cache_file();
  int i = 0;
  for (std::string stale :
       {std::to_string(follower), std::string{"9"}, std::string{"x"}}) {
    auto value = "v" + std::to_string(++i);
    write_cache(file, stale);
    auto p = kv("put stale " + value);
    EXPECT_EQ(p.status, 0) << "cache " << stale << ": " << p.out;
    expect_bounded(p, "put, the cache naming " + stale);
    // The follower sent kv on to the leader, and the cache says so now; a
    // cache naming no member was ignored (the status files named the leader).
    if (stale == std::to_string(follower))
      EXPECT_EQ(conclave::cluster::read_primary_cache(file), leader);
    write_cache(file, stale);
    auto g = kv("get stale");
    EXPECT_EQ(g.status, 0) << g.out;
    EXPECT_EQ(g.out, value + "\n") << "cache " << stale;
    expect_bounded(g, "get, the cache naming " + stale);
  }
  // The old path agrees.
  auto all = kv("--dial-all get stale");
  EXPECT_EQ(all.out, "v3\n");
  down_and_check_replicas();
}

TEST_F(kv_timeout_test, a_primary_cache_naming_a_frozen_follower_still_ends_in_time) {
  uint64_t leader = 0;
  ASSERT_NO_FATAL_FAILURE(up_and_write(leader));
  uint64_t follower = leader == 1 ? 2 : 1;
  auto file = cache_file();
  frozen = follower;
  signal(follower, "STOP");
  for (int i = 0; i < 2; ++i) {
    write_cache(file, std::to_string(follower));
    auto p = kv("put frozen v" + std::to_string(i));
    EXPECT_EQ(p.status, 0) << p.out;
    expect_bounded(p, "put, the cache naming a frozen follower");
    EXPECT_EQ(conclave::cluster::read_primary_cache(file), leader);
    write_cache(file, std::to_string(follower));
    auto g = kv("get frozen");
    EXPECT_EQ(g.status, 0) << g.out;
    EXPECT_EQ(g.out, "v" + std::to_string(i) + "\n");
    expect_bounded(g, "get, the cache naming a frozen follower");
  }
  signal(follower, "CONT");
  frozen = 0;
  down_and_check_replicas();
}
