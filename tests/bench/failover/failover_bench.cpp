// Leader failover time of conclave against etcd (the anchor), on loopback.
//
// conclave: `conclave cluster up` with N nodes; each round signals the current
// leader through `conclave cluster kill --leader --wait --json`, which reports
// the time from the signal to the last live node adopting the new leader (the
// nodes stamp adoption in status.json, so polling granularity does not count),
// then restores the node (restart after SIGKILL, SIGCONT after SIGSTOP).
// etcd: a 3-member cluster (Debian's etcd-server) in a temporary directory, at
// etcd's default timing (heartbeat 100 ms, election 1000 ms) and tuned
// (10 ms / 100 ms); each round signals the leader and polls every member's
// /v3/maintenance/status every millisecond until the live ones name one new
// leader. Also reports each conclave node's resident memory when idle.
//
// With --idle-busy-s S it also runs an idle 5-node cluster for S seconds while
// one spinning process per core (at nice 19) keeps every core busy, and prints
// the false suspicions seen meanwhile: elections the nodes started because they
// suspected a leader that was alive all along, and leader changes (from each
// node's /metrics, before and after), what the detectors saw (suspicions,
// discounted, refuted), how late the nodes' timers fired and how far apart
// heartbeats left and arrived, the CPU time the host stole, and how long the
// nodes' threads waited for a CPU. --keep-logs DIR keeps the nodes' logs.
// With --kv-clients N the load is N closed loops of one-shot `conclave kv
// put` processes at nice 0 instead of the spinners (clients and nodes then
// share the cores), and it also prints the puts done and failed.
//
// With --chaos-s S it runs 5 nodes for S seconds of random faults (the leader
// killed or stopped, a follower killed or stopped meanwhile) and prints the
// failover times by signal with their p99 over the median (chaos_run).
//
// Prints figures (medians, ratios); never asserts on time. Processes it starts
// are tracked by pid and stopped by pid.
#include "tests/bench/support/etcd_process.hpp"
#include "tests/bench/support/stats.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/process_tools.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <netinet/in.h>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

struct options {
  std::string conclave = CONCLAVE_BIN;
  std::string etcd = "/usr/bin/etcd";
  int rounds = 10;
  int nodes = 3;
  bool skip_etcd = false;
  std::string up_args; ///< extra `cluster up` arguments (--insecure: no TLS)
  int idle_busy_s = 0; ///< > 0: the idle 5-node run under busy cores, this long
  bool skip_failover = false;
  std::string keep_logs; ///< copy the idle run's node logs here (for diagnosis)
  /// Burners in the bench's own session: with autogroups, as heavy as a node.
  bool burners_in_session = false;
  /// Run conclave twice, with proofs of death off (--no-death-proof) and on,
  /// and print both side by side (etcd skipped unless asked for).
  bool death_proof_ab = false;
  /// > 0: a chaos run of this many seconds on 5 nodes (see chaos_run).
  int chaos_s = 0;
  unsigned seed = 1;
  /// > 0: the idle run's load is this many closed-loop clients, each a loop
  /// of one-shot `conclave kv put` processes at nice 0, instead of spinners.
  int kv_clients = 0;
};

std::string run(const std::string& cmd) {
  return conclave::testing::run_command(cmd + " 2>/dev/null").out;
}

using conclave::bench::median;

/// The 99th percentile (nearest rank): the max below 100 samples.
double p99(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(v.size())));
  return v[std::max<size_t>(rank, 1) - 1];
}

std::string summary(const std::vector<double>& v) {
  if (v.empty())
    return "no successful round";
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << "median " << median(v) << " ms (min "
    << *std::min_element(v.begin(), v.end()) << ", p99 " << p99(v) << ", max "
    << *std::max_element(v.begin(), v.end()) << ", " << v.size() << " rounds)";
  return s.str();
}

using conclave::testing::free_port;

/// POST a small body to 127.0.0.1:port; the response body or "".
std::string http_post(uint16_t port, const std::string& path, const std::string& body,
                      std::chrono::milliseconds timeout) {
  return conclave::testing::http_exchange(
      "127.0.0.1", port,
      "POST " + path
          + " HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: "
            "application/json\r\nContent-Length: "
          + std::to_string(body.size()) + "\r\n\r\n" + body,
      timeout);
}

/// GET http://127.0.0.1:port/path; the response body or "".
std::string http_get(uint16_t port, const std::string& path,
                     std::chrono::milliseconds timeout) {
  return conclave::testing::http_exchange(
      "127.0.0.1", port, "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", timeout);
}

long rss_kb(int pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stol(line.substr(6));
  return -1;
}

// -- conclave ----------------------------------------------------------------

struct conclave_result {
  std::vector<double> kill_ms, stop_ms, kill_observed_ms, stop_observed_ms;
  std::vector<long> idle_rss_kb;
};

conclave_result bench_conclave(const options& o, const fs::path& dir) {
  conclave_result r;
  auto bin = o.conclave;
  auto d = " --dir " + dir.string();
  auto up = run(bin + " cluster up --json --nodes " + std::to_string(o.nodes) + d + " "
                + o.up_args);
  auto j = json::parse(up, nullptr, false);
  if (j.is_discarded()) {
    std::cerr << "conclave cluster up failed: " << up << '\n';
    return r;
  }
  std::this_thread::sleep_for(3s); // idle
  for (auto& n : j["nodes"])
    r.idle_rss_kb.push_back(rss_kb(n["pid"].get<int>()));
  for (auto sig : {"KILL", "STOP"}) {
    for (int i = 0; i < o.rounds; ++i) {
      auto out =
          run(bin + " cluster kill --json --wait --leader --timeout-ms 10000 --signal "
              + sig + d);
      auto k = json::parse(out, nullptr, false);
      if (k.is_discarded() || !k.value("leader_changed", false)) {
        std::cerr << "conclave round failed: " << out << '\n';
        continue;
      }
      auto victim = std::to_string(k["node"].get<uint64_t>());
      (std::string{sig} == "KILL" ? r.kill_ms : r.stop_ms)
          .push_back(k["failover_ms"].get<double>());
      (std::string{sig} == "KILL" ? r.kill_observed_ms : r.stop_observed_ms)
          .push_back(k["observed_ms"].get<double>());
      if (std::string{sig} == "KILL") {
        run(bin + " cluster restart --node " + victim + d);
      } else {
        std::this_thread::sleep_for(300ms);
        run(bin + " cluster kill --wait --signal CONT --node " + victim + d);
      }
      std::this_thread::sleep_for(1500ms); // settle: links back, heartbeats steady
    }
  }
  run(bin + " cluster down" + d);
  return r;
}

// -- idle cluster under busy cores ------------------------------------------------

/// Sum of the samples of `family` in a Prometheus text page whose labels
/// contain `label_match` (empty: all).
double sum_samples(const std::string& page, const std::string& family,
                   const std::string& label_match = {}) {
  double sum = 0;
  std::istringstream in{page};
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(family, 0) != 0)
      continue;
    auto rest = line.substr(family.size());
    if (rest.empty() || (rest[0] != '{' && rest[0] != ' '))
      continue; // another family sharing the prefix
    if (!label_match.empty() && rest.find(label_match) == std::string::npos)
      continue;
    auto sp = line.rfind(' ');
    sum += std::stod(line.substr(sp + 1));
  }
  return sum;
}

struct idle_counts {
  double suspected_elections = 0, leader_changes = 0, warnings = 0;
  /// What the detectors saw (conclave_suspicions*_total, docs/reference/metrics.md).
  double suspicions = 0, discounted = 0, refuted = 0;
  /// Timer firings and heartbeat gaps, in all and above 20 / 40 / 50 ms. 40
  /// ms is the fast profile's detector floor minus its heartbeat interval: a
  /// leader round that late is a silence its followers must flag.
  struct tail {
    double count = 0, over_20ms = 0, over_40ms = 0, over_50ms = 0;
  };
  tail leader_timer, follower_timer, gap_sent, gap_received;
  bool ok = false;
};

/// count, and how many above 20, 40 and 50 ms, of one labelled histogram series.
idle_counts::tail read_tail(const std::string& page, const std::string& family,
                            const std::string& label) {
  idle_counts::tail t;
  t.count = sum_samples(page, family + "_count", label);
  t.over_20ms = t.count - sum_samples(page, family + "_bucket", label + ",le=\"0.02\"");
  t.over_40ms = t.count - sum_samples(page, family + "_bucket", label + ",le=\"0.04\"");
  t.over_50ms = t.count - sum_samples(page, family + "_bucket", label + ",le=\"0.05\"");
  return t;
}

idle_counts read_idle_counts(const json& status) {
  idle_counts c;
  c.ok = true;
  auto add = [](idle_counts::tail& a, const idle_counts::tail& b) {
    a.count += b.count;
    a.over_20ms += b.over_20ms;
    a.over_40ms += b.over_40ms;
    a.over_50ms += b.over_50ms;
  };
  for (auto& n : status["nodes"]) {
    auto url = n.value("metrics_url", "");
    auto hostport = url.substr(7, url.find('/', 7) - 7);
    auto port =
        static_cast<uint16_t>(std::stoi(hostport.substr(hostport.rfind(':') + 1)));
    auto page = http_get(port, "/metrics", 2000ms);
    if (page.empty()) {
      c.ok = false;
      continue;
    }
    c.suspected_elections +=
        sum_samples(page, "conclave_elections_total", "reason=\"leader_suspected\"");
    c.leader_changes += sum_samples(page, "conclave_leader_changes_total");
    c.warnings += sum_samples(page, "conclave_round_trip_warnings_total");
    c.suspicions += sum_samples(page, "conclave_suspicions_total");
    c.discounted += sum_samples(page, "conclave_suspicions_discounted_total");
    c.refuted += sum_samples(page, "conclave_suspicions_refuted_total");
    add(c.leader_timer,
        read_tail(page, "conclave_timer_lateness_seconds", "role=\"leader\""));
    add(c.follower_timer,
        read_tail(page, "conclave_timer_lateness_seconds", "role=\"follower\""));
    add(c.gap_sent,
        read_tail(page, "conclave_heartbeat_gap_seconds", "direction=\"sent\""));
    add(c.gap_received,
        read_tail(page, "conclave_heartbeat_gap_seconds", "direction=\"received\""));
  }
  return c;
}

/// CPU time stolen from this (virtual) machine by its host so far, in seconds
/// (/proc/stat, all CPUs).
double steal_seconds() {
  std::ifstream in{"/proc/stat"};
  std::string cpu;
  double v[8] = {};
  in >> cpu >> v[0] >> v[1] >> v[2] >> v[3] >> v[4] >> v[5] >> v[6] >> v[7];
  return v[7] / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

/// Time the threads of process `pid` spent runnable but waiting for a CPU, in
/// seconds (/proc/PID/task/*/schedstat, second field); -1 if unreadable.
double run_delay_seconds(int pid) {
  std::error_code ec;
  double sum = 0;
  bool any = false;
  for (auto& t : fs::directory_iterator{"/proc/" + std::to_string(pid) + "/task", ec}) {
    std::ifstream in{t.path() / "schedstat"};
    double on_cpu = 0, waiting = 0;
    if (in >> on_cpu >> waiting) {
      sum += waiting / 1e9;
      any = true;
    }
  }
  return any ? sum : -1;
}

/// Spins on one core at nice 19 until killed. On a kernel that groups
/// processes by session for scheduling (sched_autogroup_enabled, as here), a
/// process's nice value only ranks it against its own session: the nodes run
/// in sessions of their own (`cluster up` uses setsid), so a burner at nice 19
/// in the bench's session weighs as much as a node at nice 0. Unless
/// `in_session`, the burner therefore starts a session of its own and sets
/// that session's group to nice 19 too (/proc/self/autogroup), which is what
/// nice 19 means on a kernel without autogroups. Returns its pid.
pid_t spawn_burner(bool in_session) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!in_session && ::setsid() >= 0)
      std::ofstream{"/proc/self/autogroup"} << "19";
    ::setpriority(PRIO_PROCESS, 0, 19);
    volatile uint64_t x = 0;
    for (;;)
      x = x + 1;
  }
  return pid;
}

/// A closed loop of one-shot `kv put` processes (key `load-I`) against the
/// cluster in `dir`, at nice 0 in the bench's session, until SIGTERM; it then
/// writes "OK FAILED" (operations that exited 0 and that did not) to `out`.
pid_t spawn_kv_client(const std::string& bin, const fs::path& dir, int i,
                      const fs::path& out) {
  auto script =
      "ok=0; bad=0; trap 'echo $ok $bad > " + out.string()
      + "; exit 0' TERM; while :; do if " + bin + " kv --timeout-ms 5000 --dir "
      + dir.string() + " put load-" + std::to_string(i)
      + " v$ok >/dev/null 2>&1; then ok=$((ok+1)); else bad=$((bad+1)); fi; done";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/bash", "bash", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

/// Whether this kernel groups processes by session for scheduling.
bool autogroups_enabled() {
  std::ifstream in{"/proc/sys/kernel/sched_autogroup_enabled"};
  int on = 0;
  return (in >> on) && on != 0;
}

/// The wall clock as node logs print it (UTC, to the millisecond), so that a
/// slow round can be found in the logs kept with --keep-logs.
std::string wall_now() {
  auto now = std::chrono::system_clock::now();
  auto t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch())
                .count()
            % 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms));
  return buf;
}

/// Copies each node's log under `dir` to --keep-logs DIR (if given), named
/// after the node's directory.
void keep_node_logs(const options& o, const fs::path& dir) {
  if (o.keep_logs.empty())
    return;
  std::error_code ec;
  fs::create_directories(o.keep_logs, ec);
  for (auto& e : fs::directory_iterator{dir, ec})
    if (fs::exists(e.path() / "node.log"))
      fs::copy_file(e.path() / "node.log",
                    fs::path{o.keep_logs} / (e.path().filename().string() + ".log"),
                    fs::copy_options::overwrite_existing, ec);
}

void idle_busy_run(const options& o, const fs::path& dir) {
  auto bin = o.conclave;
  auto d = " --dir " + dir.string();
  auto up = run(bin + " cluster up --json --nodes 5" + d + " " + o.up_args);
  if (json::parse(up, nullptr, false).is_discarded()) {
    std::cerr << "conclave cluster up failed: " << up << '\n';
    return;
  }
  std::this_thread::sleep_for(3s); // settle
  auto status = [&] {
    return json::parse(run(bin + " cluster status --json" + d), nullptr, false);
  };
  auto s0 = status();
  auto before = read_idle_counts(s0);
  auto delays = [&] {
    std::vector<double> v;
    for (auto& n : s0["nodes"])
      v.push_back(run_delay_seconds(n.value("pid", 0)));
    return v;
  };
  auto delay0 = delays();
  auto steal0 = steal_seconds();
  std::vector<pid_t> burners;
  std::vector<pid_t> clients;
  auto cores = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 0; i < o.kv_clients; ++i)
    clients.push_back(
        spawn_kv_client(bin, dir, i, dir / ("client-" + std::to_string(i))));
  for (unsigned i = 0; i < cores && o.kv_clients == 0; ++i)
    burners.push_back(spawn_burner(o.burners_in_session));
  std::this_thread::sleep_for(std::chrono::seconds(o.idle_busy_s));
  auto s1 = status();
  auto after = read_idle_counts(s1);
  auto delay1 = delays();
  auto steal1 = steal_seconds();
  for (auto pid : burners) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  // A client ends after its current operation (bash runs the trap then).
  uint64_t ops_ok = 0, ops_failed = 0;
  for (size_t i = 0; i < clients.size(); ++i) {
    ::kill(clients[i], SIGTERM);
    ::waitpid(clients[i], nullptr, 0);
    std::ifstream in{dir / ("client-" + std::to_string(i))};
    uint64_t ok = 0, bad = 0;
    if (in >> ok >> bad) {
      ops_ok += ok;
      ops_failed += bad;
    }
  }
  run(bin + " cluster down" + d);
  keep_node_logs(o, dir);
  if (!before.ok || !after.ok) {
    std::cerr << "idle run: could not read every node's metrics\n";
    return;
  }
  std::cout << std::fixed << std::setprecision(0) << "5-node cluster, " << o.idle_busy_s
            << " s, ";
  if (o.kv_clients > 0)
    std::cout << o.kv_clients
              << " closed-loop clients of one-shot `kv put` processes at nice 0 ("
              << ops_ok << " puts done, " << ops_failed << " failed, "
              << static_cast<double>(ops_ok) / std::max(1, o.idle_busy_s) << "/s)";
  else
    std::cout << cores << " spinning process(es) at nice 19 ("
              << (!autogroups_enabled()  ? "no autogroups"
                  : o.burners_in_session ? "in the bench's session: with autogroups, "
                                           "each session weighs as much as a node"
                                         : "own session, autogroup nice 19")
              << ")";
  std::cout << ": false suspicions (elections "
               "started on a suspected leader) "
            << after.suspected_elections - before.suspected_elections
            << ", leader changes " << after.leader_changes - before.leader_changes
            << ", round-trip warnings " << after.warnings - before.warnings << ", term "
            << s0.value("term", json(nullptr)).dump() << " -> "
            << s1.value("term", json(nullptr)).dump() << '\n';
  std::cout << "  detectors: suspected the leader "
            << after.suspicions - before.suspicions
            << " time(s), discounted (own timer late) "
            << after.discounted - before.discounted << ", refuted (leader alive) "
            << after.refuted - before.refuted << '\n';
  auto tail = [](const char* what, const idle_counts::tail& a,
                 const idle_counts::tail& b) {
    std::cout << "  " << what << ": " << a.count - b.count << ", over 20 ms "
              << a.over_20ms - b.over_20ms << ", over 40 ms " << a.over_40ms - b.over_40ms
              << ", over 50 ms " << a.over_50ms - b.over_50ms << '\n';
  };
  tail("leader timer firings", after.leader_timer, before.leader_timer);
  tail("follower timer firings", after.follower_timer, before.follower_timer);
  tail("heartbeat rounds sent (gap)", after.gap_sent, before.gap_sent);
  tail("heartbeats received (gap)", after.gap_received, before.gap_received);
  std::cout << std::setprecision(2) << "  CPU stolen by the host: " << steal1 - steal0
            << " s; nodes' threads waiting for a CPU (s):";
  for (size_t i = 0; i < delay0.size() && i < delay1.size(); ++i)
    std::cout << ' ' << delay1[i] - delay0[i];
  std::cout << '\n';
}

// -- etcd ----------------------------------------------------------------------

struct etcd_member {
  std::string name;
  uint16_t client = 0, peer = 0;
  pid_t pid = -1;
  bool stopped = false;
};

struct etcd_cluster {
  fs::path dir;
  std::string bin;
  int heartbeat_ms = 100, election_ms = 1000;
  std::vector<etcd_member> members;

  void start(etcd_member& m) {
    std::string initial;
    for (auto& x : members)
      initial += (initial.empty() ? "" : ",") + x.name
                 + "=http://127.0.0.1:" + std::to_string(x.peer);
    auto client = "http://127.0.0.1:" + std::to_string(m.client);
    auto peer = "http://127.0.0.1:" + std::to_string(m.peer);
    std::vector<std::string> args{bin,
                                  "--name=" + m.name,
                                  "--data-dir=" + (dir / m.name).string(),
                                  "--listen-client-urls=" + client,
                                  "--advertise-client-urls=" + client,
                                  "--listen-peer-urls=" + peer,
                                  "--initial-advertise-peer-urls=" + peer,
                                  "--initial-cluster=" + initial,
                                  "--initial-cluster-state=new",
                                  "--initial-cluster-token=conclave-bench",
                                  "--heartbeat-interval=" + std::to_string(heartbeat_ms),
                                  "--election-timeout=" + std::to_string(election_ms),
                                  "--log-level=error"};
    auto log = (dir / (m.name + ".log")).string();
    m.pid = conclave::bench::spawn_logged(std::move(args), log);
    m.stopped = false;
  }

  /// (member id, leader id) as the member reports it, if it answers.
  std::optional<std::pair<uint64_t, uint64_t>> status(const etcd_member& m) {
    auto body = http_post(m.client, "/v3/maintenance/status", "{}", 200ms);
    auto j = json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.contains("header"))
      return std::nullopt;
    auto id = std::stoull(j["header"].value("member_id", "0"));
    auto leader = std::stoull(j.value("leader", "0"));
    return std::make_pair(id, leader);
  }

  /// The leader all members in `live` name, if they agree.
  std::optional<uint64_t> agreed(const std::vector<etcd_member*>& live) {
    std::optional<uint64_t> leader;
    for (auto* m : live) {
      auto s = status(*m);
      if (!s || s->second == 0 || (leader && *leader != s->second))
        return std::nullopt;
      leader = s->second;
    }
    return leader;
  }

  std::vector<etcd_member*> live() {
    std::vector<etcd_member*> v;
    for (auto& m : members)
      if (m.pid > 0 && !m.stopped)
        v.push_back(&m);
    return v;
  }

  void stop_all() {
    for (auto& m : members) {
      if (m.pid <= 0)
        continue;
      ::kill(m.pid, SIGCONT);
      ::kill(m.pid, SIGTERM);
    }
    for (auto& m : members) {
      if (m.pid <= 0)
        continue;
      for (int i = 0; i < 300 && ::waitpid(m.pid, nullptr, WNOHANG) != m.pid; ++i)
        std::this_thread::sleep_for(10ms);
      if (::waitpid(m.pid, nullptr, WNOHANG) == 0) {
        ::kill(m.pid, SIGKILL);
        ::waitpid(m.pid, nullptr, 0);
      }
      m.pid = -1;
    }
  }
};

struct etcd_result {
  std::vector<double> kill_ms, stop_ms;
};

etcd_result bench_etcd(const options& o, const fs::path& dir, int hb, int el) {
  etcd_result r;
  etcd_cluster c;
  c.dir = dir;
  c.bin = o.etcd;
  c.heartbeat_ms = hb;
  c.election_ms = el;
  fs::create_directories(dir);
  for (int i = 1; i <= 3; ++i)
    c.members.push_back({"m" + std::to_string(i), free_port(), free_port()});
  for (auto& m : c.members)
    c.start(m);
  auto wait_agreed = [&](std::chrono::milliseconds limit) -> std::optional<uint64_t> {
    auto deadline = clock_type::now() + limit;
    while (clock_type::now() < deadline) {
      if (auto l = c.agreed(c.live()))
        return l;
      std::this_thread::sleep_for(5ms);
    }
    return std::nullopt;
  };
  if (!wait_agreed(30s)) {
    std::cerr << "etcd did not elect a leader (logs in " << dir << ")\n";
    c.stop_all();
    return r;
  }
  for (auto sig : {SIGKILL, SIGSTOP}) {
    for (int i = 0; i < o.rounds; ++i) {
      auto leader = wait_agreed(30s);
      if (!leader)
        break;
      etcd_member* victim = nullptr;
      for (auto& m : c.members)
        if (auto s = c.status(m); s && s->first == *leader)
          victim = &m;
      if (!victim)
        continue;
      auto t0 = clock_type::now();
      ::kill(victim->pid, sig);
      victim->stopped = true;
      auto others = c.live();
      std::optional<double> ms;
      while (clock_type::now() - t0 < 30s) {
        if (auto l = c.agreed(others); l && *l != *leader) {
          ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
          break;
        }
        std::this_thread::sleep_for(1ms);
      }
      if (ms)
        (sig == SIGKILL ? r.kill_ms : r.stop_ms).push_back(*ms);
      if (sig == SIGKILL) {
        ::waitpid(victim->pid, nullptr, 0);
        c.start(*victim);
      } else {
        ::kill(victim->pid, SIGCONT);
        victim->stopped = false;
      }
      wait_agreed(30s);
      std::this_thread::sleep_for(std::chrono::milliseconds(3 * el)); // settle
    }
  }
  c.stop_all();
  return r;
}

} // namespace

// -- chaos: leaders and followers killed and stopped at random ---------------

/// For `o.chaos_s` seconds on 5 nodes: every 0.3-1.5 s one fault, chosen at
/// random: the leader killed (-9) or stopped (SIGSTOP for 0.2-1 s), timed by
/// `cluster kill --wait --leader` like the rounds above; or a follower killed
/// or stopped and left so until after the next fault (the cluster then fails
/// over with 4 of 5 alive). Killed nodes are restarted, stopped ones resumed.
/// Prints the failover times by signal: median, p90, p99, max, and p99 over
/// the median.
void chaos_run(const options& o, const fs::path& dir) {
  auto bin = o.conclave;
  auto d = " --dir " + dir.string();
  auto up = run(bin + " cluster up --json --nodes 5" + d + " " + o.up_args);
  auto j = json::parse(up, nullptr, false);
  if (j.is_discarded()) {
    std::cerr << "conclave cluster up failed: " << up << '\n';
    return;
  }
  std::mt19937 rng{o.seed};
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>{lo, hi}(rng);
  };
  std::vector<double> kill_ms, stop_ms;
  int failed = 0, follower_faults = 0;
  std::string held_follower, held_signal; // a follower left killed or stopped
  auto last_restart = clock_type::now();
  auto restore = [&](const std::string& node, const std::string& sig) {
    if (sig == "KILL") {
      run(bin + " cluster restart --timeout-ms 10000 --node " + node + d);
      last_restart = clock_type::now();
    } else {
      run(bin + " cluster kill --wait --signal CONT --node " + node + d);
    }
  };
  auto end = clock_type::now() + std::chrono::seconds{o.chaos_s};
  while (clock_type::now() < end) {
    int what = pick(0, 9);
    if (what < 8) { // the leader: kill or stop
      std::string sig = what < 4 ? "KILL" : "STOP";
      auto at = wall_now();
      auto out = conclave::testing::run_command(
                     bin + " cluster kill --json --wait --leader --timeout-ms 10000 "
                     + "--signal " + sig + d + " 2>" + (dir / "kill.err").string())
                     .out;
      auto k = json::parse(out, nullptr, false);
      if (k.is_discarded() || !k.value("leader_changed", false)) {
        ++failed;
        std::ifstream err{dir / "kill.err"};
        std::string why{std::istreambuf_iterator<char>{err}, {}};
        std::cout << "chaos: round failed at " << at << " (" << sig << " of the leader"
                  << (held_follower.empty()
                          ? ""
                          : ", follower " + held_follower + " held by SIG" + held_signal)
                  << "): " << out << why;
      } else {
        auto ms = k["failover_ms"].get<double>();
        (sig == "KILL" ? kill_ms : stop_ms).push_back(ms);
        auto victim = std::to_string(k["node"].get<uint64_t>());
        auto since_restart =
            std::chrono::duration<double, std::milli>(clock_type::now() - last_restart)
                .count();
        if (ms > (sig == "KILL" ? 15.0 : 110.0))
          std::cout << "chaos: slow " << sig << " of leader " << victim << " at " << at
                    << ": " << ms << " ms"
                    << (held_follower.empty() ? ""
                                              : ", follower " + held_follower
                                                    + " held by SIG" + held_signal)
                    << ", last restart " << static_cast<long>(since_restart)
                    << " ms before\n";
        if (sig == "STOP")
          std::this_thread::sleep_for(std::chrono::milliseconds{pick(200, 1000)});
        restore(victim, sig);
      }
      if (!held_follower.empty()) {
        restore(held_follower, held_signal);
        held_follower.clear();
      }
    } else if (held_follower.empty()) { // a follower, left so for a while
      auto st = json::parse(run(bin + " cluster status --json" + d), nullptr, false);
      if (st.is_discarded())
        continue;
      // No agreed leader right now (null): no follower to pick.
      if (!st["leader"].is_number_unsigned())
        continue;
      auto leader = st["leader"].get<uint64_t>();
      std::vector<std::string> followers;
      for (auto& n : st["nodes"])
        if (n.value("alive", false) && n["id"].get<uint64_t>() != leader)
          followers.push_back(std::to_string(n["id"].get<uint64_t>()));
      if (followers.empty())
        continue;
      held_follower = followers[static_cast<size_t>(pick(0, int(followers.size()) - 1))];
      held_signal = what == 8 ? "KILL" : "STOP";
      run(bin + " cluster kill --signal " + held_signal + " --node " + held_follower + d);
      ++follower_faults;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{pick(300, 1500)});
  }
  if (!held_follower.empty())
    restore(held_follower, held_signal);
  run(bin + " cluster down" + d);
  keep_node_logs(o, dir);
  auto line = [&](const char* what, const std::vector<double>& v) {
    std::cout << "chaos " << what << ": ";
    if (v.empty()) {
      std::cout << "no successful round\n";
      return;
    }
    auto sorted = v;
    std::sort(sorted.begin(), sorted.end());
    auto p90 =
        sorted[std::min(sorted.size() - 1,
                        static_cast<size_t>(std::ceil(0.9 * double(sorted.size()))) - 1)];
    std::cout << std::fixed << std::setprecision(1) << "median " << median(v)
              << " ms, p90 " << p90 << ", p99 " << p99(v) << ", max " << sorted.back()
              << " (" << v.size() << " leader faults); p99 / median "
              << (median(v) > 0 ? p99(v) / median(v) : 0.0) << "\n";
  };
  std::cout << "chaos run: " << o.chaos_s << " s on 5 nodes (seed " << o.seed << "), "
            << follower_faults << " follower faults, " << failed << " failed round(s)\n";
  line("SIGKILL of the leader", kill_ms);
  line("SIGSTOP of the leader", stop_ms);
}

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string{argv[++i]} : std::string{}; };
    if (a == "--rounds")
      o.rounds = std::stoi(next());
    else if (a == "--nodes")
      o.nodes = std::stoi(next());
    else if (a == "--conclave")
      o.conclave = next();
    else if (a == "--etcd")
      o.etcd = next();
    else if (a == "--up-args") // e.g. --insecure: plaintext links instead of TLS
      o.up_args = next();
    else if (a == "--skip-etcd")
      o.skip_etcd = true;
    else if (a == "--death-proof-ab")
      o.death_proof_ab = true;
    else if (a == "--idle-busy-s")
      o.idle_busy_s = std::stoi(next());
    else if (a == "--skip-failover")
      o.skip_failover = true;
    else if (a == "--keep-logs")
      o.keep_logs = next();
    else if (a == "--burners-in-session")
      o.burners_in_session = true;
    else if (a == "--chaos-s")
      o.chaos_s = std::stoi(next());
    else if (a == "--seed")
      o.seed = static_cast<unsigned>(std::stoul(next()));
    else if (a == "--kv-clients")
      o.kv_clients = std::stoi(next());
    else if (a == "--quick") {
      o.rounds = 1;
      o.skip_etcd = true;
    } else {
      std::cerr
          << "usage: failover_bench [--rounds R] [--nodes N] [--conclave BIN] "
             "[--etcd BIN] [--skip-etcd] [--quick] [--death-proof-ab] [--up-args ARGS] "
             "[--idle-busy-s SECONDS] [--skip-failover] [--keep-logs DIR] "
             "[--burners-in-session] [--kv-clients N] [--chaos-s SECONDS] [--seed N]\n";
      return 2;
    }
  }
  if (!o.skip_etcd && ::access(o.etcd.c_str(), X_OK) != 0) {
    std::cerr << "no etcd at " << o.etcd << " (scripts/bench-failover.sh installs it), "
              << "or pass --skip-etcd\n";
    return 2;
  }
  auto root =
      fs::temp_directory_path() / ("conclave-failover-" + std::to_string(::getpid()));
  fs::create_directories(root);
  std::cout << "failover bench: " << o.rounds << " round(s) per case, conclave with "
            << o.nodes << " nodes (Bully, the nodes' default timing: docs/design/node.md"
            << (o.up_args.empty() ? "" : ", cluster up " + o.up_args) << "), "
            << "loopback, shared machine\n";
  if (o.chaos_s > 0) {
    chaos_run(o, root / "chaos");
    if (o.skip_failover && o.idle_busy_s == 0) {
      fs::remove_all(root);
      return 0;
    }
  }
  if (o.skip_failover) {
    if (o.idle_busy_s > 0)
      idle_busy_run(o, root / "idle-busy");
    fs::remove_all(root);
    return 0;
  }
  if (o.death_proof_ab) {
    // Same machine, same run: proofs of death off first, then on (the nodes'
    // default). Each line: SIGKILL / SIGSTOP failover as `cluster kill` times it.
    auto off_o = o;
    off_o.up_args += " --no-death-proof";
    auto off = bench_conclave(off_o, root / "conclave-no-proof");
    auto on = bench_conclave(o, root / "conclave-proof");
    std::cout << "conclave SIGKILL, proofs of death off: " << summary(off.kill_ms) << '\n'
              << "conclave SIGKILL, proofs of death on:  " << summary(on.kill_ms) << '\n'
              << "conclave SIGSTOP, proofs of death off: " << summary(off.stop_ms) << '\n'
              << "conclave SIGSTOP, proofs of death on:  " << summary(on.stop_ms) << '\n';
    if (o.skip_etcd) {
      fs::remove_all(root);
      return 0;
    }
  }
  auto cr = bench_conclave(o, root / "conclave");
  std::cout << "conclave SIGKILL: " << summary(cr.kill_ms) << "; as polled "
            << summary(cr.kill_observed_ms) << '\n';
  std::cout << "conclave SIGSTOP: " << summary(cr.stop_ms) << "; as polled "
            << summary(cr.stop_observed_ms) << '\n';
  if (!cr.idle_rss_kb.empty()) {
    std::vector<double> mb;
    for (auto kb : cr.idle_rss_kb)
      mb.push_back(kb / 1024.0);
    std::cout << std::fixed << std::setprecision(1) << "conclave idle node RSS: median "
              << median(mb) << " MB, max " << *std::max_element(mb.begin(), mb.end())
              << " MB\n";
  }
  if (!o.skip_etcd) {
    auto ed = bench_etcd(o, root / "etcd-default", 100, 1000);
    std::cout << "etcd (100/1000 ms) SIGKILL: " << summary(ed.kill_ms) << '\n';
    std::cout << "etcd (100/1000 ms) SIGSTOP: " << summary(ed.stop_ms) << '\n';
    auto et = bench_etcd(o, root / "etcd-tuned", 10, 100);
    std::cout << "etcd (10/100 ms)   SIGKILL: " << summary(et.kill_ms) << '\n';
    std::cout << "etcd (10/100 ms)   SIGSTOP: " << summary(et.stop_ms) << '\n';
    auto ratio = [](const std::vector<double>& a, const std::vector<double>& b) {
      return a.empty() || b.empty() || median(b) <= 0 ? 0.0 : median(a) / median(b);
    };
    std::cout << std::fixed << std::setprecision(1)
              << "ratios (etcd median / conclave median): SIGKILL default "
              << ratio(ed.kill_ms, cr.kill_ms) << "x, tuned "
              << ratio(et.kill_ms, cr.kill_ms) << "x; SIGSTOP default "
              << ratio(ed.stop_ms, cr.stop_ms) << "x, tuned "
              << ratio(et.stop_ms, cr.stop_ms) << "x\n";
  }
  if (o.idle_busy_s > 0)
    idle_busy_run(o, root / "idle-busy");
  fs::remove_all(root);
  return 0;
}
