// `conclave sim --workload lease`: the flags of the lease workload and its
// run (runtime/sim/repl_simulation.hpp, "the lease workload";
// docs/design/simulation.md, "Lease workload"). It shares --replicas,
// --clients, --fsync-us, --checkpoint-every and --unsafe with the replication
// workload (sim_repl.hpp); sim_command.cpp owns the command.
#pragma once

#include "runtime/cli/sim_repl.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace conclave::cli {

struct sim_lease_options {
  unsigned ttl_ms = 300;
  uint32_t limit = 1;
  double drift = 0.01;
  unsigned lock_delay_ms = 0;
  size_t client_pauses = 2;
  /// "T1-T2:K,...": client K (1-based) is paused from T1 to T2.
  std::string pause_clients;
};

/// Adds --ttl, --limit, --lease-drift, --lock-delay, --client-pauses and
/// --pause-clients to `sub`.
void add_sim_lease_flags(CLI::App* sub, sim_lease_options& o);

/// True if any of those flags was given (they belong to the lease workload).
bool sim_lease_flags_given(const CLI::App* sub);

/// Runs `runs` runs from `seed`, up to `threads` at once (0: one per core;
/// sim/ordered_runs.hpp), and prints the summary; the exit status.
/// `repl` holds the shared flags; --weak-share is refused by the caller.
int run_sim_lease(const sim_lease_options& o, const sim_repl_options& repl, size_t runs,
                  uint64_t seed, const std::string& faults, bool json, unsigned threads);

} // namespace conclave::cli
