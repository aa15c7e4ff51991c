// Simulator speed: delivered messages per second of wall time (one core), and the
// wall time of one 1,000-candidate Bully election with the lowest id initiating
// (the O(n^2) worst case, ~0.5M messages), and of the path `conclave sim
// --algorithm bully --nodes 1000 --runs 1` takes (a full run with every checker
// and the report: every candidate starts an election at once, ~1M messages).
// Fixed 1 ms delay, no loss, so figures compare across changes. Prints; asserts
// nothing. Median of --reps runs.
//
//   sim_bench [--reps 3] [--quick]
#include "runtime/sim/report.hpp"
#include "runtime/sim/simulation.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace sim = conclave::sim;
namespace el = conclave::election;
using namespace std::chrono_literals;

namespace {

struct figure {
  double wall_s;
  double cpu_s = 0;
  uint64_t delivered;
  uint64_t events;
  size_t elections;
};

/// CPU time of this process: on a shared machine, wall time measures the
/// neighbours as much as the simulator.
double cpu_now() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

figure timed(const sim::sim_settings& s) {
  auto c0 = cpu_now();
  auto t0 = std::chrono::steady_clock::now();
  auto r = sim::run_simulation(s);
  auto t1 = std::chrono::steady_clock::now();
  return {std::chrono::duration<double>(t1 - t0).count(), cpu_now() - c0,
          r.messages_delivered, r.events, r.elections.size()};
}

void print(const char* what, size_t n, const figure& f) {
  std::printf("%-36s n=%-5zu %8.3f s wall %8.3f s cpu %10llu msgs %6.2f M msgs/s wall "
              "%6.2f M msgs/s cpu\n",
              what, n, f.wall_s, f.cpu_s, static_cast<unsigned long long>(f.delivered),
              static_cast<double>(f.delivered) / f.wall_s / 1e6,
              static_cast<double>(f.delivered) / f.cpu_s / 1e6);
}

figure median(std::vector<figure> v) {
  std::sort(v.begin(), v.end(),
            [](const figure& a, const figure& b) { return a.wall_s < b.wall_s; });
  return v[v.size() / 2];
}

void worst_case(size_t n, el::algorithm algo, int reps) {
  sim::sim_settings s;
  s.config.algo = algo;
  s.config.answer_timeout = 60s; // count messages, not timeouts
  s.config.coordinator_timeout = 120s;
  s.config.hop_timeout = 60s;
  s.nodes = n;
  s.plan = sim::parse_fault_spec("elect@1ms:1").value();
  s.quiet_start = true;
  s.stop_at_first_agreement = true;
  std::vector<figure> fs;
  for (int i = 0; i < reps; ++i)
    fs.push_back(timed(s));
  auto f = median(fs);
  print(algo == el::algorithm::bully ? "bully election, lowest initiates"
                                     : "ring election",
        n, f);
}

/// What `conclave sim --algorithm bully --nodes N --runs 1` does: one full run
/// (start-up election of everyone at once, heartbeats until the end, every
/// checker), then the summary.
void cli_path(size_t n, int reps) {
  std::vector<figure> fs;
  for (int i = 0; i < reps; ++i) {
    sim::sim_settings s;
    s.nodes = n;
    auto c0 = cpu_now();
    auto t0 = std::chrono::steady_clock::now();
    auto r = sim::run_simulation(s);
    sim::sim_summary summary;
    summary.add(r, "conclave sim");
    auto t1 = std::chrono::steady_clock::now();
    fs.push_back({std::chrono::duration<double>(t1 - t0).count(), cpu_now() - c0,
                  r.messages_delivered, r.events, r.elections.size()});
  }
  print("conclave sim path (bully, full run)", n, median(fs));
}

void steady_state(size_t n, const char* spec, sim::duration horizon, int runs) {
  double wall = 0, cpu = 0;
  uint64_t delivered = 0, events = 0;
  for (int i = 0; i < runs; ++i) {
    sim::sim_settings s;
    s.nodes = n;
    s.plan = sim::parse_fault_spec(spec).value();
    s.plan.horizon = horizon;
    s.seed = static_cast<uint64_t>(i + 1);
    auto f = timed(s);
    wall += f.wall_s;
    cpu += f.cpu_s;
    delivered += f.delivered;
    events += f.events;
  }
  figure f{wall, cpu, delivered, events, 0};
  print(spec, n, f);
  std::printf("%-36s (%d runs, %.2f M events/s cpu)\n", "", runs,
              static_cast<double>(events) / cpu / 1e6);
}

} // namespace

int main(int argc, char** argv) {
  int reps = 3;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--quick"))
      quick = true, reps = 1;
    else {
      std::fprintf(stderr, "usage: sim_bench [--reps R] [--quick]\n");
      return 2;
    }
  }
  std::printf("simulated messages per second of wall time (one thread, 1 ms delay)\n");
  if (quick) {
    worst_case(100, el::algorithm::bully, 1);
    cli_path(100, 1);
    steady_state(5, "random=5", 2s, 20);
    return 0;
  }
  worst_case(1000, el::algorithm::bully, reps);
  worst_case(1000, el::algorithm::ring, reps);
  cli_path(1000, reps);
  steady_state(100, "crash-leader@1s,restart-leader@2s", 2s, 3);
  steady_state(5, "random=5,delay=1ms", 2s, 500);
  return 0;
}
