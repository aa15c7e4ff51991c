#include "runtime/node/handshake_guard.hpp"

#include <arpa/inet.h>
#include <malloc.h>
#include <mutex>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>

namespace conclave::node {

handshake_budget::verdict handshake_budget::step(connection c, const std::string& source,
                                                 time_point now) {
  if (pending_.count(c) != 0)
    return verdict::pending;
  auto& from = per_source_[source];
  if (pending_.size() >= limits_.max_total || from >= limits_.max_per_source) {
    if (from == 0)
      per_source_.erase(source);
    return verdict::refused;
  }
  ++from;
  pending_.emplace(c, entry{source, now});
  return verdict::admitted;
}

void handshake_budget::ended(connection c) {
  auto i = pending_.find(c);
  if (i == pending_.end())
    return;
  auto s = per_source_.find(i->second.source);
  if (s != per_source_.end() && --s->second == 0)
    per_source_.erase(s);
  pending_.erase(i);
}

std::vector<handshake_budget::connection> handshake_budget::expired(time_point now) {
  std::vector<connection> out;
  for (auto& [c, e] : pending_)
    if (now - e.since >= limits_.timeout)
      out.push_back(c);
  for (auto& c : out)
    ended(c);
  return out;
}

size_t handshake_budget::pending_from(const std::string& source) const {
  auto i = per_source_.find(source);
  return i == per_source_.end() ? 0 : i->second;
}

uint64_t socket_inode(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

std::string peer_address(int fd) {
  sockaddr_storage a{};
  socklen_t n = sizeof a;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0)
    return "?";
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&a)->sin_addr, text,
                sizeof text);
  else if (a.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&a)->sin6_addr, text,
                sizeof text);
  return text;
}

namespace {

std::mutex guard_mtx;
handshake_budget& budget() {
  static handshake_budget b;
  return b;
}
uint64_t refused_count = 0;
uint64_t timed_out_count = 0;
uint64_t ended_count = 0;
bool sweeper_started = false;

/// Unfinished handshakes that ended (refused, timed out or finished) since
/// the allocator last gave free memory back, above which it is asked again.
constexpr uint64_t trim_after_handshakes = 16;

/// Shuts down the handshakes past their timeout (the lock is held). A
/// descriptor whose inode changed names another socket now: left alone.
void sweep(std::chrono::steady_clock::time_point now) {
  for (auto& c : budget().expired(now))
    if (socket_inode(c.fd) == c.inode) {
      ::shutdown(c.fd, SHUT_RDWR);
      ++timed_out_count;
    }
}

/// Sweeps four times per timeout, so that a handshake nobody steps again (the
/// peer sent nothing) still ends.
void start_sweeper() {
  if (sweeper_started)
    return;
  sweeper_started = true;
  std::thread{[] {
    uint64_t churn_at_trim = 0;
    for (;;) {
      std::chrono::milliseconds period;
      bool trim = false;
      {
        std::lock_guard<std::mutex> guard{guard_mtx};
        period = budget().limits().timeout / 4;
        sweep(std::chrono::steady_clock::now());
        // A flood of connections that never finish leaves the buffers of
        // their TLS sessions (tens of KB each) free inside malloc's heap,
        // where they would count as the node's memory for good: once the
        // flood has drained, hand free pages back to the system.
        auto churn = refused_count + timed_out_count + ended_count;
        if (churn - churn_at_trim >= trim_after_handshakes
            && budget().pending() <= budget().limits().max_total / 4) {
          churn_at_trim = churn;
          trim = true;
        }
      }
      if (trim)
        ::malloc_trim(0);
      std::this_thread::sleep_for(std::max(period, std::chrono::milliseconds{10}));
    }
  }}.detach();
}

} // namespace

handshake_guard_counts handshake_guard_stats() {
  std::lock_guard<std::mutex> guard{guard_mtx};
  return {refused_count, timed_out_count, budget().pending()};
}

bool handshake_guard_step(int fd) {
  if (fd < 0)
    return true;
  auto now = std::chrono::steady_clock::now();
  handshake_budget::connection c{fd, socket_inode(fd)};
  std::lock_guard<std::mutex> guard{guard_mtx};
  start_sweeper();
  sweep(now);
  if (budget().step(c, peer_address(fd), now) != handshake_budget::verdict::refused)
    return true;
  ::shutdown(fd, SHUT_RDWR);
  ++refused_count;
  return false;
}

void handshake_guard_ended(int fd) {
  if (fd < 0)
    return;
  std::lock_guard<std::mutex> guard{guard_mtx};
  budget().ended({fd, socket_inode(fd)});
  ++ended_count;
}

} // namespace conclave::node
