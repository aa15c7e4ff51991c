#include "runtime/cli/sim_jobs.hpp"

#include "runtime/cli/command.hpp"
#include "runtime/sim/jobs_report.hpp"
#include "runtime/sim/ordered_runs.hpp"

#include <iostream>

namespace conclave::cli {

namespace {

constexpr const char* jobs_flags[] = {"--jobs",   "--steps",       "--schedulers",
                                      "--agents", "--supervisors", "--service"};

} // namespace

void add_sim_jobs_flags(CLI::App* sub, sim_jobs_options& o) {
  option(sub, "--jobs", o.jobs, "jobs workload: jobs per run")->capture_default_str();
  option(sub, "--steps", o.steps, "jobs workload: steps per job")->capture_default_str();
  option(sub, "--schedulers", o.schedulers, "jobs workload: scheduler instances")
      ->capture_default_str();
  option(sub, "--agents", o.agents, "jobs workload: agents")->capture_default_str();
  option(sub, "--supervisors", o.supervisors,
         "jobs workload: supervisors (each with an election candidate)")
      ->capture_default_str();
  option(sub, "--service", o.service,
         "jobs workload: idempotent, or non-idempotent (applies every call; the "
         "effect checker must then fail)")
      ->capture_default_str();
}

bool sim_jobs_flags_given(const CLI::App* sub) {
  for (auto f : jobs_flags)
    if (sub->count(f) > 0)
      return true;
  return false;
}

int run_sim_jobs(const sim_jobs_options& o, const std::string& unsafe,
                 const std::string& disk, size_t runs, uint64_t seed,
                 const std::string& faults, bool json, unsigned threads) {
  auto in_range = [](size_t v, size_t lo, size_t hi) { return v >= lo && v <= hi; };
  if (!in_range(o.jobs, 1, 1000))
    return bad_input("--jobs: expected 1 to 1000, got " + std::to_string(o.jobs));
  if (!in_range(o.steps, 1, 64))
    return bad_input("--steps: expected 1 to 64, got " + std::to_string(o.steps));
  if (!in_range(o.schedulers, 1, 16))
    return bad_input("--schedulers: expected 1 to 16, got "
                     + std::to_string(o.schedulers));
  if (!in_range(o.agents, 1, 64))
    return bad_input("--agents: expected 1 to 64, got " + std::to_string(o.agents));
  if (!in_range(o.supervisors, 1, 16))
    return bad_input("--supervisors: expected 1 to 16, got "
                     + std::to_string(o.supervisors));
  if (o.service != "idempotent" && o.service != "non-idempotent")
    return bad_input("--service: expected idempotent or non-idempotent, got '" + o.service
                     + "'");
  if (unsafe != "none" && unsafe != "supervisor-ignores-fence")
    return bad_input(
        "--unsafe: --workload jobs expects none or supervisor-ignores-fence, "
        "got '"
        + unsafe + "'");
  auto kind = sim::parse_disk_kind(disk);
  if (!kind)
    return bad_input("--disk: expected files or memory, got '" + disk + "'");
  if (runs < 1)
    return bad_input("--runs: must be at least 1");
  auto plan = sim::parse_fault_spec(faults, sim::workload::jobs);
  if (!plan)
    return bad_input("--faults: " + plan.error());
  sim::jobs_settings s;
  s.shape = {o.jobs, o.steps, o.schedulers, o.agents, o.supervisors};
  s.disk = *kind;
  if (auto v = sim::validate(plan.value(), s.shape, s.disk); !v)
    return bad_input("--faults: " + v.error());
  sim::complete_partitions(plan.value(), sim::jobs_nodes(s.shape));
  s.plan = std::move(plan.value());
  s.idempotent_service = o.service == "idempotent";
  s.unsafe_ignore_fence = unsafe == "supervisor-ignores-fence";
  auto prefix = "conclave sim --workload jobs --jobs " + std::to_string(o.jobs)
                + " --steps " + std::to_string(o.steps) + " --schedulers "
                + std::to_string(o.schedulers) + " --agents " + std::to_string(o.agents)
                + " --supervisors " + std::to_string(o.supervisors) + " --disk " + disk;
  if (!s.idempotent_service)
    prefix += " --service " + o.service;
  if (unsafe != "none")
    prefix += " --unsafe " + unsafe;
  if (!faults.empty())
    prefix += " --faults " + shell_quote(faults);
  sim::jobs_summary summary{prefix};
  sim::add_runs(
      summary, s, [](auto& x) -> uint64_t& { return x.seed; }, seed, runs, threads,
      sim::run_jobs_simulation);
  if (json) {
    std::cout << summary.to_json(seed, faults) << '\n';
  } else {
    std::cout << "conclave sim --workload jobs: " << runs << " run(s), seeds " << seed
              << ".." << seed + runs - 1 << ", faults '" << faults << "', " << o.jobs
              << " jobs of " << o.steps << " steps, " << o.schedulers << " schedulers, "
              << o.agents << " agents, " << o.supervisors << " supervisors, disk " << disk
              << (s.idempotent_service ? "" : ", non-idempotent service")
              << (unsafe == "none" ? "" : ", UNSAFE " + unsafe) << "\n";
    summary.print(std::cout);
  }
  if (summary.safety_violated())
    return exit_safety_violation;
  if (summary.liveness_failed())
    return exit_failure;
  return exit_ok;
}

} // namespace conclave::cli
