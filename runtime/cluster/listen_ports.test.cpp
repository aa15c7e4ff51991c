#include "runtime/cluster/listen_ports.hpp"

#include <gtest/gtest.h>

#include <set>

using namespace conclave::cluster;

TEST(listen_ports, the_pool_is_the_larger_side_of_the_ephemeral_range) {
  // Linux's default range leaves 10000..32767 below it.
  EXPECT_EQ(listen_port_pool(32768, 60999),
            (std::pair<uint32_t, uint32_t>{10000, 32767}));
  // A range starting low leaves the ports above it.
  EXPECT_EQ(listen_port_pool(1024, 40000), (std::pair<uint32_t, uint32_t>{40001, 65535}));
  // Extremes: the whole port space, or everything but 500 ports, leave no pool.
  auto none = listen_port_pool(1, 65535);
  EXPECT_GT(none.first, none.second);
  auto small = listen_port_pool(10500, 65035);
  EXPECT_GT(small.first, small.second);
  // A range ending at the top leaves only the ports below it.
  EXPECT_EQ(listen_port_pool(50000, 65535),
            (std::pair<uint32_t, uint32_t>{10000, 49999}));
}

TEST(listen_ports, chosen_ports_are_distinct_bindable_and_outside_the_ephemeral_range) {
  auto [first, last] = ephemeral_port_range();
  auto [lo, hi] = listen_port_pool(first, last);
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{200}}) {
    auto ports = free_listen_ports(n);
    ASSERT_EQ(ports.size(), n);
    EXPECT_EQ(std::set<uint16_t>(ports.begin(), ports.end()).size(), n);
    for (auto p : ports) {
      EXPECT_NE(p, 0);
      if (lo <= hi) {
        EXPECT_TRUE(p < first || p > last) << p << " in " << first << ".." << last;
        EXPECT_GE(p, lo);
        EXPECT_LE(p, hi);
      }
      int fd = detail::bind_loopback(p);
      EXPECT_GE(fd, 0) << p << " was handed out but cannot be bound";
      if (fd >= 0)
        ::close(fd);
    }
  }
}

TEST(listen_ports, a_port_held_by_another_socket_is_never_chosen) {
  // Hold 50 ports, then ask for many: none of the held ones comes back.
  auto held_ports = free_listen_ports(50);
  std::vector<int> held;
  for (auto p : held_ports)
    held.push_back(detail::bind_loopback(p));
  auto more = free_listen_ports(2000);
  std::set<uint16_t> got(more.begin(), more.end());
  for (size_t i = 0; i < held.size(); ++i)
    if (held[i] >= 0)
      EXPECT_EQ(got.count(held_ports[i]), 0u) << held_ports[i];
  for (int fd : held)
    if (fd >= 0)
      ::close(fd);
}
