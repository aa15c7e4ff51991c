// The queue length a listening TCP socket on loopback was given (its
// listen() backlog as the kernel keeps it), asked of the kernel's socket
// diagnostics over netlink, as `ss -lt` shows it in Send-Q. Works for
// sockets of any process in this network namespace.
#pragma once

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <optional>

namespace conclave::testing {

/// The backlog of the IPv4 TCP socket listening on `port`; empty if none is
/// found or the kernel does not answer.
inline std::optional<uint32_t> listen_backlog(uint16_t port) {
  int fd = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0)
    return std::nullopt;
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } msg{};
  msg.nlh.nlmsg_len = sizeof(msg);
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  msg.req.sdiag_family = AF_INET;
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = 1u << 10; // TCP_LISTEN
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd, &msg, sizeof(msg), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof(kernel))
      < 0) {
    ::close(fd);
    return std::nullopt;
  }
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::optional<uint32_t> found;
  alignas(nlmsghdr) char buf[16384];
  for (bool done = false; !done;) {
    auto n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0)
      break;
    auto len = static_cast<unsigned>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, len);
         h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
        done = true;
        break;
      }
      auto* d = static_cast<inet_diag_msg*>(NLMSG_DATA(h));
      if (ntohs(d->id.idiag_sport) == port)
        found = d->idiag_wqueue; // for a listener: its backlog
    }
  }
  ::close(fd);
  return found;
}

} // namespace conclave::testing
