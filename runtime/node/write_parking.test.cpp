// Parking a waiting TLS handshake's write interest (write_parking.hpp): the
// bookkeeping alone, then the interposed epoll_ctl of this test binary on a
// real epoll instance and socket pair.
#include "runtime/node/write_parking.hpp"

#include <gtest/gtest.h>

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

using conclave::node::write_parking;

namespace {

constexpr uint32_t in = EPOLLIN, out = EPOLLOUT;

TEST(write_parking,
     a_parked_descriptor_keeps_its_write_interest_from_the_kernel_until_unparked) {
  write_parking p;
  EXPECT_EQ(p.on_ctl(7, EPOLL_CTL_ADD, 5, in | out, 42), in | out);
  auto c = p.park(5);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->epfd, 7);
  EXPECT_EQ(c->fd, 5);
  EXPECT_EQ(c->events, in);
  EXPECT_EQ(c->data, 42u); // the caller's handler pointer is kept
  EXPECT_TRUE(p.parked(5));
  EXPECT_FALSE(p.park(5)); // once
  // The caller changes its mind meanwhile: its choice is recorded, EPOLLOUT
  // still held back.
  EXPECT_EQ(p.on_ctl(7, EPOLL_CTL_MOD, 5, in, 43), in);
  EXPECT_EQ(p.on_ctl(7, EPOLL_CTL_MOD, 5, in | out, 44), in);
  auto back = p.unpark(5);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->events, in | out);
  EXPECT_EQ(back->data, 44u);
  EXPECT_FALSE(p.parked(5));
  EXPECT_FALSE(p.unpark(5));
  EXPECT_EQ(p.on_ctl(7, EPOLL_CTL_MOD, 5, in | out, 44), in | out);
}

TEST(write_parking, nothing_changes_for_what_is_not_registered_or_not_read) {
  write_parking p;
  EXPECT_FALSE(p.park(3)); // not registered
  EXPECT_FALSE(p.parked(3));
  p.on_ctl(7, EPOLL_CTL_ADD, 3, out, 1);
  EXPECT_FALSE(p.park(3)); // no EPOLLIN: nobody would step it again
  EXPECT_FALSE(p.parked(3));
  // Parked without EPOLLOUT: no call now, but a later EPOLLOUT is held back.
  p.on_ctl(7, EPOLL_CTL_MOD, 3, in, 1);
  EXPECT_FALSE(p.park(3));
  EXPECT_TRUE(p.parked(3));
  EXPECT_EQ(p.on_ctl(7, EPOLL_CTL_MOD, 3, in | out, 1), in);
  // Read interest dropped while parked: unparked, EPOLLOUT passes.
  EXPECT_EQ(p.on_ctl(7, EPOLL_CTL_MOD, 3, out, 1), out);
  EXPECT_FALSE(p.parked(3));
  // A MOD through another epoll instance is not this registration's.
  p.on_ctl(7, EPOLL_CTL_MOD, 3, in | out, 1);
  p.park(3);
  EXPECT_EQ(p.on_ctl(8, EPOLL_CTL_MOD, 3, in | out, 1), in | out);
  EXPECT_TRUE(p.parked(3));
}

TEST(write_parking, a_descriptor_removed_or_added_again_starts_afresh) {
  write_parking p;
  p.on_ctl(7, EPOLL_CTL_ADD, 4, in | out, 1);
  p.park(4);
  p.on_ctl(7, EPOLL_CTL_DEL, 4, 0, 0);
  EXPECT_FALSE(p.parked(4));
  EXPECT_EQ(p.registered(), 0u);
  // Closed without DEL, its number reused: the new ADD replaces the record.
  p.on_ctl(7, EPOLL_CTL_ADD, 4, in | out, 1);
  p.park(4);
  EXPECT_EQ(p.on_ctl(9, EPOLL_CTL_ADD, 4, in | out, 2), in | out);
  EXPECT_FALSE(p.parked(4));
  auto c = p.park(4);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->epfd, 9);
  EXPECT_EQ(c->data, 2u);
}

/// The events epoll reports for one descriptor right now (0: none).
uint32_t ready(int ep) {
  epoll_event ev{};
  return ::epoll_wait(ep, &ev, 1, 0) == 1 ? ev.events : 0;
}

TEST(write_parking, the_interposed_epoll_ctl_holds_back_a_parked_sockets_writability) {
  ASSERT_TRUE(conclave::node::write_parking_active());
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  epoll_event ev{};
  ev.events = in | out;
  ev.data.u64 = 77;
  ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev), 0);
  EXPECT_EQ(ready(ep), out); // writable, as a socket nearly always is
  auto before = conclave::node::tls_write_parks();
  conclave::node::park_tls_writes(sv[0]);
  EXPECT_EQ(conclave::node::tls_write_parks(), before + 1);
  EXPECT_EQ(ready(ep), 0u); // the spin this prevents: nothing to do until the peer speaks
  // The owner asks again for both: still held back.
  ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_MOD, sv[0], &ev), 0);
  EXPECT_EQ(ready(ep), 0u);
  // The peer's bytes wake it for reading, with the owner's data.
  ASSERT_EQ(::write(sv[1], "x", 1), 1);
  epoll_event got{};
  ASSERT_EQ(::epoll_wait(ep, &got, 1, 0), 1);
  EXPECT_EQ(got.events, in);
  EXPECT_EQ(got.data.u64, 77u);
  conclave::node::unpark_tls_writes(sv[0]);
  ASSERT_EQ(::epoll_wait(ep, &got, 1, 0), 1);
  EXPECT_EQ(got.events, in | out);
  ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_DEL, sv[0], nullptr), 0);
  ::close(ep);
  ::close(sv[0]);
  ::close(sv[1]);
}

} // namespace
