// Keeps CAF 0.17.6's I/O thread from spinning on a TLS handshake that waits
// for its peer.
//
// CAF's BASP broker queues its first message as soon as a connection exists,
// so the connection's stream asks the multiplexer for "writable" events while
// the TLS handshake under it is still waiting for the peer's next bytes. A
// socket is writable nearly always; at each such event CAF calls SSL_accept
// (or SSL_connect) again, which answers "want read" and writes nothing, and
// epoll reports the socket writable at once again. The I/O thread that
// carries every link of the node spins a core for as long as the peer stays
// silent: one half-open TCP connection to a node's peer port, or a client
// starved of CPU in the middle of its handshake, costs a whole core (CAF
// fixed this after 0.17.6 by dropping the write interest until the handshake
// moves on; the Debian package has the old code).
//
// This does the same from outside CAF. The executable interposes epoll_ctl
// (write_parking.cpp) and records what each descriptor asked for. When a
// handshake step answers "want read", the TLS wrappers (tls_error_queue.cpp)
// park the descriptor: its EPOLLOUT is held back from the kernel, and any
// later registration change keeps holding it back, while CAF's own view of
// its event mask stays as it set it. The peer's bytes raise EPOLLIN, CAF
// steps the handshake from its read path, and when the step finishes, fails
// or wants to write, the descriptor is unparked and EPOLLOUT (if CAF still
// asks for it) goes back to the kernel. Only descriptors with EPOLLIN
// registered are parked: one that nobody reads would never move on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>

namespace conclave::node {

/// The bookkeeping, pure (no system calls): tested alone.
class write_parking {
public:
  /// An epoll_ctl(MOD) this module must make itself.
  struct change {
    int epfd = -1;
    int fd = -1;
    uint32_t events = 0;
    uint64_t data = 0;
  };

  /// epoll_ctl(epfd, op, fd, {events, data}) is about to be made: records it
  /// and answers the events to pass to the kernel instead (`events` without
  /// EPOLLOUT while `fd` is parked).
  uint32_t on_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);

  /// Holds back the write interest of `fd`: the MOD to make now, if any.
  /// Nothing if `fd` is not registered, is parked already or has no EPOLLIN.
  std::optional<change> park(int fd);

  /// Gives `fd`'s write interest back: the MOD to make now, if any (when
  /// it was parked and its registration asks for EPOLLOUT).
  std::optional<change> unpark(int fd);

  bool parked(int fd) const;
  size_t registered() const { return regs_.size(); }

private:
  struct reg {
    int epfd;
    uint32_t events;
    uint64_t data;
    bool parked;
  };
  std::unordered_map<int, reg> regs_;
};

/// Process-wide, through the interposed epoll_ctl: the handshake on `fd`
/// waits for the peer's bytes (park) or has moved on (unpark).
void park_tls_writes(int fd);
void unpark_tls_writes(int fd);

/// Times a handshake's write interest was held back since the process
/// started (each park that took EPOLLOUT from the kernel).
uint64_t tls_write_parks();

/// True if epoll_ctl calls reach the interposer (libc's was found).
bool write_parking_active();

} // namespace conclave::node
