// Where a node's replica keeps its log and its promised term: the one place
// that picks the devices. DIR/replica/log holds the replicated log
// (storage::wal_log_device: the file WAL with group commit; a torn tail is cut
// and moved aside, corruption before the end refuses the start),
// DIR/replica/term the promised term (storage::file_term_file). Both survive
// a restart of the process: a restarted node recovers its log and term and
// catches up from the primary.
#pragma once

#include "actors/replication/replica_host.hpp"
#include "runtime/node/node_config.hpp"
#include "storage/api/file_system.hpp"
#include "storage/api/log_device.hpp"

#include <functional>
#include <memory>
#include <string>

namespace conclave::node {

struct replica_storage {
  std::shared_ptr<store::log_device> device;
  std::shared_ptr<replication::term_file> terms;
  /// Whether the log and term survive a restart of the process.
  bool durable = false;
  /// What recovery did that the operator should know (a torn tail cut and
  /// moved aside, a damaged log moved aside); empty if nothing.
  std::string recovery_note;
  /// The log was lost (damaged files moved aside; DIR/replica/amnesiac marks
  /// it until the log is rebuilt): the replica rejoins amnesiac, and `healed`
  /// removes the mark (replica_host_options).
  bool amnesiac = false;
  std::function<void()> healed;
  /// This open moved a damaged log aside (and the replica rejoins amnesiac).
  bool moved_damaged_aside = false;
  /// This open cut a torn tail of the log (moved aside, not deleted).
  bool cut_torn_tail = false;
};

/// What a replica whose log or checkpoint did not open knows (all read
/// before anything changes on disk).
struct damaged_open_facts {
  /// The open failed on damage before the end of the log or in a checkpoint
  /// (not a torn tail, which recovery cuts by itself).
  bool damaged = false;
  /// Members of the replica set, this one included.
  size_t members = 1;
  /// DIR/replica/term exists, and decodes (size, magic, version, checksum).
  bool term_present = false;
  bool term_reads = false;
};

/// Heal (move the damaged files aside and rejoin amnesiac) or refuse.
enum class damaged_open_verdict {
  not_damaged,
  heal,
  refuse_single_replica,
  refuse_term_unknown
};

/// The decision of open_replica_storage, pure. Heals only with other members
/// to rebuild from and a promised term that reads: the amnesia rule
/// (docs/design/replication.md) then keeps the replica out of every sync
/// majority until a primary proves it holds all the replica acknowledged.
damaged_open_verdict decide_damaged_open(const damaged_open_facts& f);

/// Opens (creating if needed) the replica's storage under the data dir of a
/// replica set of `members` members. A log or checkpoint damaged before its
/// end (not a torn tail) is moved aside into DIR/replica/damaged-<ms>/, never
/// deleted, when there are other members to rebuild it from and the term
/// file reads; the replica then starts amnesiac. Error: one line for the user
/// (a corrupt log of a single replica, a missing or corrupt term file, an
/// unwritable directory: exit 1).
result<replica_storage> open_replica_storage(const std::string& data_dir, size_t members);

/// Where and how open_replica_storage works, for a caller that is not a
/// process on the real disk (the simulator: a simulated disk, syncs it
/// completes in virtual time, names from its clock).
struct replica_storage_options {
  std::string data_dir;
  size_t members = 1;
  /// The files (empty: the disk).
  std::shared_ptr<store::file_system> fs;
  /// storage::replica_log_options::writer_thread.
  bool writer_thread = true;
  /// storage::replica_log_options::preallocate_bytes (0: the log's default).
  uint64_t preallocate_bytes = 0;
  /// Milliseconds for the name of a damaged-<ms> directory (empty: the wall
  /// clock).
  std::function<int64_t()> now_ms;
};

result<replica_storage> open_replica_storage(const replica_storage_options& o);

} // namespace conclave::node
