// A connector dials one member (the lower id of every pair dials, so each pair
// shares one connection): asynchronous connect through the middleman actor
// (remote_actor() would block, forever on a frozen peer), a check that the
// published interface is a conclave gate, the membership handshake (with TLS:
// an identity proof each way first, peer_identity.hpp), then a monitor on the
// peer's candidate. Any failure, and any later drop of the
// connection, schedules a new attempt with exponential backoff
// (initial_backoff .. max_backoff), so a restarted peer is found again.
#pragma once

#include "runtime/node/node_config.hpp"
#include "runtime/node/peer_links.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <memory>
#include <optional>

namespace conclave::node {

struct connector_options {
  uint64_t peer = 0;
  address where;
  std::chrono::milliseconds initial_backoff{20};
  std::chrono::milliseconds max_backoff{100};
  /// The longest wait between dials cut at the middleman's tick (a peer that
  /// never answers the handshake: stopped, or its host overloaded).
  std::chrono::milliseconds cut_max_backoff{1000};
  /// Per step (connect, handshake): a frozen peer accepts TCP but never answers.
  std::chrono::milliseconds step_timeout{1000};
  /// While linked: how often to ask the gate whether it still holds the link
  /// (gate_actor.hpp, link check); 0: never.
  std::chrono::milliseconds check_interval{500};
  /// Right after this process was paused (peer_links::just_resumed): how
  /// long a request to the peer's gate (the identity challenge, the hello,
  /// a link check) waits for its answer before the connector tries again.
  /// One sent at the moment of resuming can go out on a connection the peer
  /// closed during the pause and be lost: waiting the whole step timeout
  /// for it left a resumed node without a link to the leader for 1 to 1.5 s.
  std::chrono::milliseconds resumed_request_timeout{200};
  /// Repair mode (peer_links::set_repair): dial a lower-id member once, retrying
  /// only until `repair_for` has passed; once linked, report the link's end and
  /// stop (the member's own connector stays responsible for reconnecting).
  bool repair = false;
  std::chrono::milliseconds repair_for{2000};
  /// The connector's clock (a seam for tests).
  steady_now_fn now = [] { return std::chrono::steady_clock::now(); };
};

/// When a connector dials again: after a failure, wait `initial_backoff`, then
/// twice as long after each further failure, at most `max_backoff`; a link
/// that came up starts over. In repair mode, give up once `repair_for` has
/// passed since the start. Pure: the caller passes the time.
class redial_schedule {
public:
  redial_schedule(const connector_options& o,
                  std::chrono::steady_clock::time_point start);

  /// The wait before the next attempt after a failure at `now`; nullopt: give up.
  std::optional<std::chrono::milliseconds>
  after_failure(std::chrono::steady_clock::time_point now);

  /// The wait after the middleman cut the dial at its heartbeat tick
  /// (`connection_timeout` while the handshake was under way; CAF 0.17.6
  /// counts a dialed connection as silent until its first bytes arrive,
  /// docs/design/caf-0.17.md). The cut comes just after a tick, so a dial
  /// started at once has the whole interval before the next one: the first
  /// two cuts in a row redial at once. Further ones wait `initial_backoff`,
  /// doubling up to `cut_max_backoff`: a stopped peer's kernel accepts every
  /// dial and CAF's TLS transport spins the I/O thread until the cut, so a
  /// peer that never answers must not be dialed often.
  std::optional<std::chrono::milliseconds>
  after_tick_cut(std::chrono::steady_clock::time_point now);

  /// The link came up (or dropped after being up): the next wait is the initial one.
  void reset() {
    next_ = initial_;
    cuts_ = 0;
  }

  std::chrono::milliseconds initial() const { return initial_; }

private:
  std::optional<std::chrono::milliseconds>
  next_wait(std::chrono::steady_clock::time_point now, std::chrono::milliseconds cap);

  std::chrono::milliseconds initial_;
  std::chrono::milliseconds max_;
  std::chrono::milliseconds cut_max_;
  std::chrono::milliseconds next_;
  unsigned cuts_ = 0; ///< tick cuts in a row
  std::optional<std::chrono::steady_clock::time_point> give_up_;
};

/// How long a request to the peer's gate waits for its answer: the step
/// timeout, but right after a pause of this process `resumed_request_timeout`
/// (at most the step timeout, at least 1 ms). Pure.
std::chrono::milliseconds gate_request_timeout(const connector_options& o,
                                               bool just_resumed);

/// How a link check waits for the gate's answer, and when a check that got
/// none asks again.
struct link_check_timing {
  std::chrono::milliseconds timeout;
  std::chrono::milliseconds retry_after;
};
/// Normally the step timeout, then a new check after `check_interval` (a
/// frozen peer: the link timeout ends that link meanwhile). Right after a
/// pause of this process: gate_request_timeout, and again at once. Pure.
link_check_timing link_check_timing_for(const connector_options& o, bool just_resumed);

caf::actor spawn_connector(caf::actor_system& sys, std::shared_ptr<peer_links> links,
                           connector_options opts);

} // namespace conclave::node
