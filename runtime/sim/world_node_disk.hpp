// What a world node keeps across its crashes: its disk, and what the replica
// host and the candidate find there at each start.
//
// Two kinds:
// - on files (the default of the replication and lease workloads): a
//   simulated data directory (sim_file_system) holding what `conclave node
//   --data-dir` holds, DATA/replica/{log,checkpoints,term,amnesiac} and
//   DATA/lease-promise. Every life of the node opens it with the node's own
//   code: open_replica_storage (log recovery, a torn tail cut and moved aside,
//   a damaged log moved aside and rebuilt from the peers, or a refusal to
//   start) and the file promise record. The log device is the real WAL
//   without a writer thread, its syncs completed in virtual time (sim_disk).
// - in memory: records kept by a memory log device (sim_disk), a memory term
//   file and promise record that survive crashes, as a file written to
//   completion would.
//
// Faults: kill() is a process crash (kill -9: the page cache keeps every
// write); power_loss_at_next_sync() cuts the machine's power while its next
// sync is under way (what was written since the last sync is lost, torn or
// garbled: sim_file_system's model), then the node is down; flip() damages
// one synced bit of the replica's files, found by the next start.
#pragma once

#include "actors/election/host.hpp"
#include "actors/replication/replica_host.hpp"
#include "runtime/sim/disk_kind.hpp"
#include "runtime/sim/sim_disk.hpp"
#include "runtime/sim/sim_file_system.hpp"

#include <boost/outcome.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace conclave::sim {

namespace outcome = BOOST_OUTCOME_V2_NAMESPACE;
using election::duration;

class world_node_disk {
public:
  /// `seed` fixes the file system's choices (what a power loss keeps).
  world_node_disk(disk_kind kind, std::chrono::nanoseconds fsync, bool lying,
                  uint64_t seed);
  /// Unhooks the file system: a log device of a live actor may still write
  /// to it (its close) after this is gone.
  ~world_node_disk();
  world_node_disk(const world_node_disk&) = delete;
  world_node_disk& operator=(const world_node_disk&) = delete;

  /// What one life of the node opened.
  struct life {
    std::shared_ptr<sim_disk> disk;
    std::shared_ptr<replication::term_file> terms;
    std::shared_ptr<election::promise_record> record;
    bool amnesiac = false;
    std::function<void()> healed;
    /// What recovery did that an operator would read in the log.
    std::string note;
    /// This start moved a damaged log aside; it cut a torn tail.
    bool moved_damaged_aside = false;
    bool cut_torn_tail = false;
  };

  /// Opens the node's storage for a new life (a crash ended the last one),
  /// `members` the size of the replica set, `now_ms` the node's clock for
  /// names. Error: the line `conclave node` would print before exiting 1.
  /// `lease_max`: the promise record's bound when it does not read.
  outcome::result<life, std::string> open(size_t members, int64_t now_ms,
                                          duration lease_max);

  /// The process died (its actors are gone): handles and locks die, queued
  /// records with it; returns how many records were appended and not durable.
  uint64_t kill();
  /// The power goes while the next sync is under way: `down` is called then
  /// (from inside the sync; it must only schedule the node's crash). Memory
  /// kind: false (the memory disk has no page cache; kill() loses the same).
  bool power_loss_at_next_sync(std::function<void()> down);
  /// Flips one synced bit of the replica's files (log, checkpoints, term
  /// file); the file and offset, or nothing (memory kind, or no synced byte).
  std::optional<sim_file_system::flipped> flip();

  sim_disk& disk() { return *disk_; }
  const std::shared_ptr<sim_disk>& disk_ptr() const { return disk_; }
  disk_kind kind() const { return kind_; }
  /// The file system (files kind), for tests and reports.
  sim_file_system* files() { return fs_.get(); }
  uint64_t power_losses() const { return power_losses_; }
  /// The power went, or a bit flipped, in this life: its storage may fail
  /// from then on, rightly (it never guesses past damage).
  bool faulted() const { return faulted_; }

  static constexpr const char* data_dir = "/data";

private:
  disk_kind kind_;
  std::shared_ptr<sim_disk> disk_;
  std::shared_ptr<sim_file_system> fs_;
  /// Memory kind: kept across lives.
  std::shared_ptr<replication::memory_term_file> terms_;
  std::shared_ptr<election::memory_promise_record> record_;
  std::function<void()> power_down_;
  uint64_t power_losses_ = 0;
  bool faulted_ = false;
};

} // namespace conclave::sim
