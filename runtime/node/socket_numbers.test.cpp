// socket_numbers.hpp: the rotation (pure), and the interposers this test
// binary links (as the `conclave` executable does): a socket accepted or
// created right after another was closed must not get its number back, or
// CAF 0.17.6's late cleanup of the closed connection hits the new one
// (its messages then arrive with no sender). Loopback sockets only.
#include "runtime/node/socket_numbers.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <set>

using namespace conclave::node;

namespace {

TEST(socket_number_rotation, floor_moves_above_each_number_and_wraps) {
  socket_number_rotation r{64, 200};
  ASSERT_TRUE(r.active());
  EXPECT_EQ(r.floor(), 64);
  r.handed_out(70);
  EXPECT_EQ(r.floor(), 71);
  r.handed_out(199); // the last number: next search starts over
  EXPECT_EQ(r.floor(), 64);
  r.handed_out(150);
  r.wrap();
  EXPECT_EQ(r.floor(), 64);
}

TEST(socket_number_rotation, too_small_a_range_moves_nothing) {
  socket_number_rotation r{64, 100};
  EXPECT_FALSE(r.active());
  EXPECT_EQ(r.floor(), 0);
}

/// A listening loopback socket and its port.
int listener(uint16_t& port) {
  int l = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(l, 16), 0);
  socklen_t len = sizeof a;
  ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return l;
}

int dial(uint16_t port) {
  int c = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  EXPECT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return c;
}

TEST(socket_numbers, an_accepted_connection_does_not_reuse_a_just_closed_number) {
  ASSERT_TRUE(socket_renumbering_active());
  uint16_t port = 0;
  int l = listener(port);
  std::set<int> seen;
  // What a member does all day: a client connects, leaves, the next one
  // connects. Without the fix the kernel hands out the same number each time.
  for (int i = 0; i < 20; ++i) {
    int c = dial(port);
    int s = i % 2 == 0 ? ::accept(l, nullptr, nullptr)
                       : ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
    ASSERT_GE(s, 0);
    EXPECT_TRUE(seen.insert(s).second) << "number " << s << " handed out twice";
    // The socket still works after the move.
    ASSERT_EQ(::write(c, "x", 1), 1);
    char buf = 0;
    ASSERT_EQ(::read(s, &buf, 1), 1);
    EXPECT_EQ(buf, 'x');
    ::close(s);
    ::close(c);
  }
  ::close(l);
}

TEST(socket_numbers, a_dialed_connection_does_not_reuse_a_just_closed_number) {
  ASSERT_TRUE(socket_renumbering_active());
  int a = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(a, 0);
  ::close(a);
  int b = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(b, 0);
  EXPECT_NE(a, b);
  ::close(b);
}

} // namespace
