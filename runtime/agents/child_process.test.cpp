// child_process (child_process.hpp): real, short shell commands.
#include "runtime/agents/child_process.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <thread>

using conclave::agents::child_process;

namespace {

std::shared_ptr<child_process> start(const std::string& cmd,
                                     std::vector<std::string> extra = {}) {
  std::string error;
  auto c = child_process::start(cmd, child_process::environment_with(extra), error);
  EXPECT_TRUE(c) << error;
  return c;
}

TEST(builtin_exec_child_process, reports_the_exit_code_and_the_combined_output) {
  auto c = start("echo out; echo err >&2; exit 7");
  ASSERT_TRUE(c);
  auto r = c->wait(1024);
  ASSERT_FALSE(r.lost);
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 7);
  EXPECT_EQ(r.output_tail, "out\nerr\n");
}

TEST(builtin_exec_child_process, runs_in_its_own_process_group_with_stdin_from_dev_null) {
  auto c = start("ps -o pgid= -p $$ | tr -d ' '; cat; echo eof");
  ASSERT_TRUE(c);
  auto r = c->wait(1024);
  EXPECT_EQ(r.output_tail, std::to_string(c->pid()) + "\neof\n");
  EXPECT_NE(c->pid(), ::getpgrp());
}

TEST(builtin_exec_child_process, cuts_the_tail_at_a_utf8_character_boundary) {
  // Three two-byte characters; the last 3 bytes start inside the second.
  auto c = start("printf '\\303\\251\\303\\251\\303\\251'");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->wait(3).output_tail, "\xC3\xA9");
}

TEST(builtin_exec_child_process, adds_and_overrides_environment_variables) {
  ::setenv("CONCLAVE_TEST_KEEP", "kept", 1);
  ::setenv("CONCLAVE_TEST_OVERRIDE", "old", 1);
  auto env = child_process::environment_with({"CONCLAVE_TEST_OVERRIDE=new"});
  EXPECT_EQ(std::count(env.begin(), env.end(), "CONCLAVE_TEST_OVERRIDE=new"), 1);
  EXPECT_EQ(std::count(env.begin(), env.end(), "CONCLAVE_TEST_OVERRIDE=old"), 0);
  EXPECT_EQ(std::count(env.begin(), env.end(), "CONCLAVE_TEST_KEEP=kept"), 1);
  auto c = start("echo $CONCLAVE_TEST_KEEP $CONCLAVE_TEST_OVERRIDE",
                 {"CONCLAVE_TEST_OVERRIDE=new"});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->wait(1024).output_tail, "kept new\n");
}

TEST(builtin_exec_child_process, kill_during_wait_ends_it_with_sigkill) {
  auto c = start("sleep 30");
  ASSERT_TRUE(c);
  std::thread killer{[c] {
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
    c->kill();
  }};
  auto r = c->wait(1024);
  killer.join();
  ASSERT_TRUE(WIFSIGNALED(r.status));
  EXPECT_EQ(WTERMSIG(r.status), SIGKILL);
  c->kill(); // after the reap: signals nothing, harmless
}

TEST(builtin_exec_child_process,
     a_child_never_waited_for_is_killed_and_reaped_with_its_handle) {
  pid_t pid;
  {
    auto c = start("sleep 30");
    ASSERT_TRUE(c);
    pid = c->pid();
  }
  // Reaped by us: the pid is no longer our child.
  EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(::kill(pid, 0), -1);
}

} // namespace
