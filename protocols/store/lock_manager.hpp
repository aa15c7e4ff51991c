// Lock manager of the reliable collections store: strict two-phase locking
// with Shared, Update and Exclusive modes (docs/patterns.md, "Reliable Collections",
// Locking).
//
// Guarantees
// - A lock is held until release_all() (commit or abort): strict 2PL.
// - Compatibility (requested \ granted), exactly as the pattern states it:
//
//                  granted S   granted U   granted X
//     request S       ok        conflict    conflict
//     request U       ok        conflict    conflict
//     request X    conflict     conflict    conflict
//
//   A transaction never conflicts with itself; asking for a stronger mode on a
//   lock it holds is an upgrade (S -> U -> X), granted when compatible with the
//   other holders, else queued at the front.
// - Waiters are served first come first served per resource: a new request
//   waits behind earlier waiters even when it would be compatible (no
//   starvation of writers).
// - Every wait has a deadline. expire(now) removes waiters past it: that is the
//   deadlock detection (a cycle is broken by whichever side times out first).
//
// Pure: no clock, no threads. The host passes time in and learns about grants
// by take_granted() after release_all() and expire().
#pragma once

#include "protocols/store/types.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace conclave::store {

/// Whether a lock requested in mode `requested` may be granted while another
/// transaction holds the same resource in mode `granted`.
constexpr bool compatible(lock_mode requested, lock_mode granted) {
  switch (requested) {
  case lock_mode::shared:
    return granted == lock_mode::shared;
  case lock_mode::update:
    return granted == lock_mode::shared;
  case lock_mode::exclusive:
    return false;
  }
  return false;
}

/// The lockable resources: a dictionary row, or one of a queue's two
/// operation locks.
enum class lock_space : uint8_t { row = 0, enqueue = 1, dequeue = 2 };

struct lock_key {
  collection_id collection = 0;
  lock_space space = lock_space::row;
  std::string row;

  friend bool operator<(const lock_key& a, const lock_key& b) {
    if (a.collection != b.collection)
      return a.collection < b.collection;
    if (a.space != b.space)
      return a.space < b.space;
    return a.row < b.row;
  }
  friend bool operator==(const lock_key& a, const lock_key& b) {
    return a.collection == b.collection && a.space == b.space && a.row == b.row;
  }
};

/// Hash of a lock_key: the lock table is a hash table, as every lookup is by
/// the whole key (an ordered map compared long, shared-prefix row keys about
/// 17 times per lookup at 100,000 rows).
struct lock_key_hash {
  size_t operator()(const lock_key& k) const noexcept {
    auto h = std::hash<std::string_view>{}(k.row);
    return h
           ^ ((static_cast<size_t>(k.collection) << 2 | static_cast<size_t>(k.space))
              * 0x9E3779B97F4A7C15ull);
  }
};

enum class acquire_result { granted, waiting };

class lock_manager {
public:
  /// Grants `mode` on `key` to `txn` at once, or queues the request until
  /// `deadline`. A transaction may wait for at most one lock at a time.
  acquire_result acquire(txn_id txn, lock_key key, lock_mode mode, timestamp deadline);

  /// Releases every lock of `txn` and drops its waiting request, if any.
  /// Waiters that become grantable are reported by take_granted().
  void release_all(txn_id txn);

  /// Removes every waiter whose deadline is <= now and returns them (their
  /// request failed). Waiters behind them may be granted (take_granted()).
  std::vector<txn_id> expire(timestamp now);

  /// Transactions whose waiting request was granted since the last call.
  std::vector<txn_id> take_granted();

  /// Earliest deadline among the waiters.
  std::optional<timestamp> next_deadline() const;

  /// Mode in which `txn` holds `key`, if it does.
  std::optional<lock_mode> held(txn_id txn, const lock_key& key) const;

  bool is_waiting(txn_id txn) const { return waiting_.count(txn.value) > 0; }

  /// Number of (transaction, resource) grants.
  size_t grant_count() const;
  size_t waiter_count() const { return waiting_.size(); }

private:
  struct waiter {
    txn_id txn;
    lock_mode mode;
    timestamp deadline;
  };
  /// Holders and waiters of one resource. Small vectors, not a map and a
  /// deque: a row lock has one holder and no waiter almost always, and an
  /// empty std::deque allocates (these are made and dropped per operation).
  struct resource {
    std::vector<std::pair<uint64_t, lock_mode>> granted;
    std::vector<waiter> queue;
    std::pair<uint64_t, lock_mode>* find(uint64_t txn) {
      for (auto& g : granted)
        if (g.first == txn)
          return &g;
      return nullptr;
    }
  };
  using table = std::unordered_map<lock_key, resource, lock_key_hash>;
  /// An entry of table_ (a node: its address survives rehashing). Stable: an
  /// entry is only erased when nobody holds or waits for it, and then no
  /// held_by_ or waiting_ entry refers to it.
  using entry = table::value_type*;

  bool grantable(const resource& r, txn_id txn, lock_mode mode) const;
  void grant_waiters(entry e);
  /// Grants what became grantable on `touched` resources (each listed once),
  /// drops unused ones.
  void regrant(const std::vector<entry>& touched);

  table table_;
  /// The resources each transaction holds (one lookup per acquire; release
  /// and regrant need none).
  std::unordered_map<uint64_t, std::vector<entry>> held_by_;
  std::unordered_map<uint64_t, std::pair<entry, timestamp>> waiting_;
  std::vector<txn_id> granted_;
};

} // namespace conclave::store
