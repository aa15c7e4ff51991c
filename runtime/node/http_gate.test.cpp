#include "runtime/node/http_gate.hpp"

#include <gtest/gtest.h>

#include <poll.h>
#include <random>
#include <sys/socket.h>
#include <unistd.h>

using namespace conclave::node;
using namespace std::chrono_literals;

TEST(connection_quota, bounds_connections_in_total_and_per_source) {
  connection_quota q{3, 2};
  EXPECT_TRUE(q.admit("a"));
  EXPECT_TRUE(q.admit("a"));
  EXPECT_FALSE(q.admit("a")); // the source's bound
  EXPECT_TRUE(q.admit("b"));
  EXPECT_FALSE(q.admit("c")); // the total
  EXPECT_EQ(q.open(), 3u);
  q.release("a");
  EXPECT_TRUE(q.admit("c"));
  EXPECT_EQ(q.open_from("a"), 1u);
  q.release("nobody"); // never admitted: no effect
  EXPECT_EQ(q.open(), 3u);
}

TEST(connection_quota, zero_bounds_admit_nothing) {
  connection_quota none{0, 5}, per_source_none{5, 0};
  EXPECT_FALSE(none.admit("a"));
  EXPECT_FALSE(per_source_none.admit("a"));
  EXPECT_EQ(none.open(), 0u);
}

TEST(connection_quota, matches_a_model_over_random_steps) {
  std::mt19937 rng{31};
  connection_quota q{10, 4};
  std::map<std::string, size_t> model;
  size_t total = 0;
  for (int i = 0; i < 20000; ++i) {
    auto src = std::string(1, static_cast<char>('a' + rng() % 5));
    if (rng() % 2 == 0) {
      bool expect = total < 10 && model[src] < 4;
      ASSERT_EQ(q.admit(src), expect) << "step " << i;
      if (expect) {
        ++total;
        ++model[src];
      }
    } else if (model[src] > 0) {
      q.release(src);
      --total;
      --model[src];
    }
    ASSERT_EQ(q.open(), total);
    ASSERT_EQ(q.open_from(src), model[src]);
  }
}

namespace {

/// True if the peer of `fd` sees end of stream within `limit`.
bool sees_eof(int fd, std::chrono::milliseconds limit) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(limit.count())) <= 0)
    return false;
  char c;
  return ::read(fd, &c, 1) == 0;
}

} // namespace

TEST(http_gate, a_connection_without_a_request_is_shut_down_at_its_deadline) {
  http_gate_limits l;
  l.request_deadline = 30ms;
  http_gate gate{l};
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  auto t = gate.admit(sv[0]);
  ASSERT_TRUE(t.admitted);
  EXPECT_TRUE(sees_eof(sv[1], 2000ms));
  EXPECT_EQ(gate.stats().timed_out, 1u);
  gate.done(t);
  EXPECT_EQ(gate.stats().open, 0u);
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST(http_gate, a_request_read_stops_the_clock_and_the_next_wait_restarts_it) {
  http_gate_limits l;
  l.request_deadline = 30ms;
  http_gate gate{l};
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  auto t = gate.admit(sv[0]);
  gate.request_read(t);
  // Handled for ten deadlines: not shut down.
  EXPECT_FALSE(sees_eof(sv[1], 300ms));
  EXPECT_EQ(gate.stats().timed_out, 0u);
  gate.awaiting_request(t);
  EXPECT_TRUE(sees_eof(sv[1], 2000ms));
  gate.done(t);
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST(http_gate, over_its_bound_a_connection_is_refused_and_a_closed_one_frees_its_place) {
  http_gate_limits l;
  l.max_open = 1;
  http_gate gate{l};
  int a[2], b[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
  auto first = gate.admit(a[0]);
  auto second = gate.admit(b[0]);
  EXPECT_TRUE(first.admitted);
  EXPECT_FALSE(second.admitted);
  EXPECT_EQ(gate.stats().refused, 1u);
  gate.done(second); // not admitted: no effect
  EXPECT_EQ(gate.stats().open, 1u);
  gate.done(first);
  EXPECT_TRUE(gate.admit(b[0]).admitted);
  for (int fd : {a[0], a[1], b[0], b[1]})
    ::close(fd);
}

TEST(http_gate, a_descriptor_reused_by_a_newer_socket_is_left_alone) {
  http_gate_limits l;
  l.request_deadline = 30ms;
  http_gate gate{l};
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  auto t = gate.admit(sv[0]);
  int number = sv[0];
  ::close(sv[0]);
  ::close(sv[1]);
  int nv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, nv), 0);
  if (nv[0] != number) { // make the newer socket take the old number
    ASSERT_EQ(::dup2(nv[0], number), number);
    ::close(nv[0]);
  }
  EXPECT_FALSE(sees_eof(nv[1], 200ms)); // past the deadline, still open
  gate.done(t);
  ::close(number);
  ::close(nv[1]);
}
