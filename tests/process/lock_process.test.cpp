// `conclave lock`, `elect`, `leader` and the C++ lease API (examples/
// lease_lock) against a real 3-node cluster on loopback: exit statuses and
// the environment of CMD, FIFO hand-over with growing tokens, a holder whose
// `conclave lock` is frozen (SIGSTOP) losing its command before the next
// holder starts, fenced writes from C++, and bad input. Judged from the order
// of the lines the commands append to one file (O_APPEND: one order).
#include "tests/process/process_support.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <regex>

using namespace conclave::process_test;
using namespace std::chrono_literals;

namespace {

class lock_cluster : public cluster_test {
protected:
  void SetUp() override {
    cluster_test::SetUp();
    auto j = up(3, "--insecure");
    ASSERT_TRUE(j.contains("leader")) << j.dump();
    log = dir / "lock.log";
  }

  std::string lock_cmd(const std::string& args) const {
    return std::string{CONCLAVE_BIN} + " lock demo --dir " + dir.string() + " " + args;
  }

  /// Starts `sh -c 'exec CMD'` in the background: its pid is CMD's own.
  static pid_t spawn(const std::string& cmd) {
    auto line = "exec " + cmd;
    pid_t pid = ::fork();
    if (pid == 0) {
      ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  }

  /// Waits up to `limit` for `pid`; its exit status (-1: killed by a signal,
  /// -2: still running, then SIGKILLed).
  static int reap(pid_t pid, std::chrono::milliseconds limit) {
    auto end = std::chrono::steady_clock::now() + limit;
    int st = 0;
    while (::waitpid(pid, &st, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() >= end) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &st, 0);
        return -2;
      }
      std::this_thread::sleep_for(5ms);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }

  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::istringstream in{read_file(log)};
    for (std::string l; std::getline(in, l);)
      out.push_back(l);
    return out;
  }

  std::filesystem::path log;
};

TEST_F(lock_cluster, cmd_gets_name_and_token_and_its_exit_status_passes_through) {
  auto r = conclave::testing::run_command(
      lock_cmd("--ttl 3s --grace 500ms -- sh -c 'echo $CONCLAVE_LOCK_NAME "
               "$CONCLAVE_LOCK_TOKEN; exit 7'"));
  EXPECT_EQ(r.status, 7) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex{R"(demo (\d+))"})) << r.out;
  auto first = std::stoull(m[1]);
  r = conclave::testing::run_command(
      lock_cmd("--ttl 3s --grace 500ms -- sh -c 'echo $CONCLAVE_LOCK_TOKEN'"));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_GT(std::stoull(r.out), first) << r.out;
  // A command that is not there: 127, and no lease was taken.
  r = conclave::testing::run_command(lock_cmd("-- /no/such/program 2>&1"));
  EXPECT_EQ(r.status, 127) << r.out;
  // The lease is free again: a try succeeds at once.
  r = conclave::testing::run_command(lock_cmd("--ttl 3s --grace 500ms -- true"));
  EXPECT_EQ(r.status, 0) << r.out;
}

TEST_F(lock_cluster, kv_writes_fenced_by_the_lock_token_are_refused_once_stale) {
  auto kv = std::string{CONCLAVE_BIN} + " kv --dir " + dir.string();
  auto r = conclave::testing::run_command(
      lock_cmd("--ttl 3s --grace 500ms -- sh -c '" + kv
               + " --fence $CONCLAVE_LOCK_NAME=$CONCLAVE_LOCK_TOKEN put owner "
                 "$CONCLAVE_LOCK_TOKEN >/dev/null && echo $CONCLAVE_LOCK_TOKEN'"));
  ASSERT_EQ(r.status, 0) << r.out;
  auto token = r.out.substr(0, r.out.find('\n'));
  // The lease was released when the command ended: the token is stale.
  r = conclave::testing::run_command(kv + " --fence demo=" + token
                                     + " put owner late 2>&1");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("stale_token"), std::string::npos) << r.out;
  auto owner = run_conclave("kv --dir " + dir.string() + " get owner");
  EXPECT_EQ(owner.out, token + "\n");
  for (auto bad : {"--fence demo put a b", "--fence demo=0 put a b", "--fence =5 put a b",
                   "--fence demo=5 get a", "--fence demo=5 put --weak a b"}) {
    r = conclave::testing::run_command(kv + " " + bad + " 2>&1");
    EXPECT_EQ(r.status, 2) << bad << ": " << r.out;
  }
}

TEST_F(lock_cluster, bad_input_is_one_line_and_exit_2) {
  for (auto args : {"--ttl 1s --grace 2s -- true", "--ttl 0 -- true", "--ttl 10x -- true",
                    "-n 0 -- true", "--ttl 25h -- true", ""}) {
    auto r = conclave::testing::run_command(lock_cmd(args) + " 2>&1");
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << ": " << r.out;
    EXPECT_EQ(r.out.rfind("conclave: error: ", 0), 0u) << args << ": " << r.out;
  }
  auto r = conclave::testing::run_command(std::string{CONCLAVE_BIN}
                                          + " lock demo --dir /nonexistent -- true 2>&1");
  EXPECT_EQ(r.status, 2) << r.out;
}

TEST_F(lock_cluster, waiters_take_turns_with_growing_tokens_and_never_overlap) {
  std::vector<pid_t> pids;
  for (int i = 0; i < 3; ++i) {
    pids.push_back(
        spawn(lock_cmd("--ttl 3s --grace 500ms --wait 20s -- sh -c 'echo start "
                       "$CONCLAVE_LOCK_TOKEN >> "
                       + log.string() + "; sleep 0.3; echo end $CONCLAVE_LOCK_TOKEN >> "
                       + log.string() + "'")));
  }
  for (auto p : pids)
    EXPECT_EQ(reap(p, 30s), 0);
  auto l = lines();
  ASSERT_EQ(l.size(), 6u) << read_file(log);
  uint64_t last = 0;
  for (size_t i = 0; i < l.size(); i += 2) {
    std::smatch a, b;
    ASSERT_TRUE(std::regex_match(l[i], a, std::regex{R"(start (\d+))"}))
        << read_file(log);
    ASSERT_TRUE(std::regex_match(l[i + 1], b, std::regex{R"(end (\d+))"}))
        << read_file(log);
    EXPECT_EQ(a[1], b[1]) << read_file(log);
    EXPECT_GT(std::stoull(a[1]), last) << read_file(log);
    last = std::stoull(a[1]);
  }
  // The replicas' logs, lease records included, check clean offline.
  down_and_check_replicas();
}

TEST_F(lock_cluster, a_frozen_holders_command_is_dead_before_the_next_holder_starts) {
  // A's command appends a line every 20 ms; A's `conclave lock` is stopped.
  auto a = spawn(lock_cmd("--ttl 2s --grace 300ms -- sh -c 'while true; do echo A >> "
                          + log.string() + "; sleep 0.02; done'"));
  ASSERT_TRUE(eventually([&] { return lines().size() >= 3; }, 5s));
  ::kill(a, SIGSTOP);
  auto stopped_at = std::chrono::steady_clock::now();
  auto b = spawn(lock_cmd("--ttl 2s --grace 300ms --wait 20s -- sh -c 'echo B >> "
                          + log.string() + "'"));
  EXPECT_EQ(reap(b, 20s), 0);
  auto waited = std::chrono::steady_clock::now() - stopped_at;
  // B got the lease only once A's could expire (2 s, widened for drift).
  EXPECT_GE(waited, 1500ms);
  auto l = lines();
  ASSERT_FALSE(l.empty());
  EXPECT_EQ(l.back(), "B") << "A's command wrote after B started";
  // Nothing more from A's command, ever.
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(lines().size(), l.size());
  ::kill(a, SIGCONT);
  EXPECT_NE(reap(a, 5s), 0); // killed by its own last-resort timer, or lease lost
}

#ifdef LEASE_LOCK_BIN
TEST_F(lock_cluster, cpp_holders_take_turns_and_fenced_writes_carry_the_newest_token) {
  auto cmd = [&](int hold) {
    return std::string{LEASE_LOCK_BIN} + " --dir " + dir.string()
           + " --ttl-ms 2000 --wait-ms 20000 --hold-ms " + std::to_string(hold) + " >> "
           + log.string();
  };
  auto watch_out = dir / "watch.out";
  auto w = spawn(std::string{LEASE_LOCK_BIN} + " --dir " + dir.string()
                 + " --watch-ms 4000 > " + watch_out.string());
  std::this_thread::sleep_for(500ms);
  auto a = spawn(cmd(800));
  auto b = spawn(cmd(100));
  EXPECT_EQ(reap(a, 30s), 0);
  EXPECT_EQ(reap(b, 30s), 0);
  EXPECT_EQ(reap(w, 10s), 0);
  std::vector<uint64_t> tokens;
  for (auto& l : lines()) {
    std::smatch m;
    if (std::regex_match(l, m, std::regex{R"(token (\d+))"}))
      tokens.push_back(std::stoull(m[1]));
  }
  ASSERT_EQ(tokens.size(), 2u) << read_file(log);
  // The watch saw nobody, each holder in turn, and nobody again.
  auto watched = read_file(watch_out);
  EXPECT_EQ(watched.rfind("holders: none\n", 0), 0u) << watched;
  for (auto t : tokens)
    EXPECT_NE(watched.find("holders: " + std::to_string(t) + " "), std::string::npos)
        << watched;
  EXPECT_GE(watched.size(), 14u);
  EXPECT_EQ(watched.substr(watched.size() - 14), "holders: none\n") << watched;
  auto r = run_conclave("kv --dir " + dir.string()
                        + " --collection lease-example get last-writer");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, std::to_string(std::max(tokens[0], tokens[1])) + "\n");
}

TEST_F(lock_cluster, a_cpp_holder_cut_off_from_a_majority_is_told_before_its_lease_ends) {
  // The holder's renewals cannot commit once two of the three members are
  // frozen: on_lost must run (the example exits 75) before the lease's ttl
  // has passed since its last successful renewal, hence within one ttl.
  auto out = dir / "holder.out";
  auto holder = spawn(std::string{LEASE_LOCK_BIN} + " --dir " + dir.string()
                      + " --ttl-ms 1000 --wait-ms 5000 --hold-ms 20000 > " + out.string()
                      + " 2>&1");
  ASSERT_TRUE(
      eventually([&] { return read_file(out).find("token ") != std::string::npos; }, 10s))
      << read_file(out);
  std::this_thread::sleep_for(500ms);
  auto stopped_at = std::chrono::steady_clock::now();
  for (uint64_t n : {1, 2})
    run_conclave("cluster kill --dir " + dir.string() + " --node " + std::to_string(n)
                 + " --signal STOP");
  int status = reap(holder, 10s);
  auto took = std::chrono::steady_clock::now() - stopped_at;
  for (uint64_t n : {1, 2})
    run_conclave("cluster kill --dir " + dir.string() + " --node " + std::to_string(n)
                 + " --signal CONT");
  EXPECT_EQ(status, 75) << read_file(out);
  EXPECT_NE(read_file(out).find("lost the lease"), std::string::npos) << read_file(out);
  // Within about one ttl of the freeze (a renewal may still succeed while
  // the two members are being stopped), long before its 20 s hold.
  EXPECT_LT(took, 1600ms) << read_file(out);
}
#endif

TEST_F(lock_cluster, elect_runs_a_command_while_leading_and_holding_ends_cleanly) {
  auto elect = std::string{CONCLAVE_BIN} + " elect boss --dir " + dir.string()
               + " --ttl 2s --grace 300ms";
  auto a = spawn(elect + " -- sh -c 'echo A $CONCLAVE_LOCK_TOKEN >> " + log.string()
                 + "; sleep 1' > /dev/null");
  ASSERT_TRUE(eventually([&] { return !lines().empty(); }, 5s));
  auto b_out = dir / "b.out";
  auto b = spawn(elect + " > " + b_out.string());
  EXPECT_EQ(reap(a, 10s), 0);
  // B campaigned behind A and leads once A's command ended.
  ASSERT_TRUE(eventually([&] { return read_file(b_out) == "elected\n"; }, 5s))
      << read_file(b_out);
  ::kill(b, SIGTERM);
  EXPECT_EQ(reap(b, 5s), 0);
  // Released: a try succeeds at once.
  auto r =
      conclave::testing::run_command(std::string{CONCLAVE_BIN} + " lock boss --dir "
                                     + dir.string() + " --ttl 2s --grace 300ms -- true");
  EXPECT_EQ(r.status, 0) << r.out;
}

TEST_F(lock_cluster, leader_and_observe_name_who_leads_and_who_holds) {
  auto st = status();
  uint64_t leader = 0;
  for (auto& n : st["nodes"])
    if (n["is_leader"].get<bool>())
      leader = n["id"].get<uint64_t>();
  auto r = run_conclave("leader --dir " + dir.string());
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind(std::to_string(leader) + " ", 0), 0u) << r.out;
  auto obs =
      spawn(std::string{CONCLAVE_BIN} + " elect demo --observe --interval 50ms --dir "
            + dir.string() + " >> " + log.string());
  std::this_thread::sleep_for(500ms);
  auto held = conclave::testing::run_command(
      lock_cmd("--ttl 3s --grace 500ms --label observed -- sleep 0.5"));
  EXPECT_EQ(held.status, 0);
  std::this_thread::sleep_for(500ms);
  ::kill(obs, SIGTERM);
  EXPECT_EQ(reap(obs, 5s), 0);
  auto text = read_file(log);
  EXPECT_NE(text.find("demo: none"), std::string::npos) << text;
  EXPECT_NE(text.find("observed token "), std::string::npos) << text;
}

} // namespace
