#include "runtime/sim/disk_counts.hpp"

#include "runtime/sim/run_verdicts.hpp"

#include <nlohmann/json.hpp>

namespace conclave::sim {

void disk_counts::opened(const world_node_disk::life& l) {
  heals += l.moved_damaged_aside ? 1 : 0;
  tails_cut += l.cut_torn_tail ? 1 : 0;
}

void disk_counts::refused(election::node_id id, const std::string& why) {
  if (refused_starts++ == 0)
    first_refusal = "node " + std::to_string(id.value) + ": " + why;
}

void disk_counts::failed(election::node_id id, const std::string& what) {
  if (storage_failures++ == 0)
    first_storage_failure = "node " + std::to_string(id.value) + ": " + what;
}

void disk_counts::add(const disk_counts& run, uint64_t seed) {
  power_losses += run.power_losses;
  bitflips += run.bitflips;
  heals += run.heals;
  tails_cut += run.tails_cut;
  refused_starts += run.refused_starts;
  if (first_refusal.empty() && !run.first_refusal.empty())
    first_refusal = "seed " + std::to_string(seed) + ": " + run.first_refusal;
  storage_failures += run.storage_failures;
  if (first_storage_failure.empty() && !run.first_storage_failure.empty())
    first_storage_failure =
        "seed " + std::to_string(seed) + ": " + run.first_storage_failure;
}

void disk_counts::print(std::ostream& out) const {
  out << "disks: " << power_losses << " power loss(es) during a sync, "
      << plural(bitflips, "bit") << " flipped; starts: " << tails_cut
      << " cut a torn tail, " << heals
      << " moved a damaged log aside and rebuilt it from the peers, " << refused_starts
      << " refused (the node stays down)\n";
  if (!first_refusal.empty())
    out << "first refused start: " << first_refusal << "\n";
  if (storage_failures > 0)
    out << "storage failures without a disk fault (must be 0): " << storage_failures
        << ", first: " << first_storage_failure << "\n";
}

nlohmann::json disk_counts::to_json() const {
  return {{"power_losses", power_losses},
          {"bits_flipped", bitflips},
          {"starts_cutting_a_torn_tail", tails_cut},
          {"starts_healing_a_damaged_log", heals},
          {"starts_refused", refused_starts},
          {"storage_failures", storage_failures}};
}

} // namespace conclave::sim
