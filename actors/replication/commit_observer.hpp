// commit_observer: what a replica host reports of each committed record it
// applies, for a node that publishes changes (the /v1/watch stream). Every
// committed record reaches every replica, so every node sees every change.
//
// The host calls `notify` from its own actor, once per applied record that
// wrote a watched collection or granted, released or expired a lease, and
// only when the record changed something (not for refused transactions or
// sessioned retries). `notify` must return quickly and never block: hand the
// changes to a queue or ring. Without an observer the host does no extra
// work; with one it reads the previous value of each write to a watched
// collection (one point read of its applied state) before applying.
//
// Records applied while the host recovers its log at start are reported too;
// a checkpoint installed from a peer (replica_host.hpp) replaces the state
// without any report.
#pragma once

#include "actors/replication/messages.hpp"
#include "actors/replication/txn_apply.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace conclave::replication {

/// One write a committed record made to a watched collection.
struct observed_write {
  std::string collection;
  std::string key;
  /// The value before the record (nothing: absent).
  std::optional<std::string> before;
  /// The value it wrote (nothing: removed).
  std::optional<std::string> after;
};

enum class lease_change_kind : uint8_t { granted, released, expired };

const char* to_string(lease_change_kind k) noexcept;

/// A slot of a lease that changed hands.
struct lease_change {
  std::string name;
  std::string holder;
  /// The fencing token of the slot (granted: the record's lsn).
  uint64_t token = 0;
  lease_change_kind kind = lease_change_kind::granted;
};

struct committed_changes {
  lsn at;
  std::vector<observed_write> writes;
  std::vector<lease_change> leases;
};

struct commit_observer {
  /// The collections whose writes are reported.
  std::set<std::string> collections;
  std::function<void(committed_changes&&)> notify;
};

/// The lease slots a record at `at` granted, released or expired, given its
/// ops and the outcome of applying them. A lease_acquire whose token is the
/// record's own lsn is a grant; one that returns an older token is the
/// holder's renewal and not reported. Nothing for a refused transaction or
/// a sessioned retry.
std::vector<lease_change> lease_changes(const std::vector<txn_op>& ops,
                                        const apply_outcome& outcome, lsn at);

} // namespace conclave::replication
