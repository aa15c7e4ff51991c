// apply_nice: the thread's nice value (inherited by the threads it starts,
// not by its parent's), the session's autogroup only for a session leader,
// and a clear line when a negative value is not allowed.
#include "runtime/node/os_priority.hpp"

#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace conclave::node;

namespace {

/// A path in this test process's own directory, removed when the process
/// exits (forked children leave with _exit and remove nothing).
std::filesystem::path temp_file(const std::string& name) {
  static conclave::test::temp_dir dir{"conclave-nice"};
  auto p = dir / name;
  std::filesystem::remove(p);
  return p;
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in{p};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool autogroups_on() {
  std::ifstream in{"/proc/sys/kernel/sched_autogroup_enabled"};
  int on = 0;
  return in >> on && on != 0;
}

/// Runs `body` in a forked child and returns the line it produced (what a
/// child changes, its session or its user, stays in the child).
std::string in_child(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0)
    return "pipe failed";
  auto pid = ::fork();
  if (pid < 0)
    return "fork failed";
  if (pid == 0) {
    ::close(fds[0]);
    auto line = body();
    (void)!::write(fds[1], line.data(), line.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string got;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    got.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return got;
}

} // namespace

TEST(os_priority, zero_changes_nothing_and_says_nothing) {
  auto before = current_nice();
  auto r = apply_nice(0, false, temp_file("zero").string());
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.what.empty()) << r.what;
  EXPECT_EQ(current_nice(), before);
}

TEST(os_priority, a_thread_takes_the_value_and_the_threads_it_starts_inherit_it) {
  auto main_before = current_nice();
  auto group = temp_file("group");
  int set = -100, inherited = -100;
  nice_result r;
  std::thread t{[&] {
    r = apply_nice(main_before + 3, false, group.string());
    set = current_nice();
    std::thread child{[&] { inherited = current_nice(); }};
    child.join();
  }};
  t.join();
  EXPECT_TRUE(r.ok) << r.what;
  EXPECT_NE(r.what.find("nice " + std::to_string(main_before + 3)), std::string::npos)
      << r.what;
  EXPECT_EQ(set, main_before + 3);
  EXPECT_EQ(inherited, main_before + 3);
  EXPECT_EQ(current_nice(), main_before); // not the thread that started it
  // Without all_threads, only the thread itself.
  EXPECT_EQ(r.what.rfind("this thread runs at nice", 0), 0u) << r.what;
  // The test does not lead its session: its session's group is left alone.
  ASSERT_NE(::getsid(0), ::getpid());
  EXPECT_FALSE(std::filesystem::exists(group));
}

TEST(os_priority, a_session_leader_also_sets_its_autogroup) {
  auto group = temp_file("leader");
  auto got = in_child([&] {
    ::setsid();
    auto r = apply_nice(current_nice() + 4, true, group.string());
    return (r.ok ? "ok " : "no ") + r.what;
  });
  EXPECT_EQ(got.rfind("ok ", 0), 0u) << got;
  if (autogroups_on()) {
    EXPECT_NE(got.find("autogroup"), std::string::npos) << got;
    EXPECT_EQ(read_all(group), std::to_string(current_nice() + 4) + "\n");
  } else {
    EXPECT_FALSE(std::filesystem::exists(group)) << got;
  }
}

TEST(os_priority, a_negative_value_is_taken_with_the_privilege_or_refused_with_why) {
  nice_result r;
  int after = 0, before = 0;
  std::thread t{[&] {
    before = current_nice();
    r = apply_nice(-1, false, temp_file("negative").string());
    after = current_nice();
  }};
  t.join();
  if (r.ok) {
    EXPECT_EQ(after, -1); // root, or CAP_SYS_NICE
  } else {
    EXPECT_EQ(after, before);
    EXPECT_NE(r.what.find("CAP_SYS_NICE"), std::string::npos) << r.what;
    EXPECT_NE(r.what.find("runs at the priority it was started with"), std::string::npos)
        << r.what;
  }
}

TEST(os_priority, without_the_privilege_a_negative_value_is_refused_with_why) {
  // As root (CI), drop to an unprivileged user in a child first, so the
  // refusal is exercised wherever the test runs; as another user the test
  // above already took this branch.
  if (::geteuid() != 0)
    GTEST_SKIP() << "not root: the refusal is covered by the test above";
  auto got = in_child([] {
    rlimit none{0, 0}; // RLIMIT_NICE 0: no raise allowed without the capability
    if (::setrlimit(RLIMIT_NICE, &none) != 0 || ::setgid(65534) != 0
        || ::setuid(65534) != 0)
      return std::string{"setup failed"};
    auto before = current_nice();
    auto r = apply_nice(-5, true, "/nonexistent/autogroup");
    return (r.ok ? "ok " : "no ") + std::to_string(current_nice() == before) + " "
           + r.what;
  });
  ASSERT_NE(got, "setup failed");
  EXPECT_EQ(got.rfind("no 1 could not set nice -5 (", 0), 0u) << got;
  EXPECT_NE(got.find("CAP_SYS_NICE"), std::string::npos) << got;
}
