// A fix for CAF 0.17.6's BASP broker, which names a connection by its socket's
// file descriptor number (connection_handle id == fd) and forgets a closed
// connection late: on connection_closed_msg it only queues its cleanup behind
// the messages still being deserialized (basp_broker.cpp: delete_atom through
// the broker's ordered message queue). The kernel hands the same number to
// the next socket at once (lowest free descriptor), so a connection accepted
// or dialed in that window gets the closed one's handle, and the late cleanup
// then hits the new connection: connection_cleanup(hdl) erases its entry in
// the routing table's direct_by_hdl_ (and its BASP context). From then on
// every message over the new connection arrives with no sender (the last hop
// of an unknown handle is the empty node id), and a reply to it goes nowhere,
// while direct_by_nid_ still routes to it and heartbeats keep it open; the
// routing table's select_alternative (operator[]) even re-adds the handle
// mapped to the empty node. Seen as a one-shot `conclave kv` whose client
// hello to a healthy member timed out for its whole timeout: the member's gate
// received each hello with a null sender (the middleman caches the
// connection, so every redial reused it). A member that just resumed from
// SIGSTOP handles a burst of closes and accepts at once, which widens the
// window.
//
// The fix: this executable interposes socket(), accept() and accept4() (found
// by the dynamic linker before libc's, as tls_error_queue.cpp does for
// OpenSSL) and moves every new socket to a descriptor number above the last
// one handed out (fcntl F_DUPFD from a rotating floor, wrapping within
// [64, min(RLIMIT_NOFILE, FD_SETSIZE))), so a closed connection's number comes
// back only after about 960 newer sockets, long after its cleanup ran. Every
// process of this executable does it: nodes (accepting clients and members,
// dialing members) and clients (configure_client keeps it linked).
//
// Measured (SIGSTOP of the member every kv dials first, 0.3–1.3 s every
// ~1.5 s, two kv loops, 100 s): 20 of 7,888 client hellos reached a gate with
// no sender before, 0 of 7,961 after.
#pragma once

namespace conclave::node {

/// The floor of the rotation: where the next socket's descriptor number is
/// searched from (pure; the interposers hold one per process).
class socket_number_rotation {
public:
  /// Numbers in [base, limit); inactive (floor 0) if the range is too small.
  socket_number_rotation(int base, int limit);

  /// Where to search for the next number (0: do not move sockets).
  int floor() const { return active() ? next_ : 0; }

  /// `fd` was handed out: the next search starts above it (wrapping).
  void handed_out(int fd);

  /// The search from floor() found nothing free below limit: start over.
  void wrap() { next_ = base_; }

  bool active() const { return limit_ - base_ >= min_range; }

  /// Below this many numbers, rotating would not delay reuse much.
  static constexpr int min_range = 64;

private:
  int base_;
  int limit_;
  int next_;
};

/// Moves socket `fd` to a number from the process's rotation (closing `fd`);
/// returns the socket's number (`fd` itself if it could not move it).
int renumber_socket(int fd, bool cloexec);

/// The socket the last accept() or accept4() of this thread returned, once:
/// -1 after it was taken, or when there was none. cpp-httplib's accept
/// thread hands its task queue a closure only; the HTTP server's queue
/// learns its connection's socket this way (http_server.cpp).
int take_accepted_socket();

/// True if the interposers are in place; calling it also keeps them in the link.
bool socket_renumbering_active();

} // namespace conclave::node
