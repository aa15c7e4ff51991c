// A budget for TLS handshakes a node has accepted but not finished. Before
// a handshake completes, a connection proves nothing: anyone who can reach
// the port can open hundreds and leave them half-open or trickle bytes, and
// CAF 0.17.6 gives each its own SSL context and buffers (tens of KB) for as
// long as the peer keeps it open. The budget bounds them:
//
// - at most `max_total` handshakes pending at once, and `max_per_source`
//   from one address: a handshake over either bound is refused at its first
//   step (its connection is shut down, and CAF closes it);
// - a handshake pending longer than `timeout` is shut down the same way.
//
// Finished handshakes (authenticated peers and clients) are not counted, so
// nothing an unauthenticated connection does reaches an established link.
// The SSL_accept wrapper (tls_error_queue.cpp) drives it; this class is the
// pure bookkeeping, tested alone.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace conclave::node {

struct handshake_limits {
  size_t max_total = 24;
  size_t max_per_source = 12;
  std::chrono::milliseconds timeout{3000};
};

class handshake_budget {
public:
  using time_point = std::chrono::steady_clock::time_point;

  /// A connection: its descriptor and the socket's inode (a descriptor
  /// number alone may name a newer socket once the old one closed).
  struct connection {
    int fd = -1;
    uint64_t inode = 0;
    friend bool operator<(const connection& a, const connection& b) {
      return a.fd != b.fd ? a.fd < b.fd : a.inode < b.inode;
    }
    friend bool operator==(const connection& a, const connection& b) {
      return a.fd == b.fd && a.inode == b.inode;
    }
  };

  enum class verdict { admitted, pending, refused };

  explicit handshake_budget(handshake_limits limits = {}) : limits_(limits) {}

  /// A handshake step of `c` from `source`: `pending` if it is counted
  /// already, `admitted` if it starts now within the limits, `refused`
  /// (not counted) if it would exceed one.
  verdict step(connection c, const std::string& source, time_point now);

  /// The handshake of `c` ended, finished or failed.
  void ended(connection c);

  /// Removes and returns the handshakes pending longer than the timeout.
  std::vector<connection> expired(time_point now);

  size_t pending() const { return pending_.size(); }
  size_t pending_from(const std::string& source) const;

  const handshake_limits& limits() const { return limits_; }

private:
  struct entry {
    std::string source;
    time_point since;
  };
  handshake_limits limits_;
  std::map<connection, entry> pending_;
  std::map<std::string, size_t> per_source_;
};

/// The inode of the socket `fd` names (0 if none): with the descriptor
/// number, it tells a socket from a newer one that reused the number.
uint64_t socket_inode(int fd);

/// The peer's IP address of the socket `fd` as text ("?" if unknown).
std::string peer_address(int fd);

/// Counts of the process's budget: handshakes refused over a bound, shut
/// down at their timeout, and pending now.
struct handshake_guard_counts {
  uint64_t refused = 0;
  uint64_t timed_out = 0;
  uint64_t pending = 0;
};
handshake_guard_counts handshake_guard_stats();

/// Called by the SSL_accept wrapper for each handshake step on descriptor
/// `fd`: false if the handshake must be refused (the guard has shut the
/// socket down, so the step fails and CAF closes it). Also shuts down the
/// handshakes past their timeout.
bool handshake_guard_step(int fd);

/// The handshake on `fd` ended (SSL_accept returned 1 or failed for good).
void handshake_guard_ended(int fd);

} // namespace conclave::node
