// store_host: the reliable collections store as one thread-free actor
// (docs/architecture.md, "Pure core, thin actor host"). It owns a store core
// (protocols/store) and writes its records to a log_device; it answers the
// same typed interface as store_actor (store_interface.hpp), so clients
// cannot tell the two apart.
//
// - No threads and no wall clock of its own: lock timeouts are armed with
//   delayed_send on the actor's clock (virtual under CAF's test coordinator),
//   tagged with a generation so a stale timer does nothing; a device's sync
//   completion arrives as a done_atom message. With a memory_log_device a whole
//   run is deterministic.
// - Strong mode (default): a commit is answered once its record is durable;
//   commits that arrive while a sync is in flight share the next sync (group
//   commit). Weak mode answers on apply. open_atom waits for durability in
//   both modes, like state_manager.
// - A lock that is not free parks the operation; it is answered when the lock
//   is granted, or with errc::lock_timeout at its deadline.
// - A failed append or sync stops the host: commits in flight get
//   errc::io_failure, every later request errc::store_failed.
// - On start the host replays the device (checkpoint image, then records), so
//   a host restarted on the same device sees every durable commit.
// - checkpoint_atom stores the state on the device; while records are still
//   waiting for their sync it answers errc::transaction_busy (ask again).
// - Transactions begun here are aborted when the actor terminates.
#pragma once

#include "actors/store/store_interface.hpp"
#include "protocols/store/store_core.hpp"
#include "storage/api/log_device.hpp"

#include <caf/actor_system.hpp>

#include <chrono>
#include <memory>

namespace conclave::store {

struct store_host_options {
  /// Where records go. Required.
  std::shared_ptr<log_device> device;
  /// true: commit answers once durable; false: once applied.
  bool strong = true;
  /// Lock timeout of operations that pass timeout_ms 0.
  std::chrono::milliseconds default_timeout{4000};
  core_limits limits;
  /// Drop versions no snapshot can see after this many commits.
  uint32_t gc_every_commits = 1024;
};

/// Spawns a host on `opts.device`, after replaying it. If the replay fails
/// (corrupt device) the actor answers every request with errc::corrupt_data.
store_actor spawn_store_host(caf::actor_system& sys, store_host_options opts);

} // namespace conclave::store
