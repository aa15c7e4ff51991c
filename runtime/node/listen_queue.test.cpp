// Widening a listening socket's queue (listen_queue.hpp): the kernel keeps
// the new length, and a burst of connections nobody accepts yet is queued
// rather than dropped.
#include "runtime/node/listen_queue.hpp"

#include "tests/support/listen_diag.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>

#include <chrono>
#include <fstream>
#include <vector>

using conclave::node::widen_listen_queue;
using conclave::testing::listen_backlog;

namespace {

/// A socket listening on 127.0.0.1 at a port of the kernel's choice.
int listener(int backlog, uint16_t& port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0
      || ::listen(fd, backlog) != 0
      || ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return -1;
  port = ntohs(a.sin_port);
  return fd;
}

/// Opens `n` connections to `port` at once and counts those the kernel
/// completed within 500 ms (a dropped SYN is retried only after 1 s).
int connections_completed(uint16_t port, int n) {
  std::vector<pollfd> fds;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  for (int i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    fds.push_back({fd, POLLOUT, 0});
  }
  int done = 0;
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds{500};
  while (done < n && std::chrono::steady_clock::now() < end) {
    ::poll(fds.data(), fds.size(), 50);
    for (auto& p : fds)
      if (p.fd >= 0 && (p.revents & POLLOUT) != 0) {
        int err = 0;
        socklen_t len = sizeof(err);
        ::getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err == 0)
          ++done;
        ::close(p.fd);
        p.fd = -1; // poll ignores it from now on
      }
  }
  for (auto& p : fds)
    if (p.fd >= 0)
      ::close(p.fd);
  return done;
}

int somaxconn() {
  int v = 0;
  std::ifstream f{"/proc/sys/net/core/somaxconn"};
  f >> v;
  return v;
}

} // namespace

TEST(listen_queue, the_kernel_keeps_the_widened_length) {
  uint16_t port = 0;
  int fd = listener(5, port);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(listen_backlog(port), 5u); // what the library's listen() leaves
  ASSERT_TRUE(widen_listen_queue(fd));
  auto expected = std::min(conclave::node::http_listen_queue, somaxconn());
  EXPECT_EQ(listen_backlog(port), static_cast<uint32_t>(expected));
  ::close(fd);
}

TEST(listen_queue, a_burst_nobody_accepts_yet_is_queued_not_dropped) {
  constexpr int burst = 64;
  uint16_t narrow_port = 0, wide_port = 0;
  int narrow = listener(5, narrow_port);
  int wide = listener(5, wide_port);
  ASSERT_GE(narrow, 0);
  ASSERT_GE(wide, 0);
  ASSERT_TRUE(widen_listen_queue(wide));
  // With a queue of 5 the kernel completes about 6 and drops the rest's SYNs.
  EXPECT_LT(connections_completed(narrow_port, burst), burst / 2);
  EXPECT_EQ(connections_completed(wide_port, burst), burst);
  ::close(narrow);
  ::close(wide);
}

TEST(listen_queue, what_is_not_a_bound_stream_socket_is_refused) {
  EXPECT_FALSE(widen_listen_queue(-1));
  int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(udp, 0);
  EXPECT_FALSE(widen_listen_queue(udp));
  ::close(udp);
}
