// lease_table: what only the acting primary knows about leases, and forgets
// when it stops acting: when each holder's time runs out, and who waits for a
// slot. Plain C++, no CAF; the replica host feeds it what it applies and the
// time, and proposes what it asks for.
//
// Expiry (docs/locks.md, "Why a lease is never held twice"): a holder whose
// grant or renewal was applied here at local time a expires at
//   a + ttl * (1 + drift) / (1 - drift) + lock_delay
// on this primary's clock. The holder counts its ttl from the moment it SENT
// the request (before a), on its own clock. With every clock's rate within
// [1 - drift, 1 + drift] of real time, the holder's ttl ends in real time
// within ttl / (1 - drift) of the send, and the primary's wait lasts at least
// ttl / (1 - drift) in real time: the store never frees a slot while its
// holder may still count it as held. A primary that starts acting restarts
// every holder's full ttl from that moment: every renewal any earlier primary
// acknowledged was committed before this primary's sync phase ended, so that
// moment is after the renewal's send.
//
// Waiters: acquires that asked to wait, in arrival order per lease. The host
// grants the head when a slot frees; a waiter whose wait runs out is answered
// lease_busy.
#pragma once

#include "protocols/replication/types.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace conclave::replication {

struct lease_timing {
  /// Bound on any clock's rate error (0.01: 1%). 0 <= drift < 0.5.
  double drift = 0.01;
  /// Extra wait before an expired slot is freed.
  duration lock_delay{0};
};

/// ttl * (1 + drift) / (1 - drift) + lock_delay, rounded up.
duration expiry_wait(std::chrono::milliseconds ttl, const lease_timing& t);

class lease_table {
public:
  explicit lease_table(lease_timing t = {}) : timing_(t) {}

  /// A grant or renewal of `holder` with `token` was applied at `now`.
  void held(const std::string& name, const std::string& holder, uint64_t token,
            std::chrono::milliseconds ttl, timestamp now);
  /// The holder's slot was freed (release, expiry).
  void gone(const std::string& name, const std::string& holder);
  /// Stops acting: forgets every deadline.
  void clear();
  size_t size() const { return held_.size(); }

  struct expiry {
    std::string name;
    std::string holder;
    uint64_t token = 0;
  };
  /// Holders whose time ran out by `now` and for which no expiry was asked
  /// for within `retry` (an expiry proposal may be lost with its primary).
  std::vector<expiry> due(timestamp now, duration retry = std::chrono::seconds(1));
  /// When due() will next have something, if ever.
  std::optional<timestamp> next_deadline() const;
  /// The deadline of a holder (tests, status).
  std::optional<timestamp> deadline(const std::string& name,
                                    const std::string& holder) const;

private:
  using key = std::pair<std::string, std::string>;
  struct entry {
    uint64_t token = 0;
    timestamp deadline{};
    std::optional<timestamp> asked;
    /// When due() next looks at it (deadline, or asked + retry): its place
    /// in by_time_.
    timestamp next{};
  };
  void index(const key& k, entry& e, timestamp next);
  lease_timing timing_;
  std::map<key, entry> held_;
  /// (next, key) of every entry: next_deadline() and due() without a walk
  /// over every holder (the host asks after every message).
  std::set<std::pair<timestamp, key>> by_time_;
};

/// Acquires waiting for a slot, FIFO per lease.
///
/// A client waits longer than one request (it polls): when a waiter's wait
/// runs out, its entry stays in place as a placeholder for `grace`, so the
/// same holder asking again keeps its turn. A placeholder is never granted
/// (nobody is there to answer): a free slot goes to the first waiter that
/// is.
class lease_waiters {
public:
  struct waiter {
    /// The host's reference of the waiting client (0: a placeholder).
    uint64_t id = 0;
    std::string holder;
    timestamp until{};
  };
  explicit lease_waiters(duration grace = std::chrono::seconds(1)) : grace_(grace) {}
  /// Appends a waiter. A holder already waiting (or held a place) keeps its
  /// place: the old entry's id is returned when it was a live request (the
  /// host answers that one lease_busy), and the new one takes its place.
  std::optional<uint64_t> push(const std::string& name, waiter w);
  /// Puts a waiter back at the head (its grant raced and lost).
  void push_front(const std::string& name, waiter w);
  /// The first waiter that is not a placeholder, removed.
  std::optional<waiter> pop(const std::string& name);
  /// Live waiters (placeholders not counted).
  size_t waiting(const std::string& name) const;
  /// Every entry, placeholders included (the memory bound).
  size_t size() const;
  /// The waiters whose wait ran out by `now`: each becomes a placeholder
  /// until now + grace (and is returned, for the host to answer); the
  /// placeholders whose grace ran out are dropped.
  std::vector<waiter> timed_out(timestamp now);
  std::optional<timestamp> next_deadline() const;
  /// Removes and returns every live waiter and drops the placeholders (the
  /// primary stops acting).
  std::vector<waiter> drain();
  std::vector<std::string> names() const;
  /// The live waiters of `name` in queue order (placeholders left out).
  std::vector<waiter> live(const std::string& name) const;

private:
  void forget(timestamp until);
  duration grace_;
  std::map<std::string, std::deque<waiter>> queues_;
  /// Every entry's `until`, for next_deadline() without a walk.
  std::multiset<timestamp> untils_;
};

} // namespace conclave::replication
