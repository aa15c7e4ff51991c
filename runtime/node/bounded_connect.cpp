#include "runtime/node/bounded_connect.hpp"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace conclave::node {

namespace {

connect_fn libc_connect() {
  static auto real = reinterpret_cast<connect_fn>(::dlsym(RTLD_NEXT, "connect"));
  return real;
}

bool is_tcp(int fd, const sockaddr* addr) {
  if (addr == nullptr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
    return false;
  int type = 0;
  socklen_t n = sizeof(type);
  return ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &n) == 0 && type == SOCK_STREAM;
}

/// Waits until `fd` is writable (the connect ended) or `timeout_ms` passed:
/// 0 and the connect's own error in `err`, or -1 and errno.
int wait_connected(int fd, int timeout_ms, int& err) {
  using clock = std::chrono::steady_clock;
  auto deadline = clock::now() + std::chrono::milliseconds{timeout_ms};
  for (;;) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now())
            .count();
    if (left <= 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    pollfd p{fd, POLLOUT, 0};
    auto r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -1;
    if (r == 0)
      continue; // the loop's clock decides
    socklen_t n = sizeof(err);
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &n) != 0)
      return -1;
    return 0;
  }
}

/// "family/address/port" of an IPv4 or IPv6 socket address ("" otherwise).
std::string key_of(const sockaddr* a) {
  if (a == nullptr)
    return {};
  if (a->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(a);
    return "4/" + std::to_string(in->sin_addr.s_addr) + "/"
           + std::to_string(in->sin_port);
  }
  if (a->sa_family == AF_INET6) {
    auto* in = reinterpret_cast<const sockaddr_in6*>(a);
    std::string bytes(reinterpret_cast<const char*>(&in->sin6_addr),
                      sizeof(in->sin6_addr));
    std::string hex;
    for (unsigned char c : bytes)
      hex += "0123456789abcdef"[c >> 4], hex += "0123456789abcdef"[c & 15];
    return "6/" + hex + "/" + std::to_string(in->sin6_port);
  }
  return {};
}

/// Connected probe sockets by address, oldest first.
struct waiting_probe {
  int fd;
  std::chrono::steady_clock::time_point since;
};
std::mutex probes_mtx;
std::multimap<std::string, waiting_probe>& probes() {
  static std::multimap<std::string, waiting_probe> m;
  return m;
}
constexpr auto probe_max_wait = std::chrono::seconds{10};

/// Closes probes nobody took over in time (the lock is held).
void drop_stale_probes(std::chrono::steady_clock::time_point now) {
  auto& m = probes();
  for (auto i = m.begin(); i != m.end();)
    if (now - i->second.since > probe_max_wait) {
      ::close(i->second.fd);
      i = m.erase(i);
    } else {
      ++i;
    }
}

/// A connected probe socket for `key`, or -1.
int take_probe(const std::string& key) {
  std::lock_guard<std::mutex> guard{probes_mtx};
  drop_stale_probes(std::chrono::steady_clock::now());
  auto i = probes().find(key);
  if (i == probes().end())
    return -1;
  auto fd = i->second.fd;
  probes().erase(i);
  return fd;
}

/// Moves connected socket `probe` onto descriptor `fd`, with `fd`'s
/// descriptor and status flags: 0, or -1 and errno.
int take_over(int probe, int fd, int status_flags) {
  int fd_flags = ::fcntl(fd, F_GETFD);
  if (fd_flags < 0
      || ::dup3(probe, fd, (fd_flags & FD_CLOEXEC) != 0 ? O_CLOEXEC : 0) < 0) {
    auto e = errno;
    ::close(probe);
    errno = e;
    return -1;
  }
  ::close(probe);
  ::fcntl(fd, F_SETFL, status_flags);
  return 0;
}

/// A blocking TCP connect of this process: a waiting probe's socket if one
/// matches, else bounded by the timeout.
int bounded(int fd, const sockaddr* addr, socklen_t len, int timeout_ms,
            connect_fn real) {
  auto saved = errno;
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK) == 0 && is_tcp(fd, addr)) {
    auto probe = take_probe(key_of(addr));
    if (probe >= 0 && take_over(probe, fd, flags) == 0) {
      errno = saved;
      return 0;
    }
    errno = saved;
  }
  return connect_within(fd, addr, len, timeout_ms, real);
}

} // namespace

void probe_connect(const std::string& host, uint16_t port,
                   std::chrono::milliseconds timeout,
                   std::function<void(int error)> done) {
  std::thread{[host, port, timeout, done = std::move(done)] {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0
        || found == nullptr) {
      done(EHOSTUNREACH);
      return;
    }
    std::vector<char> addr(reinterpret_cast<char*>(found->ai_addr),
                           reinterpret_cast<char*>(found->ai_addr) + found->ai_addrlen);
    auto family = found->ai_family;
    ::freeaddrinfo(found);
    auto* a = reinterpret_cast<const sockaddr*>(addr.data());
    auto len = static_cast<socklen_t>(addr.size());
    int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      done(errno);
      return;
    }
    auto ms = static_cast<int>(std::max<int64_t>(1, timeout.count()));
    if (connect_within(fd, a, len, ms, libc_connect()) != 0) {
      auto e = errno;
      ::close(fd);
      done(e);
      return;
    }
    {
      std::lock_guard<std::mutex> guard{probes_mtx};
      auto now = std::chrono::steady_clock::now();
      drop_stale_probes(now);
      probes().emplace(key_of(a), waiting_probe{fd, now});
    }
    done(0);
  }}.detach();
}

size_t probes_waiting() {
  std::lock_guard<std::mutex> guard{probes_mtx};
  return probes().size();
}

int parse_connect_timeout(const char* value) {
  if (value == nullptr || *value < '0' || *value > '9')
    return default_connect_timeout_ms;
  char* end = nullptr;
  errno = 0;
  auto v = std::strtol(value, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0 || v > 3'600'000)
    return default_connect_timeout_ms;
  return static_cast<int>(v);
}

int connect_timeout_ms() {
  static int ms = parse_connect_timeout(std::getenv("CONCLAVE_CONNECT_TIMEOUT_MS"));
  return ms;
}

int connect_within(int fd, const sockaddr* addr, socklen_t len, int timeout_ms,
                   connect_fn real) {
  if (timeout_ms <= 0)
    return real(fd, addr, len);
  auto saved = errno;
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_NONBLOCK) != 0 || !is_tcp(fd, addr)) {
    errno = saved;
    return real(fd, addr, len);
  }
  if (::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    errno = saved;
    return real(fd, addr, len);
  }
  int result = real(fd, addr, len);
  int error = result == 0 ? 0 : errno;
  if (result != 0 && error == EINPROGRESS) {
    int err = 0;
    if (wait_connected(fd, timeout_ms, err) == 0) {
      result = err == 0 ? 0 : -1;
      error = err;
    } else {
      error = errno;
    }
  }
  ::fcntl(fd, F_SETFL, flags); // blocking again, as the caller made it
  errno = result == 0 ? saved : error;
  return result;
}

bool bounded_connect_active() {
  return libc_connect() != nullptr && connect_timeout_ms() > 0;
}

} // namespace conclave::node

extern "C" int connect(int fd, const sockaddr* addr, socklen_t len) {
  auto real = conclave::node::libc_connect();
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return conclave::node::bounded(fd, addr, len, conclave::node::connect_timeout_ms(),
                                 real);
}
