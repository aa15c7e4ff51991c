#include "runtime/node/bounded_connect.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace conclave::node;
using namespace std::chrono_literals;

namespace {

sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  return a;
}

/// A loopback listener that never accepts. With `fill`, its accept queue is
/// filled first, so the kernel drops every further SYN: a dial to it hangs
/// like one to a host cut off by the network.
struct listener {
  int fd = -1;
  uint16_t port = 0;
  std::vector<int> fillers;

  explicit listener(bool fill) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    auto a = loopback(0);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd, 0), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    if (!fill)
      return;
    // Non-blocking dials complete in the kernel until the queue is full.
    for (int i = 0; i < 4; ++i) {
      int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      auto to = loopback(port);
      ::connect(c, reinterpret_cast<sockaddr*>(&to), sizeof to);
      fillers.push_back(c);
    }
    std::this_thread::sleep_for(50ms); // let the handshakes land in the queue
  }

  ~listener() {
    for (int c : fillers)
      ::close(c);
    ::close(fd);
  }
};

int libc_connect(int fd, const sockaddr* a, socklen_t n) {
  static auto real = reinterpret_cast<connect_fn>(::dlsym(RTLD_NEXT, "connect"));
  return real(fd, a, n);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

} // namespace

TEST(bounded_connect, the_timeout_comes_from_the_environment_or_the_default) {
  EXPECT_EQ(parse_connect_timeout(nullptr), default_connect_timeout_ms);
  EXPECT_EQ(parse_connect_timeout(""), default_connect_timeout_ms);
  EXPECT_EQ(parse_connect_timeout("0"), 0);
  EXPECT_EQ(parse_connect_timeout("250"), 250);
  EXPECT_EQ(parse_connect_timeout("3600000"), 3'600'000);
  for (auto bad : {"abc", "-5", "12ms", "3600001", "99999999999999999999", " 5"})
    EXPECT_EQ(parse_connect_timeout(bad), default_connect_timeout_ms) << bad;
}

TEST(bounded_connect, a_reachable_listener_connects_and_the_socket_stays_blocking) {
  listener l{false};
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  auto a = loopback(l.port);
  EXPECT_EQ(
      connect_within(fd, reinterpret_cast<sockaddr*>(&a), sizeof a, 500, libc_connect),
      0);
  EXPECT_EQ(::fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
  ::close(fd);
}

TEST(bounded_connect, a_refused_dial_fails_at_once_with_the_kernels_error) {
  int probe = ::socket(AF_INET, SOCK_STREAM, 0);
  auto a = loopback(0);
  ::bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(probe, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(probe); // nothing listens there now
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  auto t = std::chrono::steady_clock::now();
  errno = 0;
  EXPECT_EQ(
      connect_within(fd, reinterpret_cast<sockaddr*>(&a), sizeof a, 5000, libc_connect),
      -1);
  EXPECT_EQ(errno, ECONNREFUSED);
  EXPECT_LT(seconds_since(t), 1.0);
  ::close(fd);
}

TEST(bounded_connect, a_dial_nobody_answers_gives_up_at_the_timeout) {
  listener l{true};
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  auto a = loopback(l.port);
  auto t = std::chrono::steady_clock::now();
  errno = 0;
  EXPECT_EQ(
      connect_within(fd, reinterpret_cast<sockaddr*>(&a), sizeof a, 200, libc_connect),
      -1);
  EXPECT_EQ(errno, ETIMEDOUT);
  auto took = seconds_since(t);
  EXPECT_GE(took, 0.19);
  EXPECT_LT(took, 0.9); // unbounded, the kernel retries the SYN for about 2 minutes
  EXPECT_EQ(::fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
  ::close(fd);
}

TEST(bounded_connect, non_blocking_and_non_tcp_sockets_are_passed_on_untouched) {
  listener l{true};
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  auto a = loopback(l.port);
  errno = 0;
  EXPECT_EQ(
      connect_within(fd, reinterpret_cast<sockaddr*>(&a), sizeof a, 200, libc_connect),
      -1);
  EXPECT_EQ(errno, EINPROGRESS); // the caller's own non-blocking dial
  ::close(fd);
  int udp = ::socket(AF_INET, SOCK_DGRAM, 0);
  EXPECT_EQ(
      connect_within(udp, reinterpret_cast<sockaddr*>(&a), sizeof a, 200, libc_connect),
      0);
  ::close(udp);
}

TEST(bounded_connect, this_executables_connect_is_the_bounded_one) {
  ASSERT_TRUE(bounded_connect_active());
  listener l{true};
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  auto a = loopback(l.port);
  auto t = std::chrono::steady_clock::now();
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), -1);
  EXPECT_EQ(errno, ETIMEDOUT);
  EXPECT_LT(seconds_since(t), connect_timeout_ms() / 1000.0 + 1.0);
  ::close(fd);
}
