// How soon a leader's task stops once the node has lost its lease, read
// from the node's own log, across processes on loopback.
//
//   leader_cancel_bench [--rounds R] [--nodes N] [--conclave BIN]
//                       [--program BIN] [--keep DIR] [--quick]
//
// Starts `conclave cluster up --program examples/embedded_node` (TLS, quorum
// guard: the defaults) in a temporary directory. The example's leader task
// logs "leading in term T" every second and "stopped leading in term T" as
// soon as lead.wait_for() sees the cancellation. Each round:
//   1. finds the leader L, notes where its log ends;
//   2. SIGSTOPs L (conclave cluster kill) and waits until the other nodes
//      have elected another leader that acts (L's lease has ended by then:
//      the followers wait lease + drift before they elect);
//   3. SIGCONTs L and waits for two lines of L's log after the mark:
//        "stopped acting as leader of term T"  the node learns it lost the
//                                              lease (its election core)
//        "stopped leading in term T"           the task has seen the
//                                              cancellation and returns
//   4. reports the time between the two lines' timestamps (the log's own,
//      UTC with microseconds), and waits until all nodes agree on a leader.
// Prints each round, then the median and the max. Brings the cluster down
// however the run ends (processes stopped by `conclave cluster down`, which
// sends SIGCONT to stopped nodes first). Figures only; never asserts on time.
#include "runtime/cluster/cluster.hpp"
#include "runtime/node/node_log.hpp"
#include "tests/bench/support/stats.hpp"
#include "tests/support/process_tools.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
namespace cl = conclave::cluster;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

struct options {
  std::string conclave = CONCLAVE_BIN;
  std::string program = EMBEDDED_NODE_BIN;
  int rounds = 10;
  int nodes = 3;
  std::string keep; ///< copy the nodes' logs here at the end
};

std::string dir_of_run;
std::string conclave_of_run;

void bring_down() {
  if (dir_of_run.empty())
    return;
  conclave::testing::run_command(conclave_of_run + " cluster down --dir '" + dir_of_run
                                 + "' >/dev/null 2>&1");
  std::error_code ec;
  fs::remove_all(dir_of_run, ec);
  dir_of_run.clear();
}

void on_signal(int) {
  bring_down();
  std::_Exit(130);
}

std::string sh(const std::string& cmd) {
  return conclave::testing::run_command(cmd + " 2>&1").out;
}

/// The lines of `path` after byte `from`.
std::vector<std::string> lines_after(const fs::path& path, std::streamoff from) {
  std::ifstream f{path};
  f.seekg(from);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(f, line))
    out.push_back(line);
  return out;
}

std::streamoff size_of(const fs::path& path) {
  std::error_code ec;
  auto n = fs::file_size(path, ec);
  return ec ? 0 : static_cast<std::streamoff>(n);
}

/// The node all live nodes agree leads and acts, if they do (0: none).
uint64_t agreed_leader(const std::string& dir, uint64_t not_this = 0) {
  uint64_t leader = 0;
  bool acting = false;
  for (auto& v : cl::read_views(dir)) {
    if (!v.alive || v.stopped || v.id == not_this)
      continue;
    if (!v.reported || v.leader == 0 || (leader != 0 && v.leader != leader))
      return 0;
    leader = v.leader;
    if (v.id == leader)
      acting = v.is_leader && v.acting;
  }
  return acting && leader != not_this ? leader : 0;
}

uint64_t wait_for_leader(const std::string& dir, std::chrono::milliseconds within,
                         uint64_t not_this = 0) {
  for (auto until = steady::now() + within; steady::now() < until;) {
    if (auto l = agreed_leader(dir, not_this))
      return l;
    std::this_thread::sleep_for(5ms);
  }
  return 0;
}

struct round_result {
  bool ok = false;
  double ms = 0;           ///< lease lost -> task stopped, from the log
  double stopped_ms = 0;   ///< how long the node was stopped
  std::string lost_line;   ///< for the report
  std::string what_failed; ///< when !ok
};

round_result one_round(const options& o, const std::string& dir, uint64_t leader) {
  round_result r;
  auto log = fs::path(dir) / ("node-" + std::to_string(leader)) / "node.log";
  auto mark = size_of(log);
  auto kill = [&](const char* sig) {
    return sh(o.conclave + " cluster kill --dir '" + dir + "' --node "
              + std::to_string(leader) + " --signal " + sig);
  };
  auto t_stop = steady::now();
  kill("STOP");
  auto next = wait_for_leader(dir, 10s, leader);
  // The new leader acts only after the old lease surely ended; a little more
  // so that the stopped node's timers are well past due when it resumes.
  std::this_thread::sleep_for(100ms);
  kill("CONT");
  r.stopped_ms =
      std::chrono::duration<double, std::milli>(steady::now() - t_stop).count();
  if (next == 0) {
    r.what_failed = "no other leader within 10 s of SIGSTOP";
    return r;
  }
  const std::string lost = "stopped acting as leader of term ";
  const std::string done = "stopped leading in term ";
  std::optional<int64_t> t_lost, t_done;
  for (auto until = steady::now() + 10s; steady::now() < until;) {
    for (auto& line : lines_after(log, mark)) {
      if (!t_lost && line.find(lost) != std::string::npos) {
        t_lost = conclave::node::log_line_time_us(line);
        r.lost_line = line;
      }
      if (!t_done && line.find(done) != std::string::npos)
        t_done = conclave::node::log_line_time_us(line);
    }
    if (t_lost && t_done)
      break;
    std::this_thread::sleep_for(20ms);
  }
  if (!t_lost || !t_done) {
    r.what_failed = std::string{"no '"} + (t_lost ? done : lost) + "' line within 10 s";
    return r;
  }
  r.ok = true;
  r.ms = static_cast<double>(*t_done - *t_lost) / 1000.0;
  return r;
}

int usage(const std::string& why) {
  std::fprintf(stderr,
               "leader_cancel_bench: %s\nusage: leader_cancel_bench [--rounds R] "
               "[--nodes N] [--conclave BIN] [--program BIN] [--keep DIR] [--quick]\n",
               why.c_str());
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--quick")
      o.rounds = 1;
    else if (a == "--rounds" && (v = value()))
      o.rounds = std::atoi(v);
    else if (a == "--nodes" && (v = value()))
      o.nodes = std::atoi(v);
    else if (a == "--conclave" && (v = value()))
      o.conclave = v;
    else if (a == "--program" && (v = value()))
      o.program = v;
    else if (a == "--keep" && (v = value()))
      o.keep = v;
    else
      return usage("unknown or incomplete flag '" + a + "'");
  }
  if (o.rounds < 1 || o.nodes < 3)
    return usage("--rounds must be at least 1 and --nodes at least 3");
  for (auto& bin : {o.conclave, o.program})
    if (!fs::exists(bin))
      return usage("no such program: " + bin);

  char tmpl[] = "/tmp/conclave-leader-cancel.XXXXXX";
  if (!::mkdtemp(tmpl)) {
    std::perror("mkdtemp");
    return 1;
  }
  dir_of_run = tmpl;
  conclave_of_run = o.conclave;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::printf("machine: %u cores; cluster of %d (%s) in %s\n",
              std::thread::hardware_concurrency(), o.nodes, o.program.c_str(),
              dir_of_run.c_str());
  auto up = conclave::testing::run_command(
      o.conclave + " cluster up --nodes " + std::to_string(o.nodes) + " --dir '"
      + dir_of_run + "' --program '" + o.program + "' 2>&1");
  if (up.status != 0) {
    std::fprintf(stderr, "cluster up failed:\n%s", up.out.c_str());
    bring_down();
    return 1;
  }
  std::vector<double> ms;
  int failed = 0;
  for (int round = 1; round <= o.rounds; ++round) {
    auto leader = wait_for_leader(dir_of_run, 15s);
    if (leader == 0) {
      std::printf("round %d: the nodes agree on no leader within 15 s\n", round);
      ++failed;
      continue;
    }
    auto r = one_round(o, dir_of_run, leader);
    if (!r.ok) {
      std::printf("round %d: leader %llu: %s\n", round,
                  static_cast<unsigned long long>(leader), r.what_failed.c_str());
      ++failed;
      continue;
    }
    ms.push_back(r.ms);
    std::printf("round %2d: leader %llu stopped %.0f ms; lease lost -> task stopped "
                "%.2f ms\n",
                round, static_cast<unsigned long long>(leader), r.stopped_ms, r.ms);
  }
  if (!o.keep.empty()) {
    std::error_code ec;
    fs::create_directories(o.keep, ec);
    for (int n = 1; n <= o.nodes; ++n) {
      auto from = fs::path(dir_of_run) / ("node-" + std::to_string(n)) / "node.log";
      fs::copy_file(from, fs::path(o.keep) / ("node-" + std::to_string(n) + ".log"),
                    fs::copy_options::overwrite_existing, ec);
    }
  }
  bring_down();
  if (ms.empty()) {
    std::printf("no round finished (%d failed)\n", failed);
    return 1;
  }
  auto sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  std::printf("lease lost -> leader task stopped (node's own log), %zu rounds%s: "
              "median %.2f ms, max %.2f ms\n",
              ms.size(), failed ? " (some failed)" : "", conclave::bench::median(ms),
              sorted.back());
  return failed ? 1 : 0;
}
