// What the nodes' disks went through, in one run or summed over many: power
// losses during a sync, bits flipped, and what the nodes' starts found there
// (a torn tail cut, a damaged log moved aside to be rebuilt from the peers, a
// refusal to start). One piece for every workload whose nodes run on the
// files disk (world_node_disk.hpp), so that their reports count and print
// the same figures alike: the `disks:` line and the JSON object "disks".
#pragma once

#include "runtime/sim/world_node_disk.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <ostream>
#include <string>

namespace conclave::sim {

struct disk_counts {
  uint64_t power_losses = 0; ///< power lost during a sync
  uint64_t bitflips = 0;     ///< synced bits flipped
  /// Starts that found a damaged log or checkpoint, moved it aside and
  /// rejoined to rebuild it from the peers.
  uint64_t heals = 0;
  uint64_t tails_cut = 0; ///< starts that cut a torn tail
  /// Starts refused (the node stays down, as a process that exits 1), and
  /// the first refusal's line.
  uint64_t refused_starts = 0;
  std::string first_refusal;
  /// Replica hosts whose storage failed while the node ran (the node then
  /// leaves, as `conclave node` exits 1), though their disk neither lost
  /// power nor had a bit flipped in that life:
  /// the simulated file system returns no error, so each is a defect of the
  /// storage code. The first one's line.
  uint64_t storage_failures = 0;
  std::string first_storage_failure;

  /// A start opened its storage: counts what the recovery did.
  void opened(const world_node_disk::life& l);
  /// The start of node `id` was refused with `why` (what `conclave node`
  /// prints before it exits 1).
  void refused(election::node_id id, const std::string& why);
  /// The replica host of node `id` failed with `what` on a disk without an injected
  /// fault.
  void failed(election::node_id id, const std::string& what);
  /// Adds the counts of the run of `seed` (its first refusal is kept with
  /// the seed, if none was kept before).
  void add(const disk_counts& run, uint64_t seed);

  /// "disks: ..." and, if a start was refused, "first refused start: ...".
  void print(std::ostream& out) const;
  /// {"power_losses", "bits_flipped", "starts_cutting_a_torn_tail",
  /// "starts_healing_a_damaged_log", "starts_refused", "storage_failures"}.
  nlohmann::json to_json() const;
};

} // namespace conclave::sim
