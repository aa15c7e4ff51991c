#include "runtime/node/http_gate.hpp"

#include <algorithm>

#include <sys/socket.h>

namespace conclave::node {

bool connection_quota::admit(const std::string& source) {
  auto from = open_from(source);
  if (open_ >= max_total_ || from >= max_per_source_)
    return false;
  ++open_;
  ++per_source_[source];
  return true;
}

void connection_quota::release(const std::string& source) {
  auto i = per_source_.find(source);
  if (i == per_source_.end())
    return; // never admitted: nothing to give back
  --open_;
  if (--i->second == 0)
    per_source_.erase(i);
}

size_t connection_quota::open_from(const std::string& source) const {
  auto i = per_source_.find(source);
  return i == per_source_.end() ? 0 : i->second;
}

namespace {

/// Deadlines only: the quota already bounds how many connections there are.
handshake_limits deadline_limits(const http_gate_limits& l) {
  handshake_limits h;
  h.max_total = std::max<size_t>(l.max_open, 1);
  h.max_per_source = h.max_total;
  h.timeout = std::max(l.request_deadline, std::chrono::milliseconds{1});
  return h;
}

} // namespace

http_gate::http_gate(http_gate_limits limits, std::function<void()> on_timeout)
    : limits_(limits), on_timeout_(std::move(on_timeout)),
      quota_(limits.max_open, limits.max_open_per_source),
      deadlines_(deadline_limits(limits)) {
  sweeper_ = std::thread{[this] { sweep_loop(); }};
}

http_gate::~http_gate() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true;
  }
  wake_.notify_all();
  sweeper_.join();
}

http_gate::ticket http_gate::admit(int fd) {
  ticket t;
  t.conn = {fd, socket_inode(fd)};
  t.source = peer_address(fd);
  std::lock_guard<std::mutex> guard{mtx_};
  if (!quota_.admit(t.source)) {
    ++counts_.refused;
    return t;
  }
  t.admitted = true;
  deadlines_.step(t.conn, t.source, std::chrono::steady_clock::now());
  return t;
}

void http_gate::request_read(const ticket& t) {
  if (!t.admitted)
    return;
  std::lock_guard<std::mutex> guard{mtx_};
  deadlines_.ended(t.conn);
}

void http_gate::awaiting_request(const ticket& t) {
  if (!t.admitted)
    return;
  std::lock_guard<std::mutex> guard{mtx_};
  deadlines_.ended(t.conn);
  deadlines_.step(t.conn, t.source, std::chrono::steady_clock::now());
}

void http_gate::detach(ticket& t) {
  done(t);
  t.admitted = false;
}

void http_gate::done(const ticket& t) {
  if (!t.admitted)
    return;
  std::lock_guard<std::mutex> guard{mtx_};
  deadlines_.ended(t.conn);
  quota_.release(t.source);
}

http_gate::counts http_gate::stats() const {
  std::lock_guard<std::mutex> guard{mtx_};
  auto c = counts_;
  c.open = quota_.open();
  return c;
}

void http_gate::sweep_loop() {
  // Four sweeps per deadline (at most every 250 ms): a connection is shut
  // down between 1 and 1.25 deadlines after its clock started.
  auto period = std::clamp(deadlines_.limits().timeout / 4, std::chrono::milliseconds{5},
                           std::chrono::milliseconds{250});
  std::unique_lock<std::mutex> lock{mtx_};
  while (!stopping_) {
    wake_.wait_for(lock, period);
    for (auto& c : deadlines_.expired(std::chrono::steady_clock::now()))
      if (socket_inode(c.fd) == c.inode) { // else the number names a newer socket
        ::shutdown(c.fd, SHUT_RDWR);
        ++counts_.timed_out;
        if (on_timeout_)
          on_timeout_();
      }
  }
}

} // namespace conclave::node
