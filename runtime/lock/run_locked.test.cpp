// run_locked with real processes: the runner runs in a child of the test
// (it installs signal handlers and a self-kill timer, and tests 4 and 5 stop
// and kill it), CMD is /bin/sh with a script, the lease is a scripted fake
// that logs what it is asked. Times are CLOCK_MONOTONIC, measured from the
// outside: a process counts as dead from the first poll (every millisecond)
// that finds it gone or a zombie, which is never before it died.
//
// The test process is a child subreaper: everything the runner starts ends up
// its child when its parent dies, and TearDown reaps it, by pid.
#include "runtime/lock/run_locked.hpp"

#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace conclave::lock {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

int64_t ns_of(clock::time_point t) {
  return std::chrono::duration_cast<nanoseconds>(t.time_since_epoch()).count();
}

clock::time_point at_ns(int64_t ns) {
  return clock::time_point{nanoseconds{ns}};
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in{p};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// 'R', 'S', 'Z', ... from /proc/PID/stat; 0 if there is no such process.
char process_state(pid_t pid) {
  auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

bool alive(pid_t pid) {
  char s = process_state(pid);
  return s != 0 && s != 'Z' && s != 'X';
}

std::vector<pid_t> pids_in(const std::filesystem::path& p) {
  std::istringstream in{read_file(p)};
  std::vector<pid_t> out;
  pid_t pid;
  while (in >> pid)
    out.push_back(pid);
  return out;
}

// -- the fake lease, living in the runner's process -----------------------------

enum class step { ok, lost, unknown, hang }; // hang: takes its whole budget, then unknown

/// Grants token 42 (after `acquire_delay`); renewals follow `script` (its last step
/// repeats). Appends "acquire NS", "renew BUDGET_MS OUTCOME NS" and "release TOKEN
/// dead|alive NS" to `log`, where dead means no process listed in `pids` (CMD's script
/// writes it) is alive.
class scripted_lease : public lease_session {
public:
  scripted_lease(std::vector<step> script, std::filesystem::path log,
                 std::filesystem::path pids, milliseconds acquire_delay)
      : script_(std::move(script)), log_(std::move(log)), pids_(std::move(pids)),
        acquire_delay_(acquire_delay) {}

  std::optional<uint64_t> acquire(milliseconds, std::string&) override {
    std::this_thread::sleep_for(acquire_delay_);
    append("acquire " + std::to_string(ns_of(clock::now())));
    return 42;
  }
  renew_outcome renew(uint64_t, milliseconds budget) override {
    auto s = script_[std::min(calls_++, script_.size() - 1)];
    if (s == step::hang)
      std::this_thread::sleep_for(budget);
    auto r = s == step::ok     ? renew_outcome::ok
             : s == step::lost ? renew_outcome::lost
                               : renew_outcome::unknown;
    const char* name = r == renew_outcome::ok     ? "ok"
                       : r == renew_outcome::lost ? "lost"
                                                  : "unknown";
    append("renew " + std::to_string(budget.count()) + " " + name + " "
           + std::to_string(ns_of(clock::now())));
    return r;
  }
  void release(uint64_t token) override {
    bool any = false;
    for (auto pid : pids_in(pids_))
      any = any || alive(pid);
    append("release " + std::to_string(token) + (any ? " alive " : " dead ")
           + std::to_string(ns_of(clock::now())));
  }

private:
  void append(const std::string& line) {
    std::ofstream out{log_, std::ios::app};
    out << line << "\n";
  }
  std::vector<step> script_;
  size_t calls_ = 0;
  std::filesystem::path log_;
  std::filesystem::path pids_;
  milliseconds acquire_delay_;
};

// CMD for the kill tests: sh (which ignores SIGTERM) with two grandchildren,
// `a` that dies on SIGTERM and `b` that ignores it (the ignored disposition is
// inherited); "SH A B" goes to DIR/pids once all three run.
constexpr const char* group_script = R"(
sleep 100 &
a=$!
trap '' TERM
sleep 100 &
b=$!
echo "$$ $a $b" > "$1/pids.tmp" && mv "$1/pids.tmp" "$1/pids"
wait
)";

// CMD for the pass-through test: the environment, a background process left
// behind, status 7.
constexpr const char* exit7_script = R"(
echo "$CONCLAVE_LOCK_NAME $CONCLAVE_LOCK_TOKEN" > "$1/env"
sleep 100 &
echo "$!" > "$1/pids.tmp" && mv "$1/pids.tmp" "$1/pids"
echo cmd-exit >> "$1/log"
exit 7
)";

class RunLocked : public ::testing::Test {
protected:
  void SetUp() override { ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0); }

  void TearDown() override {
    // Every pid this test learned of, by pid; then whatever was reparented here.
    for (auto pid : known_pids())
      if (pid > 0 && alive(pid))
        ::kill(pid, SIGKILL);
    if (runner_ > 0) {
      ::kill(runner_, SIGCONT);
      ::kill(runner_, SIGKILL);
      ::waitpid(runner_, nullptr, 0);
    }
    auto deadline = clock::now() + 5s;
    while (clock::now() < deadline) {
      pid_t p = ::waitpid(-1, nullptr, WNOHANG);
      if (p < 0)
        break; // no children left
      if (p == 0)
        std::this_thread::sleep_for(1ms);
    }
  }

  /// Forks the runner: run_locked(options, scripted lease, sh SCRIPT DIR).
  void start_runner(const lock_timing_options& timing, std::vector<step> script,
                    const char* cmd_script, milliseconds acquire_delay = 0ms) {
    { std::ofstream{dir_ / "cmd.sh"} << cmd_script; }
    t0_ = clock::now(); // before the runner exists: a lower bound of acquire's send time
    runner_ = ::fork();
    ASSERT_GE(runner_, 0);
    if (runner_ == 0) {
      scripted_lease lease{std::move(script), dir_ / "log", dir_ / "pids", acquire_delay};
      lock_options options;
      options.name = "test-lock";
      options.timing = timing;
      run_hooks hooks;
      auto started = dir_ / "started";
      hooks.started = [started](pid_t cmd, pid_t watchdog) {
        std::ofstream{started.string() + ".tmp"} << cmd << " " << watchdog << "\n";
        std::filesystem::rename(started.string() + ".tmp", started);
      };
      std::ofstream err{dir_ / "stderr"};
      int status = run_locked(
          options, lease, {"/bin/sh", (dir_ / "cmd.sh").string(), dir_.path().string()},
          err, hooks);
      err.flush();
      ::_exit(status);
    }
  }

  /// Waits (reaping what is ours to reap) until `file` exists.
  bool await_file(const std::string& file, nanoseconds limit = 5s) {
    auto deadline = clock::now() + limit;
    while (clock::now() < deadline) {
      if (std::filesystem::exists(dir_ / file))
        return true;
      reap_known();
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }

  /// Reads "CMD WATCHDOG" and "SH A B" once CMD's script runs.
  void await_group() {
    ASSERT_TRUE(await_file("pids")) << read_file(dir_ / "stderr");
    ASSERT_TRUE(await_file("started"));
    auto started = pids_in(dir_ / "started");
    ASSERT_EQ(started.size(), 2u);
    cmd_ = started[0];
    watchdog_ = started[1];
    group_ = pids_in(dir_ / "pids");
    ASSERT_EQ(group_.size(), 3u);
    EXPECT_EQ(group_[0], cmd_); // sh is CMD itself
  }

  /// When each of `pids` was first seen dead; clock::time_point::max() if not
  /// by `deadline`. Reaps what it may meanwhile (the runner waits for its
  /// group to be gone before it releases).
  std::map<pid_t, clock::time_point> deaths(const std::vector<pid_t>& pids,
                                            clock::time_point deadline) {
    std::map<pid_t, clock::time_point> seen;
    for (auto p : pids)
      seen[p] = clock::time_point::max();
    for (;;) {
      auto now = clock::now();
      bool all = true;
      for (auto& [pid, when] : seen) {
        if (when == clock::time_point::max() && !alive(pid))
          when = now;
        all = all && when != clock::time_point::max();
      }
      if (all || now >= deadline)
        return seen;
      reap_known();
      std::this_thread::sleep_for(1ms);
    }
  }

  /// The runner's wait status, waiting up to `limit`; -1 if it still runs.
  int await_runner(nanoseconds limit) {
    auto deadline = clock::now() + limit;
    while (clock::now() < deadline) {
      int status = 0;
      if (::waitpid(runner_, &status, WNOHANG) == runner_) {
        runner_ = -1;
        return status;
      }
      reap_known();
      std::this_thread::sleep_for(1ms);
    }
    return -1;
  }

  /// "KEY ..." lines of the fake's log, in order.
  std::vector<std::vector<std::string>> log_lines() {
    std::istringstream in{read_file(dir_ / "log")};
    std::vector<std::vector<std::string>> out;
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words{line};
      std::vector<std::string> w;
      std::string word;
      while (words >> word)
        w.push_back(word);
      out.push_back(w);
    }
    return out;
  }

  std::vector<pid_t> known_pids() {
    auto out = group_;
    out.push_back(cmd_);
    out.push_back(watchdog_);
    if (std::filesystem::exists(dir_ / "pids"))
      for (auto p : pids_in(dir_ / "pids"))
        out.push_back(p);
    return out;
  }

  /// Reaps, by pid, those of CMD's group that were reparented to the test.
  void reap_known() {
    for (auto pid : known_pids())
      if (pid > 0)
        ::waitpid(pid, nullptr, WNOHANG);
  }

  static lock_timing_options timing(nanoseconds ttl, nanoseconds grace,
                                    nanoseconds margin, nanoseconds renew) {
    lock_timing_options t;
    t.ttl = ttl;
    t.grace = grace;
    t.margin = margin;
    t.renew_interval = renew;
    return t;
  }

  test::temp_dir dir_{"conclave-lock"};
  clock::time_point t0_;
  pid_t runner_ = -1;
  pid_t cmd_ = -1;
  pid_t watchdog_ = -1;
  std::vector<pid_t> group_;
};

TEST_F(RunLocked, ExitStatusAndEnvironmentPassThroughAndReleaseFollowsTheWholeGroup) {
  start_runner(timing(2s, 300ms, 100ms, 500ms), {step::ok}, exit7_script);
  int status = await_runner(5s);
  ASSERT_TRUE(WIFEXITED(status)) << status << " " << read_file(dir_ / "stderr");
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_EQ(read_file(dir_ / "env"), "test-lock 42\n");
  auto log = log_lines();
  ASSERT_GE(log.size(), 3u) << read_file(dir_ / "log");
  EXPECT_EQ(log.front()[0], "acquire");
  EXPECT_EQ(log[log.size() - 2][0], "cmd-exit");
  // Released once, last, after CMD's exit and after the `sleep` it left
  // behind was killed.
  ASSERT_EQ(log.back().size(), 4u);
  EXPECT_EQ(log.back()[0], "release");
  EXPECT_EQ(log.back()[1], "42");
  EXPECT_EQ(log.back()[2], "dead");
  EXPECT_EQ(read_file(dir_ / "stderr"), "");
}

TEST_F(RunLocked, LostLeaseTerminatesTheGroupAtOnceAndKillsItAfterGrace) {
  const auto grace = 500ms;
  const auto bound = 250ms; // the test polls, and the machine is shared
  start_runner(timing(3s, grace, 100ms, 300ms), {step::lost}, group_script);
  await_group();
  auto seen = deaths({group_[0], group_[1], group_[2], watchdog_}, clock::now() + 3s);
  int status = await_runner(3s);
  auto log = log_lines();
  ASSERT_GE(log.size(), 2u);
  ASSERT_EQ(log[1][0], "renew");
  ASSERT_EQ(log[1][2], "lost");
  auto lost_at = at_ns(std::stoll(log[1][3]));
  auto [sh, a, b] = std::tuple{group_[0], group_[1], group_[2]};
  EXPECT_LT(seen[a], lost_at + bound) << "SIGTERM at once";
  for (auto pid : {sh, b, watchdog_}) {
    EXPECT_GE(seen[pid], lost_at + grace) << pid << ": SIGKILL only after grace";
    EXPECT_LT(seen[pid], lost_at + grace + bound) << pid;
  }
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), lock_exit::lease_lost);
  EXPECT_EQ(read_file(dir_ / "stderr"),
            "conclave lock: lease 'test-lock' was lost (token 42 is no longer current); "
            "stopped CMD\n");
  EXPECT_EQ(log.back()[0], "release");
  EXPECT_EQ(log.back()[2], "dead");
}

TEST_F(RunLocked, HangingRenewalsNeverLetTheGroupOutliveTheLease) {
  const auto ttl = 2s;
  start_runner(timing(ttl, 400ms, 400ms, 400ms), {step::hang}, group_script);
  await_group();
  auto seen = deaths({group_[0], group_[1], group_[2], watchdog_}, t0_ + 2 * ttl);
  int status = await_runner(3s);
  for (auto& [pid, when] : seen)
    EXPECT_LT(when, t0_ + ttl) << pid << " outlived safe_until ("
                               << (when - t0_).count() / 1'000'000 << " ms after start)";
  EXPECT_LT(seen[group_[1]], seen[group_[2]]) << "SIGTERM came before SIGKILL";
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), lock_exit::lease_lost);
  EXPECT_NE(read_file(dir_ / "stderr").find("could not be renewed within 1.2s"),
            std::string::npos)
      << read_file(dir_ / "stderr");
  // Every renewal kept to its budget, and the budgets ended before SIGTERM.
  auto log = log_lines();
  auto acquired = at_ns(std::stoll(log.at(0).at(1)));
  int renewals = 0;
  for (auto& l : log)
    if (l[0] == "renew") {
      ++renewals;
      EXPECT_LE(std::stoi(l[1]), 400);
      EXPECT_LT(at_ns(std::stoll(l[3])), acquired + 1200ms + 100ms);
    }
  EXPECT_GE(renewals, 2);
}

TEST_F(RunLocked, WatchdogKillsTheGroupOfAStoppedRunnerBeforeTheLeaseEnds) {
  const auto ttl = 2s;
  start_runner(timing(ttl, 400ms, 200ms, 400ms), {step::ok}, group_script);
  await_group();
  ASSERT_EQ(::kill(runner_, SIGSTOP), 0);
  auto seen = deaths({group_[0], group_[1], group_[2], watchdog_}, t0_ + 2 * ttl);
  for (auto& [pid, when] : seen)
    EXPECT_LT(when, t0_ + ttl) << pid << " outlived safe_until ("
                               << (when - t0_).count() / 1'000'000 << " ms after start)";
  // The stopped runner's own last resort: its timer SIGKILLs it at
  // safe_until - margin/2, stopped or not.
  int status = await_runner(1s);
  ASSERT_NE(status, -1) << "the stopped runner was not ended by its timer";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  auto log = log_lines();
  for (auto& l : log)
    EXPECT_NE(l[0], "release") << "a runner killed while stopped cannot release";
}

TEST_F(RunLocked, KilledRunnerTakesTheGroupWithIt) {
  start_runner(timing(10s, 1s, 200ms, 2s), {step::ok}, group_script);
  await_group();
  ASSERT_EQ(::kill(runner_, SIGKILL), 0);
  auto killed_at = clock::now();
  auto seen = deaths({group_[0], group_[1], group_[2], watchdog_}, killed_at + 3s);
  for (auto& [pid, when] : seen)
    EXPECT_LT(when, killed_at + 500ms) << pid;
  int status = await_runner(1s);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
}

TEST_F(RunLocked, SigtermToTheRunnerIsForwardedThenGraceThenSigkill) {
  const auto grace = 400ms;
  const auto bound = 250ms;
  start_runner(timing(10s, grace, 200ms, 2s), {step::ok}, group_script);
  await_group();
  auto sent = clock::now();
  ASSERT_EQ(::kill(runner_, SIGTERM), 0);
  auto seen = deaths({group_[0], group_[1], group_[2], watchdog_}, sent + 3s);
  EXPECT_LT(seen[group_[1]], sent + bound) << "SIGTERM forwarded at once";
  for (auto pid : {group_[0], group_[2], watchdog_}) {
    EXPECT_GE(seen[pid], sent + grace) << pid;
    EXPECT_LT(seen[pid], sent + grace + bound) << pid;
  }
  int status = await_runner(3s);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGKILL); // CMD's own status, as a shell says it
  EXPECT_EQ(read_file(dir_ / "stderr"), "");
  auto log = log_lines();
  EXPECT_EQ(log.back()[0], "release");
  EXPECT_EQ(log.back()[2], "dead");
}

TEST_F(RunLocked, AcquireLongerThanARenewIntervalIsConfirmedBeforeCmdStarts) {
  // The send time of acquire's winning request is unknown; after a long wait
  // the runner renews once, for a fresh one, before CMD may run.
  start_runner(timing(2s, 300ms, 100ms, 500ms), {step::ok}, exit7_script, 600ms);
  int status = await_runner(5s);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 7);
  auto log = log_lines();
  ASSERT_GE(log.size(), 4u);
  EXPECT_EQ(log[0][0], "acquire");
  EXPECT_EQ(log[1][0], "renew");
  EXPECT_EQ(log[2][0], "cmd-exit");
  EXPECT_EQ(log.back()[0], "release");
}

TEST_F(RunLocked, AcquireLongerThanARenewIntervalThenLostNeverStartsCmd) {
  start_runner(timing(2s, 300ms, 100ms, 500ms), {step::lost}, exit7_script, 600ms);
  int status = await_runner(5s);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), lock_exit::not_acquired);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "env"));
  auto log = log_lines();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[2][0], "release");
}

TEST(RunLockedChecks, InvalidTimingExitsTwoWithOneLineAndAsksNoLease) {
  struct untouchable : lease_session {
    std::optional<uint64_t> acquire(milliseconds, std::string&) override {
      ADD_FAILURE() << "acquire";
      return std::nullopt;
    }
    renew_outcome renew(uint64_t, milliseconds) override {
      ADD_FAILURE() << "renew";
      return renew_outcome::lost;
    }
    void release(uint64_t) override { ADD_FAILURE() << "release"; }
  } lease;
  for (auto [ttl, grace] : {std::pair{0ns, 0ns},
                            {1ns, 0ns},
                            {nanoseconds::max(), 2s},
                            {10s, 10s},
                            {10s, 20s},
                            {10s, -1s}}) {
    lock_options o;
    o.timing.ttl = ttl;
    o.timing.grace = grace;
    std::ostringstream err;
    EXPECT_EQ(run_locked(o, lease, {"true"}, err), lock_exit::usage);
    auto text = err.str();
    EXPECT_EQ(text.rfind("conclave lock: --", 0), 0u) << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  }
  std::ostringstream err;
  EXPECT_EQ(run_locked({}, lease, {}, err), lock_exit::usage);
  EXPECT_EQ(run_locked({}, lease, {"conclave-lock-no-such-command"}, err),
            lock_exit::not_found);
  EXPECT_EQ(run_locked({}, lease, {"/"}, err), lock_exit::cannot_execute);
  EXPECT_EQ(err.str(), "conclave lock: no command to run\n"
                       "conclave lock: conclave-lock-no-such-command: command not found\n"
                       "conclave lock: /: not an executable file\n");
}

} // namespace
} // namespace conclave::lock
