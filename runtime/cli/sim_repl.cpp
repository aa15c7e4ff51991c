#include "runtime/cli/sim_repl.hpp"

#include "runtime/cli/command.hpp"
#include "runtime/sim/ordered_runs.hpp"
#include "runtime/sim/repl_report.hpp"

#include <iostream>
#include <sstream>
#include <string_view>

namespace conclave::cli {

namespace {

constexpr const char* repl_flags[] = {
    "--replicas", "--clients",          "--weak-share",  "--fsync-us",    "--disk",
    "--unsafe",   "--checkpoint-every", "--batch-bytes", "--window-bytes"};

/// Bounds of --batch-bytes and --window-bytes (besides 0, the default).
constexpr uint64_t max_flow_bytes = 64u << 20;

} // namespace

void add_sim_repl_flags(CLI::App* sub, sim_repl_options& o) {
  option(sub, "--replicas", o.replicas, "replication workload: replicas (nodes)")
      ->capture_default_str();
  option(sub, "--clients", o.clients,
         "replication workload: clients, each writing its own key")
      ->capture_default_str();
  option(sub, "--weak-share", o.weak_share,
         "replication workload: share of writes sent weak (0..1)")
      ->capture_default_str();
  option(sub, "--fsync-us", o.fsync_us,
         "replication workload: virtual time a disk sync takes, in microseconds")
      ->capture_default_str();
  option(sub, "--disk", o.disk,
         "replication, lease and jobs workloads: files (each node's data directory on "
         "a simulated disk, opened by the node's own storage code at every start; "
         "takes power losses and bit flips) or memory (records in memory)")
      ->capture_default_str();
  option(sub, "--checkpoint-every", o.checkpoint_every,
         "replication workload: replicas checkpoint every this many records "
         "(0: never)")
      ->capture_default_str();
  option(sub, "--batch-bytes", o.batch_bytes,
         "replication workload: most bytes of records in one append from a primary "
         "(0: the node's default)")
      ->capture_default_str();
  option(sub, "--window-bytes", o.window_bytes,
         "replication workload: most bytes a primary has in flight to one secondary "
         "before it waits for acknowledgements (0: the node's default)")
      ->capture_default_str();
  option(sub, "--unsafe", o.unsafe,
         "none, or a broken fixture the checkers must catch: replication workload "
         "skip-sync, lying-disk, bad-install, reads-without-lease, ignore-window or "
         "amnesia-unmarked (with --disk files); lease workload "
         "lease-no-drift; jobs workload supervisor-ignores-fence; election workload "
         "silence-proof (with --guard --death-proof: a pause is taken for a death)")
      ->capture_default_str();
}

bool sim_repl_flags_given(const CLI::App* sub, bool except_unsafe) {
  for (auto f : repl_flags)
    if (sub->count(f) > 0 && !(except_unsafe && std::string_view{f} == "--unsafe"))
      return true;
  return false;
}

int run_sim_repl(const sim_repl_options& o, size_t runs, uint64_t seed,
                 const std::string& faults, bool json, unsigned threads) {
  if (o.replicas < 1 || o.replicas > 9)
    return bad_input("--replicas: expected 1 to 9, got " + std::to_string(o.replicas));
  if (o.clients < 1 || o.clients > 64)
    return bad_input("--clients: expected 1 to 64, got " + std::to_string(o.clients));
  if (!(o.weak_share >= 0 && o.weak_share <= 1))
    return bad_input("--weak-share: expected 0 to 1");
  if (o.fsync_us < 1 || o.fsync_us > 1000000)
    return bad_input("--fsync-us: expected 1 to 1000000, got "
                     + std::to_string(o.fsync_us));
  if (o.unsafe != "none" && o.unsafe != "skip-sync" && o.unsafe != "lying-disk"
      && o.unsafe != "bad-install" && o.unsafe != "reads-without-lease"
      && o.unsafe != "ignore-window" && o.unsafe != "amnesia-unmarked")
    return bad_input("--unsafe: expected none, skip-sync, lying-disk, bad-install, "
                     "reads-without-lease, ignore-window or amnesia-unmarked, got '"
                     + o.unsafe + "'");
  if (o.batch_bytes > max_flow_bytes)
    return bad_input("--batch-bytes: expected 0 (the default) to "
                     + std::to_string(max_flow_bytes) + ", got "
                     + std::to_string(o.batch_bytes));
  if (o.window_bytes > max_flow_bytes)
    return bad_input("--window-bytes: expected 0 (the default) to "
                     + std::to_string(max_flow_bytes) + ", got "
                     + std::to_string(o.window_bytes));
  auto disk = sim::parse_disk_kind(o.disk);
  if (!disk)
    return bad_input("--disk: expected files or memory, got '" + o.disk + "'");
  if (o.unsafe == "amnesia-unmarked" && *disk != sim::disk_kind::files)
    return bad_input("--unsafe amnesia-unmarked needs --disk files");
  if (o.unsafe == "bad-install" && o.checkpoint_every == 0)
    return bad_input("--unsafe bad-install needs --checkpoint-every N (N > 0)");
  if (runs < 1)
    return bad_input("--runs: must be at least 1");
  auto plan = sim::parse_fault_spec(faults, sim::workload::replication);
  if (!plan)
    return bad_input("--faults: " + plan.error());
  if (auto v = sim::validate_repl(plan.value(), o.replicas, *disk); !v)
    return bad_input("--faults: " + v.error());
  sim::complete_partitions(plan.value(), o.replicas);
  sim::repl_settings s;
  s.replicas = o.replicas;
  s.clients = o.clients;
  s.plan = std::move(plan.value());
  if (s.plan.drift) // drift= of the fault spec: the nodes' clocks
    s.clock_rate_error = *s.plan.drift;
  s.weak_share = o.weak_share;
  s.fsync = std::chrono::microseconds{o.fsync_us};
  s.disk = *disk;
  s.skip_sync = o.unsafe == "skip-sync";
  s.lying_disk = o.unsafe == "lying-disk";
  s.bad_install = o.unsafe == "bad-install";
  s.reads_without_lease = o.unsafe == "reads-without-lease";
  s.amnesia_unmarked = o.unsafe == "amnesia-unmarked";
  s.checkpoint_every = o.checkpoint_every;
  s.batch_bytes = o.batch_bytes;
  s.window_bytes = o.window_bytes;
  s.ignore_window = o.unsafe == "ignore-window";
  std::ostringstream weak;
  weak << o.weak_share;
  auto prefix = "conclave sim --workload replication --replicas "
                + std::to_string(o.replicas) + " --clients " + std::to_string(o.clients)
                + " --weak-share " + weak.str() + " --fsync-us "
                + std::to_string(o.fsync_us) + " --disk " + o.disk;
  if (o.checkpoint_every != 0)
    prefix += " --checkpoint-every " + std::to_string(o.checkpoint_every);
  if (o.batch_bytes != 0)
    prefix += " --batch-bytes " + std::to_string(o.batch_bytes);
  if (o.window_bytes != 0)
    prefix += " --window-bytes " + std::to_string(o.window_bytes);
  if (o.unsafe != "none")
    prefix += " --unsafe " + o.unsafe;
  if (!faults.empty())
    prefix += " --faults " + shell_quote(faults);
  sim::repl_summary summary{prefix};
  sim::add_runs(
      summary, s, [](auto& x) -> uint64_t& { return x.seed; }, seed, runs, threads,
      sim::run_repl_simulation);
  if (json) {
    std::cout << summary.to_json(seed, faults) << '\n';
  } else {
    std::cout << "conclave sim --workload replication: " << runs << " run(s), seeds "
              << seed << ".." << seed + runs - 1 << ", faults '" << faults << "', "
              << o.replicas << " replicas, " << o.clients << " clients, disk " << o.disk
              << (o.unsafe == "none" ? "" : ", UNSAFE " + o.unsafe) << "\n";
    summary.print(std::cout);
  }
  if (summary.safety_violated())
    return exit_safety_violation;
  if (summary.liveness_failed())
    return exit_failure;
  return exit_ok;
}

} // namespace conclave::cli
