// See socket_numbers.hpp.
#include "runtime/node/socket_numbers.hpp"

#include <algorithm>
#include <cerrno>
#include <dlfcn.h>
#include <fcntl.h>
#include <mutex>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

/// libc's function `name` (the one these wrappers hide).
template <class F>
F libc_socket_fn(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

} // namespace

namespace conclave::node {

socket_number_rotation::socket_number_rotation(int base, int limit)
    : base_(base), limit_(limit), next_(base) {}

void socket_number_rotation::handed_out(int fd) {
  if (!active())
    return;
  next_ = fd + 1 >= limit_ || fd < base_ ? base_ : fd + 1;
}

namespace {

/// Above stdin/out/err and the few files a process opens at start.
constexpr int rotation_base = 64;
/// Below FD_SETSIZE: a socket moved here still works with select() (libcrypto
/// uses it), and the descriptor table stays small. About 960 numbers: a closed
/// connection's number comes back after that many newer sockets, seconds even
/// at hundreds of connections per second, while its late cleanup takes
/// milliseconds.
constexpr int rotation_cap = FD_SETSIZE;

int rotation_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY)
    return rotation_cap;
  return static_cast<int>(std::min<rlim_t>(r.rlim_cur, rotation_cap));
}

std::mutex rotation_mtx;

socket_number_rotation& rotation() {
  static socket_number_rotation r{rotation_base, rotation_limit()};
  return r;
}

int dup_from(int fd, int floor, bool cloexec) {
  return ::fcntl(fd, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, floor);
}

} // namespace

int renumber_socket(int fd, bool cloexec) {
  if (fd < 0)
    return fd;
  auto saved = errno;
  std::lock_guard<std::mutex> guard{rotation_mtx};
  auto& r = rotation();
  if (!r.active())
    return fd;
  auto moved = dup_from(fd, r.floor(), cloexec);
  if (moved < 0) {
    // Nothing free from the floor up to the limit: start over from the base.
    r.wrap();
    moved = dup_from(fd, r.floor(), cloexec);
  }
  if (moved < 0) {
    errno = saved;
    return fd; // keep the kernel's number: no worse than without the fix
  }
  ::close(fd);
  r.handed_out(moved);
  errno = saved;
  return moved;
}

namespace {

thread_local int last_accepted = -1;

} // namespace

int take_accepted_socket() {
  auto fd = last_accepted;
  last_accepted = -1;
  return fd;
}

/// Remembers what accept returned (see take_accepted_socket).
static int accepted(int fd) {
  last_accepted = fd;
  return fd;
}

bool socket_renumbering_active() {
  return libc_socket_fn<void*>("accept") != nullptr && rotation().active();
}

} // namespace conclave::node

using conclave::node::renumber_socket;

extern "C" {

int socket(int domain, int type, int protocol) {
  using fn = int (*)(int, int, int);
  static auto real = libc_socket_fn<fn>("socket");
  auto fd = real(domain, type, protocol);
  // Only stream sockets name CAF connections; others keep their numbers.
  if (fd < 0 || (type & 0xf) != SOCK_STREAM)
    return fd;
  return renumber_socket(fd, (type & SOCK_CLOEXEC) != 0);
}

int accept(int fd, sockaddr* addr, socklen_t* len) {
  using fn = int (*)(int, sockaddr*, socklen_t*);
  static auto real = libc_socket_fn<fn>("accept");
  return conclave::node::accepted(renumber_socket(real(fd, addr, len), false));
}

int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
  using fn = int (*)(int, sockaddr*, socklen_t*, int);
  static auto real = libc_socket_fn<fn>("accept4");
  return conclave::node::accepted(
      renumber_socket(real(fd, addr, len, flags), (flags & SOCK_CLOEXEC) != 0));
}

} // extern "C"
