// conclave sim: deterministic simulation runs of the election algorithms, of
// workflow jobs with --workload jobs (sim_jobs.cpp), or of replica hosts with
// --workload replication (sim_repl.cpp), or of leases on replica hosts with
// --workload lease (sim_lease.cpp). See docs/design/simulation.md.
#include "runtime/cli/commands.hpp"
#include "runtime/cli/sim_jobs.hpp"
#include "runtime/cli/sim_lease.hpp"
#include "runtime/cli/sim_repl.hpp"

#include "runtime/sim/ordered_runs.hpp"
#include "runtime/sim/report.hpp"
#include "runtime/sim/simulation.hpp"

#include <iostream>
#include <memory>
#include <sstream>
#include <unistd.h>

namespace conclave::cli {

namespace {

namespace el = conclave::election;

struct sim_options {
  std::string workload = "election";
  sim_jobs_options jobs;
  sim_repl_options repl;
  sim_lease_options lease;
  std::string algorithm = "all";
  std::string nodes = "5";
  size_t runs = 1;
  uint64_t seed = 1;
  /// Runs at once (0: one per core); the output does not depend on it.
  unsigned threads = 0;
  std::string faults;
  bool json = false;
  bool trace = false;
  bool trace_heartbeats = false;
  std::string out;
  bool guard = false;
  bool preempt = false;
  bool no_pre_vote = false;
  bool death_proof = false;
  std::string detector = "fixed";
  /// 0: the library default (docs/design/election.md, "Options").
  unsigned heartbeat_ms = 0;
  unsigned detector_timeout_ms = 0;
  unsigned lease_ms = 0;
  unsigned lease_max_ms = 0;
};

/// "5" or "4,8,16" → sizes.
std::optional<std::vector<size_t>> parse_sizes(const std::string& text) {
  std::vector<size_t> sizes;
  std::stringstream ss{text};
  std::string part;
  while (std::getline(ss, part, ',')) {
    try {
      size_t used = 0;
      auto v = std::stoul(part, &used);
      if (used != part.size() || v < 1 || v > 10000)
        return std::nullopt;
      sizes.push_back(v);
    } catch (...) {
      return std::nullopt;
    }
  }
  if (sizes.empty())
    return std::nullopt;
  return sizes;
}

class progress_bar {
public:
  explicit progress_bar(size_t total) : total_(total), on_(total >= 50 && ::isatty(2)) {}
  void step() {
    if (!on_)
      return;
    ++done_;
    auto pct = done_ * 100 / total_;
    if (pct == last_ && done_ != total_)
      return;
    last_ = pct;
    std::string bar(pct / 4, '#');
    bar.resize(25, '.');
    std::cerr << "\r[" << bar << "] " << pct << "% (" << done_ << '/' << total_
              << " runs)" << std::flush;
    if (done_ == total_)
      std::cerr << '\n';
  }

private:
  size_t total_;
  bool on_;
  size_t done_ = 0;
  size_t last_ = 101;
};

/// The flags only the election workload reads.
constexpr const char* election_flags[] = {"--algorithm", "--nodes",           "--out",
                                          "--detector",  "--guard",           "--preempt",
                                          "--trace",     "--trace-heartbeats"};

/// Most runs at once --threads takes: far beyond any core count, low enough
/// that a typo cannot ask the system for a million threads.
constexpr unsigned max_sim_threads = 256;

int run_sim(const sim_options& o, const CLI::App* sub) {
  if (o.threads > max_sim_threads)
    return bad_input("--threads: at most " + std::to_string(max_sim_threads)
                     + " runs at once (0: one per core), got "
                     + std::to_string(o.threads));
  if (o.workload == "lease") {
    for (auto f : election_flags)
      if (f != std::string_view{"--algorithm"} && sub->count(f) > 0)
        return bad_input(std::string{f} + ": belongs to --workload election, not lease");
    if (sub->count("--algorithm") > 0 || sim_jobs_flags_given(sub))
      return bad_input("--workload lease runs Bully with the quorum guard; "
                       "--algorithm and the jobs flags do not apply");
    for (auto f : {"--weak-share", "--batch-bytes", "--window-bytes"})
      if (sub->count(f) > 0)
        return bad_input(std::string{f}
                         + ": belongs to --workload replication, not lease");
    return run_sim_lease(o.lease, o.repl, o.runs, o.seed, o.faults, o.json, o.threads);
  }
  if (sim_lease_flags_given(sub))
    return bad_input("--ttl, --limit, --lease-drift, --lock-delay, --client-pauses and "
                     "--pause-clients belong to --workload lease");
  if (o.workload == "replication") {
    for (auto f : election_flags)
      if (f != std::string_view{"--algorithm"} && sub->count(f) > 0)
        return bad_input(std::string{f}
                         + ": belongs to --workload election, not replication");
    if (sub->count("--algorithm") > 0 || sim_jobs_flags_given(sub))
      return bad_input("--workload replication runs Bully with the quorum guard; "
                       "--algorithm and the jobs flags do not apply");
    return run_sim_repl(o.repl, o.runs, o.seed, o.faults, o.json, o.threads);
  }
  if (o.workload == "jobs") {
    for (auto f : election_flags)
      if (sub->count(f) > 0)
        return bad_input(std::string{f} + ": belongs to --workload election, not jobs");
    for (auto f : {"--replicas", "--clients", "--weak-share", "--fsync-us",
                   "--checkpoint-every", "--batch-bytes", "--window-bytes"})
      if (sub->count(f) > 0)
        return bad_input(std::string{f}
                         + ": belongs to --workload replication, not jobs");
    auto disk = sub->count("--disk") > 0 ? o.repl.disk : sim_jobs_default_disk;
    return run_sim_jobs(o.jobs, o.repl.unsafe, disk, o.runs, o.seed, o.faults, o.json,
                        o.threads);
  }
  if (sim_repl_flags_given(sub, o.workload == "election"))
    return bad_input(
        "--replicas, --clients, --weak-share, --fsync-us, --disk, --checkpoint-every, "
        "--batch-bytes, --window-bytes and --unsafe belong to --workload replication "
        "(--disk and --unsafe also to lease and jobs)");
  if (o.workload != "election")
    return bad_input("--workload: expected election, jobs, replication or lease, got '"
                     + o.workload + "'");
  bool silence_proof = o.repl.unsafe == "silence-proof";
  if (o.repl.unsafe != "none" && !silence_proof)
    return bad_input("--unsafe: the election workload takes none or silence-proof, got '"
                     + o.repl.unsafe + "'");
  if (o.death_proof && !o.guard)
    return bad_input("--death-proof: proofs of death shorten the quorum guard's wait; "
                     "add --guard");
  if (silence_proof && !o.death_proof)
    return bad_input("--unsafe silence-proof: needs --guard --death-proof");
  if (sim_jobs_flags_given(sub))
    return bad_input("--jobs, --steps, --schedulers, --agents, --supervisors and "
                     "--service belong to --workload jobs");
  std::vector<el::algorithm> algos;
  if (o.algorithm == "all") {
    algos = {el::algorithm::bully, el::algorithm::ring};
  } else if (o.algorithm == "lease") {
    // Leading by lease is leases on the replicated store: its workload runs
    // the replica hosts, the lease clients and their checkers.
    return bad_input("--algorithm lease: run --workload lease (candidates racing for a "
                     "lease of the replicated store, with its safety and liveness "
                     "checkers)");
  } else if (auto a = el::parse_algorithm(o.algorithm)) {
    algos = {a.value()};
  } else {
    return bad_input("--algorithm: " + a.error() + " or all");
  }
  auto sizes = parse_sizes(o.nodes);
  if (!sizes)
    return bad_input(
        "--nodes: expected a group size from 1 to 10000, or a list like 4,8,16; got '"
        + o.nodes + "'");
  if (o.runs < 1)
    return bad_input("--runs: must be at least 1");
  bool trace = o.trace || o.trace_heartbeats;
  if (trace && (o.runs != 1 || algos.size() != 1 || sizes->size() != 1))
    return bad_input("--trace: traces one run; give --runs 1, one --algorithm and one "
                     "size in --nodes");
  if (trace && o.json)
    return bad_input("--trace prints on stdout; it does not mix with --json");
  auto plan = sim::parse_fault_spec(o.faults, sim::workload::election);
  if (!plan)
    return bad_input("--faults: " + plan.error());
  for (auto n : *sizes)
    if (auto v = sim::validate(plan.value(), n); !v)
      return bad_input("--faults: " + v.error());
  el::election_config base;
  if (o.detector == "phi")
    base.detector.kind = el::detector_kind::phi;
  else if (o.detector != "fixed")
    return bad_input("--detector: expected fixed or phi, got '" + o.detector + "'");
  base.preempt = o.preempt;
  base.guard.enabled = o.guard;
  base.guard.death_proof = o.death_proof;
  base.pre_vote = !o.no_pre_vote;
  using std::chrono::milliseconds;
  if (o.heartbeat_ms != 0)
    base.heartbeat_interval = milliseconds{o.heartbeat_ms};
  if (o.detector_timeout_ms != 0)
    base.detector.timeout = milliseconds{o.detector_timeout_ms};
  if (o.lease_ms != 0)
    base.guard.lease = milliseconds{o.lease_ms};
  if (o.lease_max_ms != 0)
    base.guard.lease_max = milliseconds{o.lease_max_ms};
  if (auto v = el::validate(base); !v)
    return bad_input(v.error());

  sim::sim_summary summary;
  sim::run_report timeline_run;
  progress_bar bar{algos.size() * sizes->size() * o.runs};
  for (auto algo : algos) {
    std::string prefix = "conclave sim --algorithm " + std::string{el::to_string(algo)};
    if (!o.faults.empty())
      prefix += " --faults " + shell_quote(o.faults);
    if (o.guard)
      prefix += " --guard";
    if (o.preempt)
      prefix += " --preempt";
    if (o.no_pre_vote)
      prefix += " --no-pre-vote";
    if (o.death_proof)
      prefix += " --death-proof";
    if (silence_proof)
      prefix += " --unsafe silence-proof";
    if (o.detector != "fixed")
      prefix += " --detector " + o.detector;
    for (auto [flag, v] : {std::pair{" --heartbeat-ms ", o.heartbeat_ms},
                           std::pair{" --detector-timeout-ms ", o.detector_timeout_ms},
                           std::pair{" --lease-ms ", o.lease_ms},
                           std::pair{" --lease-max-ms ", o.lease_max_ms}})
      if (v != 0)
        prefix += flag + std::to_string(v);
    for (auto n : *sizes) {
      // A trace prints while its run goes on, and which run records the
      // timeline depends on the runs before it: both run one at a time.
      auto threads = trace || !o.out.empty() ? 1u : sim::run_threads(o.threads, o.runs);
      sim::run_in_order(
          o.runs, threads,
          [&](size_t k) {
            sim::sim_settings s;
            s.config = base;
            s.config.algo = algo;
            s.nodes = n;
            s.plan = plan.value();
            sim::complete_partitions(s.plan, n);
            s.seed = o.seed + k;
            s.unsafe_silence_proofs = silence_proof;
            s.record_timeline = !o.out.empty() && timeline_run.timeline.empty() && k == 0;
            if (trace) {
              s.trace = &std::cout;
              s.trace_heartbeats = o.trace_heartbeats;
            }
            return std::pair{sim::run_simulation(s), s.record_timeline};
          },
          [&](std::pair<sim::run_report, bool> r) {
            summary.add(r.first, prefix);
            if (r.second)
              timeline_run = std::move(r.first);
            bar.step();
          });
    }
  }
  if (o.json) {
    std::cout << summary.to_json(o.seed, o.runs, o.faults, o.guard) << '\n';
  } else {
    std::cout << "conclave sim: " << o.runs << " run(s) per algorithm and size, seeds "
              << o.seed << ".." << o.seed + o.runs - 1 << ", faults '" << o.faults << "'"
              << (o.guard ? ", quorum guard on" : "")
              << (o.guard && o.no_pre_vote ? ", pre-vote off" : "")
              << (o.death_proof ? ", proofs of death" : "")
              << (silence_proof ? ", UNSAFE silence-proof" : "") << "\n";
    summary.print_table(std::cout);
  }
  if (!o.out.empty()) {
    if (auto w = summary.write_outputs(o.out, timeline_run, o.faults); !w) {
      std::cerr << "conclave: error: " << w.error() << '\n';
      return exit_failure;
    }
    if (!o.json)
      std::cout << "wrote CSV and SVG plots to " << o.out << '\n';
  }
  if (summary.safety_violated())
    return exit_safety_violation;
  if (summary.liveness_failed())
    return exit_failure;
  return exit_ok;
}

} // namespace

void add_sim_command(command_registry& reg) {
  auto o = std::make_shared<sim_options>();
  auto app = std::make_shared<CLI::App*>(nullptr);
  auto* sub = reg.add("sim",
                      "Run deterministic simulations of the election algorithms, "
                      "of workflow jobs or of the replicated store",
                      [o, app] { return run_sim(*o, *app); });
  *app = sub;
  option(sub, "--workload", o->workload,
         "election (candidates), jobs (schedulers, agents, supervisors), "
         "replication (replica hosts) or lease (lease clients on replica hosts)")
      ->capture_default_str();
  add_sim_jobs_flags(sub, o->jobs);
  add_sim_repl_flags(sub, o->repl);
  add_sim_lease_flags(sub, o->lease);
  option(sub, "--algorithm", o->algorithm, "bully, ring or all")->capture_default_str();
  option(sub, "--nodes", o->nodes, "candidates per run, or a list like 4,8,16")
      ->capture_default_str();
  option(sub, "--runs", o->runs, "runs per algorithm and size")->capture_default_str();
  option(sub, "--seed", o->seed, "seed of the first run; run k uses seed+k")
      ->capture_default_str();
  option(sub, "--threads", o->threads,
         "runs simulated at once (0: one per core); reports are added up in seed "
         "order, so the output is the same for any value (--trace and --out: one)")
      ->capture_default_str();
  option(sub, "--faults", o->faults,
         "fault spec, e.g. crash-leader@1s,partition@2s-4s:1-3|4-5,loss=0.01,"
         "delay=1ms..5ms (docs/concepts/simulation.md)");
  option(sub, "--out", o->out, "directory for CSV files and SVG plots");
  option(sub, "--detector", o->detector, "fixed or phi")->capture_default_str();
  option(sub, "--heartbeat-ms", o->heartbeat_ms,
         "leader heartbeat interval (0: the library default, 50)");
  option(sub, "--detector-timeout-ms", o->detector_timeout_ms,
         "silence before the leader is suspected (0: the library default, 150)");
  option(sub, "--lease-ms", o->lease_ms,
         "quorum guard lease (0: the library default, 100)");
  option(sub, "--lease-max-ms", o->lease_max_ms,
         "quorum guard: longest lease asked as round trips grow (0: the library "
         "default, 500; at most --lease-ms: a fixed lease)");
  sub->add_flag("--trace", o->trace,
                "print every election message of one run (delivered, lost, blocked), "
                "every notice, candidate event and fault, heartbeats excepted");
  sub->add_flag("--trace-heartbeats", o->trace_heartbeats,
                "--trace with heartbeats and their acks");
  sub->add_flag("--json", o->json, "print one JSON document on stdout")
      ->envname(env_name("--json"));
  sub->add_flag("--guard", o->guard, "enable the quorum guard (leadership as a lease)")
      ->envname(env_name("--guard"));
  sub->add_flag("--preempt", o->preempt,
                "classic Bully: a higher id takes over on rejoin")
      ->envname(env_name("--preempt"));
  sub->add_flag("--death-proof", o->death_proof,
                "with --guard: a crash delivers a proof of death to the peers, which "
                "then stop waiting out the dead leader's lease")
      ->envname(env_name("--death-proof"));
  sub->add_flag("--no-pre-vote", o->no_pre_vote,
                "with --guard: elect without asking a pre-vote first (for comparison)")
      ->envname(env_name("--no-pre-vote"));
}

} // namespace conclave::cli
