// `conclave sim --workload jobs`: the flags of the jobs workload and its run
// (runtime/sim/jobs_simulation.hpp; docs/design/simulation.md, "Jobs workload").
// sim_command.cpp owns the command and the flags both workloads share.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace conclave::cli {

struct sim_jobs_options {
  size_t jobs = 4;
  size_t steps = 3;
  size_t schedulers = 2;
  size_t agents = 3;
  size_t supervisors = 2;
  /// "idempotent" or "non-idempotent" (the test service then applies every
  /// call: a fixture that the one_effect_per_key checker must catch).
  std::string service = "idempotent";
};

/// Adds --jobs, --steps, --schedulers, --agents, --supervisors and --service
/// to `sub`.
void add_sim_jobs_flags(CLI::App* sub, sim_jobs_options& o);

/// True if any of those flags was given (they belong to the jobs workload).
bool sim_jobs_flags_given(const CLI::App* sub);

/// The jobs workload's disk when --disk is not given.
inline constexpr const char* sim_jobs_default_disk = "files";

/// Runs `runs` runs from `seed`, up to `threads` at once (0: one per core;
/// sim/ordered_runs.hpp), and prints the summary; the exit status.
/// `unsafe` is --unsafe: none, or supervisor-ignores-fence (the planted
/// defect of the checkers' meta-test); `disk` is --disk: files or memory.
int run_sim_jobs(const sim_jobs_options& o, const std::string& unsafe,
                 const std::string& disk, size_t runs, uint64_t seed,
                 const std::string& faults, bool json, unsigned threads);

} // namespace conclave::cli
