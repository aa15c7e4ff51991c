// Lease timing of a running cluster's store, as a client sees it: how soon a
// waiter gets a lease after its holder releases it, how soon after its holder
// dies (kill -9), and how many acquire/release pairs per second clients get.
// Prints figures; asserts nothing about time (the exit status is 1 only if
// something did not work: no cluster, a refused release, a grant that never
// came).
//
// The cluster: `--dir D` uses a running `conclave cluster up` directory
// (scripts/bench-lease.sh starts one and brings it down); without --dir the
// bench brings up its own 3-node cluster (TLS) in a temporary directory and
// brings it down at the end.
//
// Clients: one actor system with a connection to every member (the one
// `conclave lock` uses, runtime/cluster/store_access.hpp) and blocking
// lease_client calls (actors/replication/lease_client.hpp) from plain
// threads, one thread per simulated client. One process keeps the 2-core
// machine for the cluster: 32 processes would be 32 actor systems and 96 TLS
// connections competing with the members for CPU.
//
// 1. Hand-over after release: holder H holds the lease, waiter W is blocked
//    in acquire (queued at the primary, FIFO); H releases; measured from the
//    release call's start and from its return to W's acquire returning
//    granted. The two swap roles every round. The waiter is blocked
//    --queued-ms (150) before the release. With --etcd BIN the same rounds
//    run against a 3-member etcd through its lock API (what `etcdctl lock`
//    uses); there a waiter that started less than about 100 ms before the
//    unlock was seen to wait 60-80 ms more.
// 2. Hand-over after kill -9: a child process (this program with --hold)
//    acquires with ttl T, renews every T/3 and logs each renewal's send time;
//    a waiter here is queued; the child is killed with SIGKILL; measured
//    from the kill to the waiter's grant. The store frees a slot
//    W = T * (1 + drift) / (1 - drift) after the holder's last renewal
//    reached the primary (docs: actors/replication/lease_table.hpp), so the
//    bench also prints the excess over that bound: grant time minus (the
//    last renewal's send time before the kill + W).
// 3. Throughput: C threads, each acquire (waiting) then release at once, in
//    a closed loop, on one lock (they queue, FIFO) or on a lock each.
//
//   lease_bench [--dir D | --conclave BIN [--up-args ARGS]]
//               [--handovers N] [--kills K] [--kill-ttl-ms T] [--drift D]
//               [--seconds S] [--queued-ms Q] [--etcd BIN] [--quick]
//   lease_bench --hold NAME --dir D --ttl-ms T     (the killed holder; internal)
#include "actors/replication/lease_client.hpp"
#include "actors/replication/lease_state.hpp"
#include "runtime/cluster/store_access.hpp"
#include "tests/bench/support/etcd_process.hpp"
#include "tests/bench/support/stats.hpp"
#include "tests/support/process_tools.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
namespace rp = conclave::replication;
namespace cl = conclave::cluster;
using namespace std::chrono_literals;
using clock_type = rp::lease_clock;
using ms = std::chrono::milliseconds;

struct options {
  std::string conclave = CONCLAVE_BIN;
  std::string dir;
  std::string up_args;
  int handovers = 200;
  int kills = 15;
  ms kill_ttl{1000};
  double drift = 0.01; ///< the nodes' default (lease_table.hpp)
  double seconds = 5;
  bool quick = false;
  /// How long the waiter is blocked before the holder releases (hand-over).
  ms queued{150};
  /// With an etcd binary: the hand-over after release of a 3-member etcd too.
  std::string etcd;
};

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int64_t ns_of(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch())
      .count();
}

clock_type::time_point time_of_ns(int64_t ns) {
  return clock_type::time_point{
      std::chrono::duration_cast<clock_type::duration>(std::chrono::nanoseconds{ns})};
}

/// The q-quantile by nearest rank (the ceil(q * n)-th smallest): with 15
/// samples p99 is the largest, with 200 the 198th.
double rank_quantile(std::vector<double> v, double q) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

/// Median, p99, min, max and the count, in columns.
std::string stats_of(const std::vector<double>& v) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(2);
  if (v.empty())
    return "no samples";
  auto med = conclave::bench::median(v);
  auto p99 = rank_quantile(v, 0.99);
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  o << std::setw(9) << med << std::setw(9) << p99 << std::setw(9) << *lo << std::setw(9)
    << *hi << "   n=" << v.size();
  return o.str();
}

/// The connection to a cluster's members and a lease_client over it.
class store {
public:
  /// The one-line error, or nothing.
  std::optional<std::string> open(const std::string& dir) {
    access_.dir = dir;
    if (auto e = cl::settle_access(access_))
      return e;
    if (auto e = cl::parse_members(access_, members_))
      return e;
    conn_ = std::make_unique<cl::store_connection>(access_, members_);
    conn_->wait_ready(2000ms);
    return std::nullopt;
  }

  rp::lease_client client() {
    return rp::lease_client{conn_->system(), conn_->client_options()};
  }

private:
  cl::store_access access_;
  std::map<uint64_t, conclave::node::address> members_;
  std::unique_ptr<cl::store_connection> conn_;
};

rp::lease_params params(ms ttl) {
  rp::lease_params p;
  p.ttl = ttl;
  p.limit = 1;
  p.label = rp::lease_client::default_label("lease_bench");
  return p;
}

/// Long enough that acquire never renews at once after a wait (it does when
/// the wait took more than ttl / 4, lease_client.cpp), so a grant's answer is
/// what is timed.
constexpr ms waiter_ttl{60000};
constexpr ms long_wait{30000};

/// Until a lease can be acquired and released (a primary serves), up to 60 s.
std::optional<std::string> warm_up(rp::lease_client& c) {
  auto holder = rp::lease_client::make_holder_id();
  auto until = clock_type::now() + 60s;
  std::string last = "no answer";
  while (clock_type::now() < until) {
    auto r = c.acquire("bench/warm-up", holder, params(waiter_ttl), 2000ms);
    if (r.code == rp::errc::ok) {
      auto e = c.release("bench/warm-up", holder, r.token, 5000ms);
      if (e == rp::errc::ok)
        return std::nullopt;
      last = "release answered " + std::string{rp::to_string(e)};
    } else {
      last = "acquire answered " + std::string{rp::to_string(r.code)};
    }
    std::this_thread::sleep_for(100ms);
  }
  return "no lease granted and released within 60 s (last: " + last + ")";
}

// -- 1. hand-over after release -----------------------------------------------

struct handover_figures {
  std::vector<double> from_call, from_return, release_ms;
  std::string error;
};

/// A blocked acquire on its own thread; `granted` is when it returned.
struct waiter {
  std::thread t;
  rp::lease_answer answer;
  clock_type::time_point granted{};

  void start(rp::lease_client& c, const std::string& name, const std::string& holder) {
    t = std::thread{[this, &c, name, holder] {
      answer = c.acquire(name, holder, params(waiter_ttl), long_wait);
      granted = clock_type::now();
    }};
  }
  void join() { t.join(); }
};

handover_figures run_handover(store& s, int rounds, ms queued) {
  handover_figures f;
  auto c = s.client();
  const std::string name = "bench/handover";
  std::string ids[2] = {rp::lease_client::make_holder_id(),
                        rp::lease_client::make_holder_id()};
  auto first = c.acquire(name, ids[0], params(waiter_ttl), 5000ms);
  if (first.code != rp::errc::ok) {
    f.error = "first acquire answered " + std::string{rp::to_string(first.code)};
    return f;
  }
  uint64_t token = first.token;
  int holder = 0;
  for (int r = 0; r < rounds; ++r) {
    int next = 1 - holder;
    waiter w;
    w.start(c, name, ids[next]);
    // The acquire is queued at the primary well before the release (one
    // message on loopback).
    std::this_thread::sleep_for(queued);
    auto call = clock_type::now();
    auto e = c.release(name, ids[holder], token, 5000ms);
    auto back = clock_type::now();
    w.join();
    if (e != rp::errc::ok) {
      f.error = "release answered " + std::string{rp::to_string(e)};
      return f;
    }
    if (w.answer.code != rp::errc::ok) {
      f.error = "waiter's acquire answered " + std::string{rp::to_string(w.answer.code)};
      return f;
    }
    f.from_call.push_back(ms_between(call, w.granted));
    f.from_return.push_back(ms_between(back, w.granted));
    f.release_ms.push_back(ms_between(call, back));
    token = w.answer.token;
    holder = next;
  }
  (void)c.release(name, ids[holder], token, 5000ms);
  return f;
}

// -- 2. hand-over after kill -9 -----------------------------------------------

/// The child: acquires NAME with ttl T, prints "granted TOKEN SENT_NS", then
/// renews every T/3, printing "send NS" before each renewal and "ok NS" after
/// a successful one (CLOCK_MONOTONIC, which the parent shares), until killed.
int hold(const std::string& dir, const std::string& name, ms ttl) {
  store s;
  if (auto e = s.open(dir)) {
    std::cout << "error " << *e << std::endl;
    std::_Exit(2);
  }
  auto c = s.client();
  auto holder = rp::lease_client::make_holder_id();
  auto r = c.acquire(name, holder, params(ttl), 10000ms);
  if (r.code != rp::errc::ok) {
    std::cout << "error acquire answered " << rp::to_string(r.code) << std::endl;
    std::_Exit(1);
  }
  auto sent = r.safe_until - ttl;
  std::cout << "granted " << r.token << " " << ns_of(sent) << std::endl;
  for (;;) {
    std::this_thread::sleep_until(sent + ttl / 3);
    sent = clock_type::now();
    std::cout << "send " << ns_of(sent) << std::endl;
    auto a = c.renew(name, holder, r.token, ttl, ttl / 3);
    if (a.code == rp::errc::ok) {
      std::cout << "ok " << ns_of(clock_type::now()) << std::endl;
    } else {
      std::cout << "error renew answered " << rp::to_string(a.code) << std::endl;
      std::_Exit(1);
    }
  }
}

/// The log of a holder child: the grant's and renewals' send times.
struct holder_log {
  bool granted = false;
  std::string error;
  std::vector<int64_t> sends; ///< the grant's poll, then every renewal
};

holder_log read_holder_log(const fs::path& file) {
  holder_log out;
  std::ifstream in{file};
  std::string word;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l{line};
    l >> word;
    if (word == "granted") {
      uint64_t token = 0;
      int64_t ns = 0;
      if (l >> token >> ns) {
        out.granted = true;
        out.sends.push_back(ns);
      }
    } else if (word == "send") {
      int64_t ns = 0;
      if (l >> ns)
        out.sends.push_back(ns);
    } else if (word == "error") {
      out.error = line;
    }
  }
  return out;
}

struct kill_figures {
  std::vector<double> from_kill, over_ttl, since_last_send, excess, kill_after_send;
  std::string error;
};

kill_figures run_kills(store& s, const options& o, const fs::path& self_exe,
                       const fs::path& work) {
  kill_figures f;
  auto c = s.client();
  std::mt19937 rng{12345};
  auto bound = std::chrono::duration<double, std::milli>(o.kill_ttl).count()
               * (1 + o.drift) / (1 - o.drift);
  for (int r = 0; r < o.kills; ++r) {
    auto name = "bench/kill/" + std::to_string(r);
    auto log = work / ("holder-" + std::to_string(r) + ".log");
    auto pid =
        conclave::bench::spawn_logged({self_exe.string(), "--hold", name, "--dir", o.dir,
                                       "--ttl-ms", std::to_string(o.kill_ttl.count())},
                                      log.string());
    if (pid <= 0) {
      f.error = "cannot start the holder process";
      return f;
    }
    holder_log hl;
    auto until = clock_type::now() + 30s;
    while (clock_type::now() < until) {
      hl = read_holder_log(log);
      if (hl.granted || !hl.error.empty())
        break;
      if (::waitpid(pid, nullptr, WNOHANG) == pid) {
        pid = -1;
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    if (!hl.granted) {
      conclave::bench::stop_child(pid, SIGKILL);
      f.error = "holder process " + std::to_string(r) + " got no grant: "
                + (hl.error.empty() ? std::string{"(no answer)"} : hl.error) + " (log "
                + log.string() + ")";
      return f;
    }
    waiter w;
    auto holder = rp::lease_client::make_holder_id();
    w.start(c, name, holder);
    // The waiter is queued well before the kill; the kill lands anywhere in
    // the holder's renewal period.
    std::uniform_int_distribution<int> phase{0, static_cast<int>(o.kill_ttl.count() / 3)};
    std::this_thread::sleep_for(ms{200 + phase(rng)});
    auto killed = clock_type::now();
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    w.join();
    hl = read_holder_log(log);
    if (w.answer.code != rp::errc::ok) {
      f.error = "waiter after kill " + std::to_string(r) + " answered "
                + std::string{rp::to_string(w.answer.code)};
      return f;
    }
    if (!hl.error.empty()) {
      f.error = "holder process " + std::to_string(r) + ": " + hl.error;
      return f;
    }
    // The last renewal sent before the kill (it may have reached the primary
    // and restarted the holder's expiry even if its answer never came back).
    int64_t last = 0;
    for (auto ns : hl.sends)
      if (ns <= ns_of(killed))
        last = std::max(last, ns);
    auto last_send = time_of_ns(last);
    f.from_kill.push_back(ms_between(killed, w.granted));
    f.over_ttl.push_back(f.from_kill.back()
                         - std::chrono::duration<double, std::milli>(o.kill_ttl).count());
    f.since_last_send.push_back(ms_between(last_send, w.granted));
    f.excess.push_back(f.since_last_send.back() - bound);
    f.kill_after_send.push_back(ms_between(last_send, killed));
    (void)c.release(name, holder, w.answer.token, 5000ms);
  }
  return f;
}

// -- 3. throughput ------------------------------------------------------------

struct throughput_figures {
  uint64_t pairs = 0;
  double seconds = 0;
  std::vector<double> acquire_ms;
  std::string error;
};

throughput_figures run_throughput(store& s, int clients, bool one_lock, double seconds,
                                  const std::string& tag) {
  throughput_figures f;
  std::vector<std::vector<double>> lat(static_cast<size_t>(clients));
  std::vector<std::string> errors(static_cast<size_t>(clients));
  std::atomic<uint64_t> pairs{0};
  auto start = clock_type::now();
  auto end = start
             + std::chrono::duration_cast<clock_type::duration>(
                 std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i)
    threads.emplace_back([&, i] {
      auto c = s.client();
      auto name =
          one_lock ? "bench/tp/" + tag : "bench/tp/" + tag + "/" + std::to_string(i);
      auto holder = rp::lease_client::make_holder_id();
      auto& mine = lat[static_cast<size_t>(i)];
      while (clock_type::now() < end) {
        auto t0 = clock_type::now();
        auto a = c.acquire(name, holder, params(waiter_ttl), long_wait);
        if (a.code != rp::errc::ok) {
          errors[static_cast<size_t>(i)] =
              "acquire answered " + std::string{rp::to_string(a.code)};
          return;
        }
        mine.push_back(ms_between(t0, clock_type::now()));
        auto e = c.release(name, holder, a.token, 5000ms);
        if (e != rp::errc::ok) {
          errors[static_cast<size_t>(i)] =
              "release answered " + std::string{rp::to_string(e)};
          return;
        }
        ++pairs;
      }
    });
  for (auto& t : threads)
    t.join();
  f.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  f.pairs = pairs;
  for (size_t i = 0; i < lat.size(); ++i) {
    f.acquire_ms.insert(f.acquire_ms.end(), lat[i].begin(), lat[i].end());
    if (f.error.empty() && !errors[i].empty())
      f.error = errors[i];
  }
  return f;
}

// -- etcd: hand-over after release, for comparison -----------------------------

/// A 3-member etcd on loopback (default timing), its members stopped when
/// destroyed.
class etcd_trio {
public:
  etcd_trio(std::string bin, fs::path dir) : bin_(std::move(bin)), dir_(std::move(dir)) {}
  ~etcd_trio() {
    for (auto pid : pids_)
      conclave::bench::stop_child(pid);
  }

  std::optional<std::string> up() {
    fs::create_directories(dir_);
    std::vector<std::pair<uint16_t, uint16_t>> ports;
    std::string initial;
    for (int i = 1; i <= 3; ++i) {
      ports.emplace_back(conclave::testing::free_port(), conclave::testing::free_port());
      initial += (i == 1 ? "" : ",") + ("m" + std::to_string(i))
                 + "=http://127.0.0.1:" + std::to_string(ports.back().second);
    }
    for (int i = 1; i <= 3; ++i) {
      auto [client, peer] = ports[static_cast<size_t>(i - 1)];
      auto name = "m" + std::to_string(i);
      auto c = "http://127.0.0.1:" + std::to_string(client);
      auto pe = "http://127.0.0.1:" + std::to_string(peer);
      pids_.push_back(conclave::bench::spawn_logged(
          {bin_, "--name=" + name, "--data-dir=" + (dir_ / name).string(),
           "--listen-client-urls=" + c, "--advertise-client-urls=" + c,
           "--listen-peer-urls=" + pe, "--initial-advertise-peer-urls=" + pe,
           "--initial-cluster=" + initial, "--initial-cluster-state=new",
           "--initial-cluster-token=conclave-lease-bench", "--log-level=error"},
          (dir_ / (name + ".log")).string()));
      clients_.push_back(client);
    }
    auto until = clock_type::now() + 30s;
    while (clock_type::now() < until) {
      for (auto port : clients_) {
        conclave::bench::http_connection c{port, 500ms};
        std::string body;
        if (!c.ok() || c.post("/v3/maintenance/status", "{}", body) != 200)
          continue;
        auto j = nlohmann::json::parse(body, nullptr, false);
        if (j.is_discarded() || !j.contains("header"))
          continue;
        auto leader = j.value("leader", "0");
        if (leader != "0" && leader == j["header"].value("member_id", "0")) {
          leader_port_ = port;
          return std::nullopt;
        }
      }
      std::this_thread::sleep_for(50ms);
    }
    return "etcd did not elect a leader within 30 s (logs in " + dir_.string() + ")";
  }

  uint16_t leader_port() const { return leader_port_; }

private:
  std::string bin_;
  fs::path dir_;
  std::vector<pid_t> pids_;
  std::vector<uint16_t> clients_;
  uint16_t leader_port_ = 0;
};

/// The same rounds as run_handover through etcd's lock API (v3lock, as
/// `etcdctl lock` uses it) over its JSON gateway on the leader: each of the two
/// clients has a 60 s lease; the waiter's /v3/lock/lock blocks until it holds
/// the lock; the holder's /v3/lock/unlock deletes its key.
handover_figures run_etcd_handover(uint16_t port, int rounds, ms queued) {
  handover_figures f;
  auto field = [](const std::string& body, const char* name) -> std::string {
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.contains(name))
      return {};
    return j[name].get<std::string>();
  };
  std::string lease[2];
  for (auto& l : lease) {
    conclave::bench::http_connection c{port};
    std::string body;
    if (c.post("/v3/lease/grant", R"({"TTL":60})", body) != 200
        || (l = field(body, "ID")).empty()) {
      f.error = "etcd lease grant failed: " + body;
      return f;
    }
  }
  auto name = conclave::bench::base64("bench/handover");
  auto lock_body = [&](int who) {
    return R"({"name":")" + name + R"(","lease":")" + lease[who] + R"("})";
  };
  // One connection per client, as two etcdctl processes would have.
  conclave::bench::http_connection conn0{port, 35000ms}, conn1{port, 35000ms};
  conclave::bench::http_connection* conn[2] = {&conn0, &conn1};
  std::string body;
  if (conn[0]->post("/v3/lock/lock", lock_body(0), body) != 200) {
    f.error = "etcd first lock failed: " + body;
    return f;
  }
  std::string key = field(body, "key");
  int holder = 0;
  for (int r = 0; r < rounds; ++r) {
    int next = 1 - holder;
    std::string got;
    int status = 0;
    clock_type::time_point granted{};
    std::thread w{[&] {
      status = conn[next]->post("/v3/lock/lock", lock_body(next), got);
      granted = clock_type::now();
    }};
    std::this_thread::sleep_for(queued);
    std::string answer;
    auto call = clock_type::now();
    auto code =
        conn[holder]->post("/v3/lock/unlock", R"({"key":")" + key + R"("})", answer);
    auto back = clock_type::now();
    w.join();
    if (code != 200 || status != 200) {
      f.error = "etcd unlock answered " + std::to_string(code) + ", lock "
                + std::to_string(status) + ": " + answer + got;
      return f;
    }
    f.from_call.push_back(ms_between(call, granted));
    f.from_return.push_back(ms_between(back, granted));
    f.release_ms.push_back(ms_between(call, back));
    key = field(got, "key");
    holder = next;
  }
  return f;
}

// -- the cluster --------------------------------------------------------------

/// A `cluster up` this process started, brought down when destroyed.
class own_cluster {
public:
  own_cluster(std::string bin, fs::path dir)
      : bin_(std::move(bin)), dir_(std::move(dir)) {}
  ~own_cluster() {
    if (up_)
      conclave::testing::run_command(bin_ + " cluster down --dir " + dir_.string()
                                     + " >/dev/null 2>&1");
  }
  std::optional<std::string> up(const std::string& extra) {
    auto out = conclave::testing::run_command(bin_ + " cluster up --nodes 3 --dir "
                                              + dir_.string() + " " + extra + " 2>&1");
    if (out.status != 0)
      return "conclave cluster up failed: " + out.out;
    up_ = true;
    return std::nullopt;
  }

private:
  std::string bin_;
  fs::path dir_;
  bool up_ = false;
};

std::optional<int> int_arg(const std::string& text, int lo, int hi) {
  char* end = nullptr;
  long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || n < lo || n > hi)
    return std::nullopt;
  return static_cast<int>(n);
}

} // namespace

int main(int argc, char** argv) {
  options o;
  std::string hold_name;
  const char* usage =
      "usage: lease_bench [--dir D | --conclave BIN [--up-args ARGS]] [--handovers N]\n"
      "                   [--kills K] [--kill-ttl-ms T] [--drift D] [--seconds S] "
      "[--quick]\n"
      "                   [--queued-ms Q] [--etcd BIN]\n";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::optional<std::string> {
      if (i + 1 >= argc)
        return std::nullopt;
      return std::string{argv[++i]};
    };
    std::optional<std::string> v;
    std::optional<int> n;
    if (a == "--help" || a == "-h") {
      std::cout << usage;
      return 0;
    } else if (a == "--quick") {
      o.quick = true;
      o.handovers = 20;
      o.kills = 2;
      o.kill_ttl = 500ms;
      o.seconds = 0.5;
    } else if (a == "--etcd" && (v = next())) {
      o.etcd = *v;
    } else if (a == "--dir" && (v = next())) {
      o.dir = *v;
    } else if (a == "--conclave" && (v = next())) {
      o.conclave = *v;
    } else if (a == "--up-args" && (v = next())) {
      o.up_args = *v;
    } else if (a == "--hold" && (v = next())) {
      hold_name = *v;
    } else if (a == "--handovers" && (v = next()) && (n = int_arg(*v, 0, 100000))) {
      o.handovers = *n;
    } else if (a == "--queued-ms" && (v = next()) && (n = int_arg(*v, 0, 10000))) {
      o.queued = ms{*n};
    } else if (a == "--kills" && (v = next()) && (n = int_arg(*v, 0, 1000))) {
      o.kills = *n;
    } else if ((a == "--kill-ttl-ms" || a == "--ttl-ms") && (v = next())
               && (n = int_arg(*v, 30, 600000))) {
      o.kill_ttl = ms{*n};
    } else if (a == "--drift" && (v = next())) {
      o.drift = std::strtod(v->c_str(), nullptr);
      if (!(o.drift >= 0 && o.drift < 0.5)) {
        std::cerr << "lease_bench: --drift wants 0 <= D < 0.5\n";
        return 2;
      }
    } else if (a == "--seconds" && (v = next())) {
      o.seconds = std::strtod(v->c_str(), nullptr);
      if (!(o.seconds > 0 && o.seconds <= 3600)) {
        std::cerr << "lease_bench: --seconds wants a number in (0, 3600]\n";
        return 2;
      }
    } else {
      std::cerr << "lease_bench: unknown, incomplete or out-of-range argument " << a
                << "\n"
                << usage;
      return 2;
    }
  }
  if (!hold_name.empty()) {
    if (o.dir.empty()) {
      std::cerr << "lease_bench: --hold needs --dir\n";
      return 2;
    }
    return hold(o.dir, hold_name, o.kill_ttl);
  }

  char tmpl[] = "/tmp/conclave-lease-bench.XXXXXX";
  if (!::mkdtemp(tmpl)) {
    std::cerr << "lease_bench: cannot create a temporary directory\n";
    return 1;
  }
  fs::path work{tmpl};
  std::error_code ec;
  auto self_exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    std::cerr << "lease_bench: cannot find its own executable\n";
    return 1;
  }
  int status = 0;
  {
    std::unique_ptr<own_cluster> mine;
    if (o.dir.empty()) {
      o.dir = (work / "cluster").string();
      mine = std::make_unique<own_cluster>(o.conclave, o.dir);
      if (auto e = mine->up(o.up_args)) {
        std::cerr << "lease_bench: " << *e << '\n';
        std::cerr << "lease_bench: files kept in " << work << '\n';
        return 1;
      }
    }
    store s;
    if (auto e = s.open(o.dir)) {
      std::cerr << "lease_bench: " << *e << '\n';
      return 2;
    }
    {
      auto c = s.client();
      if (auto e = warm_up(c)) {
        std::cerr << "lease_bench: " << *e << '\n';
        status = 1;
      }
    }
    auto fail = [&](const std::string& what, const std::string& error) {
      if (error.empty())
        return false;
      std::cerr << "lease_bench: " << what << ": " << error << '\n';
      status = 1;
      return true;
    };
    std::cout << "leases of a 3-node cluster (" << o.dir
              << "), one client process: one actor system, blocking lease_client "
                 "calls from threads\n"
              << "times in ms" << std::setw(46) << "median" << std::setw(9) << "p99"
              << std::setw(9) << "min" << std::setw(9) << "max" << '\n';
    auto row = [](const std::string& label, const std::vector<double>& v) {
      std::cout << std::left << std::setw(48) << label << std::right << stats_of(v)
                << std::endl;
    };
    if (status == 0 && o.handovers > 0) {
      auto f = run_handover(s, o.handovers, o.queued);
      if (!fail("hand-over after release", f.error)) {
        std::cout << "1. hand-over after release (waiter blocked " << o.queued.count()
                  << " ms before the release)\n";
        row("  release call -> waiter granted", f.from_call);
        row("  release returned -> waiter granted", f.from_return);
        row("  release call (round trip, commit)", f.release_ms);
      }
    }
    if (status == 0 && o.handovers > 0 && !o.etcd.empty()) {
      etcd_trio e{o.etcd, work / "etcd"};
      if (auto err = e.up()) {
        fail("etcd", *err);
      } else {
        auto f = run_etcd_handover(e.leader_port(), o.handovers, o.queued);
        if (!fail("etcd hand-over after unlock", f.error)) {
          std::cout << "1e. the same with etcd (3 members, lock API on the leader's "
                       "JSON gateway)\n";
          row("  unlock call -> waiter's lock returned", f.from_call);
          row("  unlock returned -> waiter's lock returned", f.from_return);
          row("  unlock call (round trip, commit)", f.release_ms);
        }
      }
    }
    if (status == 0 && o.kills > 0) {
      auto f = run_kills(s, o, self_exe, work);
      if (!fail("hand-over after kill -9", f.error)) {
        auto t = o.kill_ttl.count();
        std::ostringstream b;
        b << std::fixed << std::setprecision(1)
          << double(t) * (1 + o.drift) / (1 - o.drift);
        std::cout << "2. hand-over after kill -9 of the holder process (ttl " << t
                  << " ms, renewing every " << t / 3 << " ms; store's wait W = ttl*(1+"
                  << o.drift << ")/(1-" << o.drift << ") = " << b.str() << " ms)\n";
        row("  kill -> waiter granted", f.from_kill);
        row("  kill -> waiter granted, minus ttl", f.over_ttl);
        row("  holder's last renewal sent -> kill", f.kill_after_send);
        row("  last renewal sent -> waiter granted", f.since_last_send);
        row("  excess: last renewal sent + W -> granted", f.excess);
      }
    }
    if (status == 0 && o.seconds > 0) {
      std::cout << "3. throughput: acquire (waiting) + release at once, closed loop, "
                << o.seconds << " s per case; acquire latency\n";
      struct tp_case {
        int clients;
        bool one_lock;
        const char* label;
      };
      for (auto& k : std::vector<tp_case>{{1, true, "1 client, 1 lock"},
                                          {32, true, "32 clients, 1 lock (queue)"},
                                          {32, false, "32 clients, 32 locks"}}) {
        auto f = run_throughput(s, k.clients, k.one_lock, o.seconds,
                                std::to_string(k.clients) + (k.one_lock ? "x1" : "x32"));
        if (fail(k.label, f.error))
          break;
        std::ostringstream l;
        l << "  " << k.label << ": " << std::fixed << std::setprecision(0)
          << double(f.pairs) / f.seconds << " pairs/s";
        row(l.str(), f.acquire_ms);
      }
    }
  }
  if (status == 0)
    fs::remove_all(work);
  else
    std::cerr << "lease_bench: files kept in " << work << '\n';
  return status;
}
