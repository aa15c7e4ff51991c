// Choosing loopback ports for nodes that stop and start again on the same
// port. A port the kernel hands out for outgoing connections (the ephemeral
// range, /proc/sys/net/ipv4/ip_local_port_range) is a bad choice: while its
// node is down, any process's outgoing connection may take it as its local
// port, and the node's restart then finds it in use. So the ports chosen here
// lie outside that range, start at a random point and are probed by binding
// them; header-only so that test and benchmark programs share it.
#pragma once

#include <arpa/inet.h>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <netinet/in.h>
#include <random>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace conclave::cluster {

/// The kernel's ephemeral port range, [first, last]; Linux's default when it
/// cannot be read.
inline std::pair<uint16_t, uint16_t> ephemeral_port_range() {
  std::ifstream in{"/proc/sys/net/ipv4/ip_local_port_range"};
  unsigned lo = 0, hi = 0;
  if (in >> lo >> hi && lo >= 1 && lo <= hi && hi <= 65535)
    return {static_cast<uint16_t>(lo), static_cast<uint16_t>(hi)};
  return {32768, 60999};
}

/// The ports to choose from for a range [first, last] of ephemeral ports:
/// the larger of [10000, first - 1] and [last + 1, 65535]; empty when neither
/// holds at least 1000 ports.
inline std::pair<uint32_t, uint32_t> listen_port_pool(uint16_t first, uint16_t last) {
  uint32_t below_lo = 10000, below_hi = first > 0 ? first - 1u : 0u;
  uint32_t above_lo = last + 1u, above_hi = 65535;
  uint32_t below = below_hi >= below_lo ? below_hi - below_lo + 1 : 0;
  uint32_t above = above_hi >= above_lo ? above_hi - above_lo + 1 : 0;
  if (below >= above && below >= 1000)
    return {below_lo, below_hi};
  if (above >= 1000)
    return {above_lo, above_hi};
  return {1, 0};
}

namespace detail {

inline int bind_loopback(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -1;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline uint16_t bound_port(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof(sa);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  return ntohs(sa.sin_port);
}

} // namespace detail

/// `n` distinct loopback ports that were free a moment ago (callers must
/// still handle a clash with another process choosing at the same time),
/// outside the ephemeral range when the machine leaves room for that, else
/// whatever the kernel hands out. Fewer than `n` when no more are free.
inline std::vector<uint16_t> free_listen_ports(size_t n) {
  std::vector<int> fds;
  std::vector<uint16_t> ports;
  auto [first, last] = ephemeral_port_range();
  auto [lo, hi] = listen_port_pool(first, last);
  if (lo <= hi) {
    std::mt19937 rng{static_cast<uint32_t>(
        ::getpid() ^ std::chrono::steady_clock::now().time_since_epoch().count())};
    uint32_t size = hi - lo + 1;
    uint32_t start = std::uniform_int_distribution<uint32_t>{0, size - 1}(rng);
    for (uint32_t i = 0; i < size && ports.size() < n; ++i) {
      auto port = static_cast<uint16_t>(lo + (start + i) % size);
      if (int fd = detail::bind_loopback(port); fd >= 0) {
        fds.push_back(fd);
        ports.push_back(port);
      }
    }
  }
  while (ports.size() < n) { // no room outside the ephemeral range
    int fd = detail::bind_loopback(0);
    if (fd < 0)
      break;
    fds.push_back(fd);
    ports.push_back(detail::bound_port(fd));
  }
  for (int fd : fds)
    ::close(fd);
  return ports;
}

} // namespace conclave::cluster
