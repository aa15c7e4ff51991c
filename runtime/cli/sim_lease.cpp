#include "runtime/cli/sim_lease.hpp"

#include "runtime/cli/command.hpp"
#include "runtime/sim/lease_report.hpp"
#include "runtime/sim/ordered_runs.hpp"

#include <iostream>
#include <optional>
#include <sstream>

namespace conclave::cli {

namespace {

constexpr const char* lease_flags[] = {"--ttl",           "--limit",
                                       "--lease-drift",   "--lock-delay",
                                       "--client-pauses", "--pause-clients"};

/// "300ms-900ms:2,1s-1500ms:1" -> pauses (clients 1-based in the text).
std::optional<std::vector<sim::lease_settings::client_pause>>
parse_pauses(const std::string& text, size_t clients, std::string& error) {
  std::vector<sim::lease_settings::client_pause> out;
  std::stringstream ss{text};
  std::string part;
  while (std::getline(ss, part, ',')) {
    auto colon = part.find(':');
    auto dash = part.find('-');
    if (colon == std::string::npos || dash == std::string::npos || dash > colon) {
      error = "expected T1-T2:K, got '" + part + "'";
      return std::nullopt;
    }
    auto a = sim::parse_duration(std::string_view{part}.substr(0, dash));
    auto b =
        sim::parse_duration(std::string_view{part}.substr(dash + 1, colon - dash - 1));
    if (!a || !b || b.value() <= a.value()) {
      error = "expected T1-T2:K with T1 < T2, got '" + part + "'";
      return std::nullopt;
    }
    size_t k = 0;
    try {
      size_t used = 0;
      k = std::stoul(part.substr(colon + 1), &used);
      if (used != part.size() - colon - 1)
        k = 0;
    } catch (...) {
      k = 0;
    }
    if (k < 1 || k > clients) {
      error = "client in '" + part + "' must be 1 to " + std::to_string(clients);
      return std::nullopt;
    }
    out.push_back({k - 1, a.value(), b.value()});
  }
  return out;
}

} // namespace

void add_sim_lease_flags(CLI::App* sub, sim_lease_options& o) {
  option(sub, "--ttl", o.ttl_ms,
         "lease workload: the clients' lease ttl, in milliseconds")
      ->capture_default_str();
  option(sub, "--limit", o.limit,
         "lease workload: slots of a semaphore the clients use besides the mutex "
         "(1: the mutex only)")
      ->capture_default_str();
  option(sub, "--lease-drift", o.drift,
         "lease workload: the bound on every clock's rate error that the hosts' lease "
         "expiry allows for; the clocks (nodes' and clients') drift by drift= of "
         "--faults, by default by this bound")
      ->capture_default_str();
  option(sub, "--lock-delay", o.lock_delay_ms,
         "lease workload: extra wait before an expired slot is freed, in milliseconds")
      ->capture_default_str();
  option(sub, "--client-pauses", o.client_pauses,
         "lease workload: random pauses (frozen client, clock running) per client, "
         "at most")
      ->capture_default_str();
  option(sub, "--pause-clients", o.pause_clients,
         "lease workload: pauses besides the random ones, e.g. 300ms-900ms:2,1s-2s:1 "
         "(client 2 frozen from 300 ms to 900 ms, ...)");
}

bool sim_lease_flags_given(const CLI::App* sub) {
  for (auto f : lease_flags)
    if (sub->count(f) > 0)
      return true;
  return false;
}

int run_sim_lease(const sim_lease_options& o, const sim_repl_options& repl, size_t runs,
                  uint64_t seed, const std::string& faults, bool json, unsigned threads) {
  if (repl.replicas < 1 || repl.replicas > 9)
    return bad_input("--replicas: expected 1 to 9, got " + std::to_string(repl.replicas));
  if (repl.clients < 1 || repl.clients > 64)
    return bad_input("--clients: expected 1 to 64, got " + std::to_string(repl.clients));
  if (repl.fsync_us < 1 || repl.fsync_us > 1000000)
    return bad_input("--fsync-us: expected 1 to 1000000, got "
                     + std::to_string(repl.fsync_us));
  if (repl.unsafe != "none" && repl.unsafe != "lease-no-drift")
    return bad_input("--unsafe: --workload lease expects none or lease-no-drift, got '"
                     + repl.unsafe + "'");
  if (o.ttl_ms < 10 || o.ttl_ms > 60000)
    return bad_input("--ttl: expected 10 to 60000 (ms), got " + std::to_string(o.ttl_ms));
  if (o.limit < 1 || o.limit > 64)
    return bad_input("--limit: expected 1 to 64, got " + std::to_string(o.limit));
  if (!(o.drift >= 0 && o.drift < 0.5))
    return bad_input("--lease-drift: expected 0 <= drift < 0.5");
  if (o.lock_delay_ms > 60000)
    return bad_input("--lock-delay: expected 0 to 60000 (ms)");
  if (o.client_pauses > 100)
    return bad_input("--client-pauses: expected 0 to 100");
  std::string pause_error;
  auto pauses = parse_pauses(o.pause_clients, repl.clients, pause_error);
  if (!pauses)
    return bad_input("--pause-clients: " + pause_error);
  if (runs < 1)
    return bad_input("--runs: must be at least 1");
  auto plan = sim::parse_fault_spec(faults, sim::workload::lease);
  if (!plan)
    return bad_input("--faults: " + plan.error());
  auto disk = sim::parse_disk_kind(repl.disk);
  if (!disk)
    return bad_input("--disk: expected files or memory, got '" + repl.disk + "'");
  if (auto v = sim::validate_repl(plan.value(), repl.replicas, *disk); !v)
    return bad_input("--faults: " + v.error());
  sim::complete_partitions(plan.value(), repl.replicas);
  sim::lease_settings s;
  s.base.replicas = repl.replicas;
  s.base.clients = repl.clients;
  s.base.plan = std::move(plan.value());
  s.base.fsync = std::chrono::microseconds{repl.fsync_us};
  s.base.disk = *disk;
  s.base.checkpoint_every = repl.checkpoint_every;
  s.ttl = std::chrono::milliseconds{o.ttl_ms};
  s.limit = o.limit;
  s.drift = o.drift;
  s.lock_delay = std::chrono::milliseconds{o.lock_delay_ms};
  s.client_pauses = o.client_pauses;
  s.planned_pauses = std::move(*pauses);
  s.unsafe_no_drift = repl.unsafe == "lease-no-drift";
  std::ostringstream drift;
  drift << o.drift;
  auto prefix = "conclave sim --workload lease --replicas "
                + std::to_string(repl.replicas) + " --clients "
                + std::to_string(repl.clients) + " --fsync-us "
                + std::to_string(repl.fsync_us) + " --disk " + repl.disk + " --ttl "
                + std::to_string(o.ttl_ms) + " --limit " + std::to_string(o.limit)
                + " --lease-drift " + drift.str() + " --lock-delay "
                + std::to_string(o.lock_delay_ms) + " --client-pauses "
                + std::to_string(o.client_pauses);
  if (repl.checkpoint_every != 0)
    prefix += " --checkpoint-every " + std::to_string(repl.checkpoint_every);
  if (!o.pause_clients.empty())
    prefix += " --pause-clients " + shell_quote(o.pause_clients);
  if (repl.unsafe != "none")
    prefix += " --unsafe " + repl.unsafe;
  if (!faults.empty())
    prefix += " --faults " + shell_quote(faults);
  sim::lease_summary summary{prefix, o.limit};
  sim::add_runs(
      summary, s, [](auto& x) -> uint64_t& { return x.base.seed; }, seed, runs, threads,
      sim::run_lease_simulation);
  if (json) {
    std::cout << summary.to_json(seed, faults) << '\n';
  } else {
    std::cout << "conclave sim --workload lease: " << runs << " run(s), seeds " << seed
              << ".." << seed + runs - 1 << ", faults '" << faults << "', "
              << repl.replicas << " replicas, " << repl.clients << " clients, ttl "
              << o.ttl_ms << " ms, drift " << drift.str()
              << (s.base.plan.drift ? " allowed, clocks' drift from --faults" : "")
              << ", lock delay " << o.lock_delay_ms << " ms"
              << (repl.unsafe == "none" ? "" : ", UNSAFE " + repl.unsafe) << "\n";
    summary.print(std::cout);
  }
  if (summary.safety_violated())
    return exit_safety_violation;
  if (summary.liveness_failed())
    return exit_failure;
  return exit_ok;
}

} // namespace conclave::cli
