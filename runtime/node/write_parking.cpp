#include "runtime/node/write_parking.hpp"

#include <atomic>
#include <cerrno>
#include <dlfcn.h>
#include <mutex>
#include <sys/epoll.h>

namespace conclave::node {

uint32_t write_parking::on_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
  auto i = regs_.find(fd);
  switch (op) {
  case EPOLL_CTL_ADD:
    // A descriptor number closed without EPOLL_CTL_DEL (the kernel drops
    // it from epoll) can come back as another socket: start afresh.
    regs_[fd] = reg{epfd, events, data, false};
    return events;
  case EPOLL_CTL_MOD:
    if (i == regs_.end() || i->second.epfd != epfd)
      return events;
    i->second.events = events;
    i->second.data = data;
    if (i->second.parked && (events & EPOLLIN) != 0)
      return events & ~static_cast<uint32_t>(EPOLLOUT);
    i->second.parked = false; // nobody would read it: let it be written
    return events;
  case EPOLL_CTL_DEL:
    if (i != regs_.end() && i->second.epfd == epfd)
      regs_.erase(i);
    return events;
  default:
    return events;
  }
}

std::optional<write_parking::change> write_parking::park(int fd) {
  auto i = regs_.find(fd);
  if (i == regs_.end() || i->second.parked || (i->second.events & EPOLLIN) == 0)
    return std::nullopt;
  i->second.parked = true;
  if ((i->second.events & EPOLLOUT) == 0)
    return std::nullopt;
  return change{i->second.epfd, fd, i->second.events & ~static_cast<uint32_t>(EPOLLOUT),
                i->second.data};
}

std::optional<write_parking::change> write_parking::unpark(int fd) {
  auto i = regs_.find(fd);
  if (i == regs_.end() || !i->second.parked)
    return std::nullopt;
  i->second.parked = false;
  if ((i->second.events & EPOLLOUT) == 0)
    return std::nullopt;
  return change{i->second.epfd, fd, i->second.events, i->second.data};
}

bool write_parking::parked(int fd) const {
  auto i = regs_.find(fd);
  return i != regs_.end() && i->second.parked;
}

namespace {

using ctl_fn = int (*)(int, int, int, epoll_event*);

ctl_fn real_epoll_ctl() {
  static auto real = reinterpret_cast<ctl_fn>(::dlsym(RTLD_NEXT, "epoll_ctl"));
  return real;
}

// Constant-initialized, so usable from any static constructor that calls
// epoll_ctl before this file's own run.
std::mutex parking_mtx;
std::atomic<uint64_t> parks{0};

write_parking& parking() {
  static auto* p = new write_parking; // never destroyed: used until exit
  return *p;
}

void apply(const std::optional<write_parking::change>& c) {
  if (!c)
    return;
  epoll_event ev{};
  ev.events = c->events;
  ev.data.u64 = c->data;
  if (auto real = real_epoll_ctl())
    real(c->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

} // namespace

void park_tls_writes(int fd) {
  if (fd < 0)
    return;
  std::lock_guard<std::mutex> guard{parking_mtx};
  auto c = parking().park(fd);
  if (c)
    parks.fetch_add(1, std::memory_order_relaxed);
  apply(c);
}

void unpark_tls_writes(int fd) {
  if (fd < 0)
    return;
  std::lock_guard<std::mutex> guard{parking_mtx};
  apply(parking().unpark(fd));
}

uint64_t tls_write_parks() {
  return parks.load(std::memory_order_relaxed);
}

bool write_parking_active() {
  return real_epoll_ctl() != nullptr;
}

} // namespace conclave::node

// The executable's epoll_ctl, found by the dynamic linker before libc's (CAF's
// multiplexer and every other caller reach it): records the registration and
// holds EPOLLOUT back from parked descriptors.
extern "C" int epoll_ctl(int epfd, int op, int fd, epoll_event* event) noexcept {
  using namespace conclave::node;
  auto real = real_epoll_ctl();
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  std::lock_guard<std::mutex> guard{parking_mtx};
  uint32_t events = event != nullptr ? event->events : 0;
  uint64_t data = event != nullptr ? event->data.u64 : 0;
  auto pass = parking().on_ctl(epfd, op, fd, events, data);
  if (event != nullptr && pass != events) {
    epoll_event held = *event;
    held.events = pass;
    return real(epfd, op, fd, &held);
  }
  return real(epfd, op, fd, event);
}
