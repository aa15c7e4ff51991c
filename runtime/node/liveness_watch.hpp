// Liveness connections: proofs that a member's process is gone.
//
// When a process ends (kill -9 included), the kernel of its host closes its
// sockets; on a TCP connection whose receive queue is empty that is a FIN,
// which the other end reads as end of file. A stopped (SIGSTOP) or starved
// process, a cut network or a dead host sends nothing. So each pair of members
// keeps one otherwise silent TCP connection (a "liveness connection"): nothing
// is ever sent on it after its opening, and a live node never closes it. End of
// file on it is proof that the member's incarnation on the other end is gone
// (candidate_core::peer_dead); anything else (a reset, a timeout, silence) is
// not. docs/design/election.md, "Proofs of death", argues why.
//
// Opening, bound to the authenticated member link (gate_actor.hpp): the
// dialing member asks the gate, over its link, for a ticket (liveness_atom,
// with its incarnation); the gate answers with this service's port, a fresh
// one-time nonce and its own incarnation. The dialer connects to that port and
// sends the nonce; the accepting side checks it, takes it off the table and
// sends one byte back; from then on both ends watch. A stranger cannot plant
// a connection (it has no nonce), and a refused or unfinished opening is never
// taken as proof (the dialer watches only after the byte). Neither end closes
// a connection the other may be watching: the accepting side sends its byte
// only when it starts watching, and the dialer, once its nonce is out, keeps
// the connection open even when the byte is late (it only stops reading).
//
// One thread with poll(); sockets are close-on-exec. The pure pieces (the
// nonce table, the meaning of a read) are below, tested without sockets.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>

namespace conclave::node {

/// What one read of a watched liveness connection means.
enum class liveness_read {
  nothing,    ///< no data yet (EAGAIN, EINTR): keep watching
  proof,      ///< end of file: the peer's kernel closed it, its process is gone
  reset,      ///< ECONNRESET, ETIMEDOUT ...: the connection is gone, the peer
              ///< may live (a middlebox or a timeout can reset): no proof
  unexpected, ///< bytes arrived on a connection that carries none: no proof
};
/// `n` is what recv() returned, `err` errno after it.
liveness_read classify_liveness_read(ssize_t n, int err);

/// The accepting side's one-time tickets: nonce -> (member, incarnation),
/// each valid for `ttl` after it was issued, and only once.
class liveness_tickets {
public:
  using clock = std::chrono::steady_clock;
  struct holder {
    uint64_t member = 0;
    uint64_t incarnation = 0;
  };
  explicit liveness_tickets(std::chrono::milliseconds ttl = std::chrono::seconds(10))
      : ttl_(ttl) {}
  /// Registers `nonce` for the member (expired tickets are dropped first).
  void issue(const std::string& nonce, holder h, clock::time_point now);
  /// The ticket's holder if `nonce` is one, unexpired; it is used up.
  std::optional<holder> redeem(const std::string& nonce, clock::time_point now);
  size_t size() const { return tickets_.size(); }

private:
  struct entry {
    holder h;
    clock::time_point expires;
  };
  std::chrono::milliseconds ttl_;
  std::map<std::string, entry> tickets_;
};

class liveness_watch {
public:
  /// Called on the service's thread with a proof: `incarnation` of `member`
  /// is gone.
  using dead_fn = std::function<void(uint64_t member, uint64_t incarnation)>;
  using log_fn = std::function<void(const std::string&)>;

  /// Listens on `host` (an ephemeral port) and starts the thread. nullptr and
  /// `error` set if it cannot listen.
  static std::unique_ptr<liveness_watch> start(const std::string& host, dead_fn dead,
                                               log_fn warn, std::string& error);
  /// Stops the thread and closes every connection: the peers read end of file,
  /// so call it only once this node no longer acts (it left the group).
  ~liveness_watch();

  liveness_watch(const liveness_watch&) = delete;
  liveness_watch& operator=(const liveness_watch&) = delete;

  uint16_t port() const { return port_; }

  /// Accepting side: a one-time nonce for `member`'s connection.
  std::string issue(uint64_t member, uint64_t incarnation);
  /// Dialing side: opens a connection to host:port with `nonce`; watches
  /// `member`'s `incarnation` once the other end accepted it. Does nothing if
  /// that incarnation is watched already (or being opened).
  void dial(const std::string& host, uint16_t port, const std::string& nonce,
            uint64_t member, uint64_t incarnation);
  /// Whether a connection to `member`'s `incarnation` is watched or opening.
  /// True once the connection to or from (member, incarnation) is being
  /// watched for a proof (a dialer: after the accepting side's byte).
  bool confirmed(uint64_t member, uint64_t incarnation) const;
  bool watching(uint64_t member, uint64_t incarnation) const;
  /// Proofs seen so far (for metrics and tests).
  uint64_t proofs() const;

  struct impl;

private:
  explicit liveness_watch(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
  uint16_t port_ = 0;
};

} // namespace conclave::node
