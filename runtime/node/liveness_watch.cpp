#include "runtime/node/liveness_watch.hpp"

#include "runtime/node/peer_identity.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace conclave::node {

liveness_read classify_liveness_read(ssize_t n, int err) {
  if (n == 0)
    return liveness_read::proof;
  if (n > 0)
    return liveness_read::unexpected;
  if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR)
    return liveness_read::nothing;
  // A reset proves nothing: a router or firewall whose state timed out, or a
  // forged segment, resets a connection whose process lives. Only the FIN its
  // kernel sends when the process ends does.
  return liveness_read::reset;
}

void liveness_tickets::issue(const std::string& nonce, holder h, clock::time_point now) {
  for (auto it = tickets_.begin(); it != tickets_.end();)
    it = it->second.expires <= now ? tickets_.erase(it) : std::next(it);
  tickets_[nonce] = {h, now + ttl_};
}

std::optional<liveness_tickets::holder> liveness_tickets::redeem(const std::string& nonce,
                                                                 clock::time_point now) {
  auto it = tickets_.find(nonce);
  if (it == tickets_.end())
    return std::nullopt;
  auto e = it->second;
  tickets_.erase(it);
  if (e.expires <= now)
    return std::nullopt;
  return e.h;
}

namespace {

using clock = std::chrono::steady_clock;
constexpr auto opening_timeout = std::chrono::seconds(3);
constexpr char accepted_byte = 'L';

enum class phase { accepted, connecting, awaiting_byte, watching, mute };

struct conn {
  int fd = -1;
  phase ph = phase::accepted;
  uint64_t member = 0;
  uint64_t incarnation = 0;
  std::string pending; ///< dialing: the nonce still to send; accepted: bytes read
  clock::time_point deadline{};
};

void set_flags(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

} // namespace

struct liveness_watch::impl {
  dead_fn dead;
  log_fn warn;
  int listener = -1;
  int wake[2] = {-1, -1};
  std::thread thread;
  mutable std::mutex mtx;
  bool stopping = false;
  liveness_tickets tickets;
  std::vector<conn> conns; ///< guarded by mtx (new dials are added there)
  uint64_t proofs = 0;

  void poke() {
    char c = 0;
    [[maybe_unused]] auto n = ::write(wake[1], &c, 1);
  }

  void run();
  /// Advances one connection after poll said it is ready (`revents`), or its
  /// deadline passed. Returns false to drop it (closed).
  bool step(conn& c, short revents, clock::time_point now);
  void close_conn(conn& c) {
    if (c.fd >= 0)
      ::close(c.fd);
    c.fd = -1;
  }
};

void liveness_watch::impl::run() {
  std::vector<pollfd> fds;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock{mtx};
      if (stopping)
        return;
      fds.clear();
      fds.push_back({wake[0], POLLIN, 0});
      fds.push_back({listener, POLLIN, 0});
      for (auto& c : conns) {
        short ev = 0;
        switch (c.ph) {
        case phase::connecting:
          ev = POLLOUT;
          break;
        case phase::mute:
          ev = 0;
          break;
        default:
          ev = POLLIN;
        }
        fds.push_back({c.fd, ev, 0});
      }
    }
    ::poll(fds.data(), fds.size(), 500);
    auto now = clock::now();
    if (fds[0].revents & POLLIN) {
      char buf[64];
      while (::read(wake[0], buf, sizeof(buf)) > 0) {
      }
    }
    std::lock_guard<std::mutex> lock{mtx};
    if (stopping)
      return;
    if (fds[1].revents & POLLIN) {
      for (;;) {
        int fd = ::accept(listener, nullptr, nullptr);
        if (fd < 0)
          break;
        set_flags(fd);
        conns.push_back({fd, phase::accepted, 0, 0, {}, now + opening_timeout});
      }
    }
    // conns may have grown (accepts, dials): only the first fds.size() - 2 polled.
    size_t polled = fds.size() - 2;
    std::vector<conn> kept;
    kept.reserve(conns.size());
    for (size_t i = 0; i < conns.size(); ++i) {
      short rev = i < polled ? fds[i + 2].revents : 0;
      if (step(conns[i], rev, now))
        kept.push_back(conns[i]);
    }
    conns.swap(kept);
  }
}

bool liveness_watch::impl::step(conn& c, short rev, clock::time_point now) {
  switch (c.ph) {
  case phase::accepted: {
    if (rev != 0) {
      char buf[nonce_size];
      auto want = nonce_size - c.pending.size();
      auto n = ::recv(c.fd, buf, want, 0);
      if (n > 0)
        c.pending.append(buf, static_cast<size_t>(n));
      else if (classify_liveness_read(n, errno) != liveness_read::nothing) {
        close_conn(c); // closed before it said who it is: nothing to prove
        return false;
      }
      if (c.pending.size() == nonce_size) {
        auto h = tickets.redeem(c.pending, now);
        if (!h) {
          warn("refused a liveness connection without a valid ticket");
          close_conn(c);
          return false;
        }
        if (::send(c.fd, &accepted_byte, 1, MSG_NOSIGNAL) != 1) {
          close_conn(c);
          return false;
        }
        c.member = h->member;
        c.incarnation = h->incarnation;
        c.pending.clear();
        c.ph = phase::watching;
        return true;
      }
    }
    if (now >= c.deadline) {
      close_conn(c);
      return false;
    }
    return true;
  }
  case phase::connecting: {
    if (rev != 0) {
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0 || (rev & (POLLERR | POLLHUP))) {
        close_conn(c);
        return false;
      }
      auto n = ::send(c.fd, c.pending.data(), c.pending.size(), MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        close_conn(c);
        return false;
      }
      if (n > 0)
        c.pending.erase(0, static_cast<size_t>(n));
      if (c.pending.empty())
        c.ph = phase::awaiting_byte;
    }
    if (now >= c.deadline) {
      close_conn(c);
      return false;
    }
    return true;
  }
  case phase::awaiting_byte: {
    if (rev != 0) {
      char b = 0;
      auto n = ::recv(c.fd, &b, 1, 0);
      if (n == 1 && b == accepted_byte) {
        c.ph = phase::watching;
        return true;
      }
      // Refused, or closed before accepting: no proof of anything.
      if (n != 1 && classify_liveness_read(n, errno) == liveness_read::nothing)
        return true;
      if (n == 1) { // a wrong byte: not closed either (see below)
        c.ph = phase::mute;
        return true;
      }
      close_conn(c);
      return false;
    }
    if (now >= c.deadline) {
      // The other end may have taken the nonce and be watching already (it was
      // slow, not gone): closing now would tell it this node died. Kept open,
      // no longer read.
      c.ph = phase::mute;
      return true;
    }
    return true;
  }
  case phase::watching: {
    if (rev == 0)
      return true;
    char buf[16];
    auto n = ::recv(c.fd, buf, sizeof(buf), 0);
    switch (classify_liveness_read(n, errno)) {
    case liveness_read::nothing:
      return true;
    case liveness_read::proof:
      ++proofs;
      close_conn(c);
      dead(c.member, c.incarnation);
      return false;
    case liveness_read::reset:
      warn("liveness connection of node " + std::to_string(c.member)
           + " reset: not taken as proof of its death");
      close_conn(c); // already gone: closing it sends nothing
      return false;
    case liveness_read::unexpected:
      // Never closed by a live node (the peer would take it as this node's
      // death): kept open, no longer read.
      warn("node " + std::to_string(c.member)
           + " sent data on its liveness connection: no longer watched");
      c.ph = phase::mute;
      return true;
    }
    return true;
  }
  case phase::mute:
    return true;
  }
  return true;
}

std::unique_ptr<liveness_watch> liveness_watch::start(const std::string& host,
                                                      dead_fn dead, log_fn warn,
                                                      std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  auto where = host.empty() ? nullptr : host.c_str();
  if (int rc = ::getaddrinfo(where, "0", &hints, &res); rc != 0) {
    error = std::string{"liveness listener: "} + ::gai_strerror(rc);
    return nullptr;
  }
  int fd = -1;
  for (auto* a = res; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0)
      continue;
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd < 0) {
    error = "liveness listener: cannot listen on " + host + ": " + std::strerror(errno);
    return nullptr;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  uint16_t port = ss.ss_family == AF_INET6
                      ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                      : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  auto p = std::make_unique<impl>();
  p->dead = std::move(dead);
  p->warn = std::move(warn);
  p->listener = fd;
  if (::pipe2(p->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    ::close(fd);
    error = std::string{"liveness listener: pipe: "} + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<liveness_watch> w{new liveness_watch(std::move(p))};
  w->port_ = port;
  w->impl_->thread = std::thread([i = w->impl_.get()] { i->run(); });
  return w;
}

liveness_watch::liveness_watch(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

liveness_watch::~liveness_watch() {
  {
    std::lock_guard<std::mutex> lock{impl_->mtx};
    impl_->stopping = true;
  }
  impl_->poke();
  if (impl_->thread.joinable())
    impl_->thread.join();
  for (auto& c : impl_->conns)
    impl_->close_conn(c);
  ::close(impl_->listener);
  ::close(impl_->wake[0]);
  ::close(impl_->wake[1]);
}

std::string liveness_watch::issue(uint64_t member, uint64_t incarnation) {
  auto nonce = make_nonce();
  std::lock_guard<std::mutex> lock{impl_->mtx};
  impl_->tickets.issue(nonce, {member, incarnation}, clock::now());
  return nonce;
}

void liveness_watch::dial(const std::string& host, uint16_t port,
                          const std::string& nonce, uint64_t member,
                          uint64_t incarnation) {
  if (nonce.size() != nonce_size || port == 0 || watching(member, incarnation))
    return;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  auto service = std::to_string(port);
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &res) != 0 || res == nullptr) {
    impl_->warn("liveness connection to node " + std::to_string(member)
                + ": cannot resolve " + host);
    return;
  }
  int fd = ::socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
  if (fd < 0) {
    ::freeaddrinfo(res);
    return;
  }
  set_flags(fd);
  int rc = ::connect(fd, res->ai_addr, res->ai_addrlen);
  ::freeaddrinfo(res);
  if (rc != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return;
  }
  {
    std::lock_guard<std::mutex> lock{impl_->mtx};
    impl_->conns.push_back({fd, phase::connecting, member, incarnation, nonce,
                            clock::now() + opening_timeout});
  }
  impl_->poke();
}

bool liveness_watch::watching(uint64_t member, uint64_t incarnation) const {
  std::lock_guard<std::mutex> lock{impl_->mtx};
  for (auto& c : impl_->conns)
    if (c.member == member && c.incarnation == incarnation && c.ph != phase::accepted)
      return true;
  return false;
}

bool liveness_watch::confirmed(uint64_t member, uint64_t incarnation) const {
  std::lock_guard<std::mutex> lock{impl_->mtx};
  for (auto& c : impl_->conns)
    if (c.member == member && c.incarnation == incarnation && c.ph == phase::watching)
      return true;
  return false;
}

uint64_t liveness_watch::proofs() const {
  std::lock_guard<std::mutex> lock{impl_->mtx};
  return impl_->proofs;
}

} // namespace conclave::node
