// `conclave sim --workload replication`: the flags of the replication workload
// and its run (runtime/sim/repl_simulation.hpp; docs/design/simulation.md,
// "Replication workload"). sim_command.cpp owns the command and the flags all
// workloads share.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace conclave::cli {

struct sim_repl_options {
  size_t replicas = 3;
  size_t clients = 4;
  double weak_share = 0.25;
  unsigned fsync_us = 2000;
  /// Replica hosts checkpoint every this many records (0: never).
  uint64_t checkpoint_every = 0;
  /// Most bytes in one append and in flight to one secondary (0: the
  /// node's defaults).
  uint64_t batch_bytes = 0;
  uint64_t window_bytes = 0;
  /// "none", or a broken fixture the checkers must catch: "skip-sync" (new
  /// primaries serve without a sync phase), "lying-disk" (syncs reported
  /// durable before they are) or "bad-install" (a streamed checkpoint is
  /// installed without its state). The election workload takes
  /// "silence-proof" (a pause delivers a proof of death, as a crash does).
  std::string unsafe = "none";
  /// "files" (the node's storage code on a simulated data directory) or
  /// "memory".
  std::string disk = "files";
};

/// Adds --replicas, --clients, --weak-share, --fsync-us, --disk,
/// --checkpoint-every, --batch-bytes, --window-bytes and --unsafe to `sub`.
void add_sim_repl_flags(CLI::App* sub, sim_repl_options& o);

/// True if any of those flags was given (they belong to the replication
/// workload; --unsafe is left out with `except_unsafe`: the election workload
/// has one of its own).
bool sim_repl_flags_given(const CLI::App* sub, bool except_unsafe = false);

/// Runs `runs` runs from `seed`, up to `threads` at once (0: one per core;
/// sim/ordered_runs.hpp), and prints the summary; the exit status.
int run_sim_repl(const sim_repl_options& o, size_t runs, uint64_t seed,
                 const std::string& faults, bool json, unsigned threads);

} // namespace conclave::cli
