// Replicated store throughput of conclave against a 3-member etcd, on
// loopback, in one run on one machine.
//
// conclave: `conclave cluster up --nodes 3` (TLS, as users run it); this
// process is the client: it connects to the members' gates the way
// `conclave kv` does (runtime/cluster/client_connect.hpp), waits for a
// primary that commits, and then, for each client count C, runs C client
// actors, each doing strong puts (one op, a 256-byte value, a key of its own
// per put) in a closed loop for S seconds against the primary's front.
//
// etcd: a 3-member cluster (Debian's etcd-server, default timing) in the same
// temporary directory; C client threads, each with its own keep-alive HTTP
// connection to the leader's JSON gateway, doing /v3/kv/put in a closed loop.
//
// Per client count it prints commits/s and the p50/p99 commit latency of
// both, and the ratios conclave/etcd; the two are measured back to back, the
// order alternating with the client count. Each line also gives the CPU time
// (user + system, /proc/PID/stat) per commit the servers used during the
// case: the three members together and the primary (etcd: leader) alone, and
// this process's own (the clients): the figure that holds up on a loaded
// machine, where commits/s swing with what else runs. `--conclave BIN` runs
// another conclave binary (before/after comparisons). Nothing about speed is asserted:
// the exit status is 1 only if something did not work (a put failed, a
// cluster did not come up).
//
// `--sessions` also runs each conclave case with a client session op on every
// put (exactly-once retries, actors/replication/session_table.hpp), side by
// side with the plain case, and prints the ratio: the cost of exactly-once.
//
//   repl_bench [--etcd BIN] [--skip-etcd] [--conclave BIN]
//              [--clients 1,8,32,128] [--seconds S] [--quick] [--sessions]
#include "actors/replication/client.hpp"
#include "actors/replication/messages.hpp"
#include "actors/replication/session_table.hpp"
#include "actors/replication/type_ids.hpp"
#include "runtime/cluster/client_connect.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/front_directory.hpp"
#include "tests/bench/support/etcd_process.hpp"
#include "tests/bench/support/stats.hpp"
#include "tests/support/process_tools.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include <nlohmann/json.hpp>

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
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
namespace rp = conclave::replication;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using json = nlohmann::json;

struct options {
  std::string conclave = CONCLAVE_BIN;
  std::string etcd = "/usr/bin/etcd";
  bool skip_etcd = false;
  std::vector<int> clients{1, 8, 32, 128};
  double seconds = 5;
  /// Failover rounds (0: the throughput comparison instead).
  int failover_rounds = 0;
  /// Extra `cluster up` arguments (timing profile).
  std::string up_args;
  /// With --failover: also etcd's, at its default and tuned timing.
  bool etcd_failover = false;
  /// Each conclave case also with a client session on every put, side by
  /// side (the cost of exactly-once).
  bool sessions = false;
};

/// One measured case: commits, wall time, commit latencies (ms).
struct figures {
  uint64_t commits = 0;
  double seconds = 0;
  std::vector<double> latency_ms;
  std::string error; ///< why a put failed; empty when all succeeded
  /// CPU seconds (user + system) the servers used during the case: all
  /// members together, and the primary (conclave) or leader (etcd) alone;
  /// negative when a member's /proc entry could not be read.
  double cpu_all = -1, cpu_leader = -1;
  /// CPU seconds of this process (the clients) during the case.
  double cpu_clients = -1;

  double rate() const { return seconds > 0 ? double(commits) / seconds : 0; }
};

/// CPU seconds (user + system, every thread) process `pid` has used, from
/// /proc/PID/stat (fields 14 and 15, in clock ticks); nullopt if unreadable.
std::optional<double> cpu_seconds(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
  std::string text;
  if (!std::getline(in, text))
    return std::nullopt;
  auto close = text.rfind(')'); // the command name may hold spaces
  if (close == std::string::npos)
    return std::nullopt;
  std::istringstream rest{text.substr(close + 1)};
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14)
      utime = std::strtoull(field.c_str(), nullptr, 10);
    else if (i == 15)
      stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  if (!rest)
    return std::nullopt;
  return double(utime + stime) / double(::sysconf(_SC_CLK_TCK));
}

/// CPU seconds of this process so far.
double own_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

/// CPU use of a set of server processes over one case (cpu_seconds before
/// and after); the first pid is the primary or leader.
class cpu_meter {
public:
  explicit cpu_meter(std::vector<pid_t> pids) : pids_(std::move(pids)) {
    for (auto p : pids_)
      start_.push_back(cpu_seconds(p));
    own_ = own_cpu_seconds();
  }

  /// Fills f's CPU fields (left negative if a member could not be read).
  void finish(figures& f) const {
    f.cpu_clients = own_cpu_seconds() - own_;
    double all = 0;
    for (size_t i = 0; i < pids_.size(); ++i) {
      auto now = cpu_seconds(pids_[i]);
      if (!now || !start_[i])
        return;
      if (i == 0)
        f.cpu_leader = *now - *start_[i];
      all += *now - *start_[i];
    }
    if (!pids_.empty())
      f.cpu_all = all;
  }

private:
  std::vector<pid_t> pids_;
  std::vector<std::optional<double>> start_;
  double own_ = 0;
};

std::string value_of_256() {
  return std::string(256, 'v');
}

// -- conclave ----------------------------------------------------------------

/// The pid a node wrote to DIR/node-ID/node.pid.
std::optional<pid_t> pid_of(const fs::path& dir, uint64_t id);

/// What one client actor measured; written by the actor, read by main after
/// the actor's "done" message.
struct client_slot {
  std::vector<double> latency_ms;
  std::string error;
};

/// One case's figures from its clients' slots, timed from `start`.
figures gather(const std::vector<client_slot>& slots, clock_type::time_point start) {
  figures f;
  f.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  for (auto& s : slots) {
    f.commits += s.latency_ms.size();
    f.latency_ms.insert(f.latency_ms.end(), s.latency_ms.begin(), s.latency_ms.end());
    if (f.error.empty() && !s.error.empty())
      f.error = s.error;
  }
  return f;
}

struct client_loop {
  caf::actor front;
  caf::actor report_to;
  client_slot* slot = nullptr;
  std::string key_prefix;
  std::string value;
  clock_type::time_point end;
  uint64_t seq = 0;
  /// A client session id (empty: no session op, as before sessions).
  std::string session;
};

void finish(caf::event_based_actor* self, const std::shared_ptr<client_loop>& l) {
  self->send(l->report_to, caf::ok_atom::value);
  self->quit();
}

void put_next(caf::event_based_actor* self, std::shared_ptr<client_loop> l) {
  if (clock_type::now() >= l->end)
    return finish(self, l);
  rp::txn_request req;
  rp::txn_op op;
  op.collection = "kv";
  op.key = l->key_prefix + std::to_string(l->seq++);
  op.value = l->value;
  op.kind = rp::op_kind::put;
  req.ops.push_back(std::move(op));
  if (!l->session.empty()) // one put in flight: it is the lowest waited for
    req.ops.insert(req.ops.begin(), rp::make_session_op({l->session, l->seq, l->seq, 0}));
  req.mode = rp::commit_mode::strong;
  auto t0 = clock_type::now();
  self->request(l->front, 10s, std::move(req))
      .then(
          [self, l, t0](rp::txn_result& r) {
            if (r.code != rp::errc::ok) {
              l->slot->error = "put answered " + std::string{rp::to_string(r.code)};
              return finish(self, l);
            }
            l->slot->latency_ms.push_back(
                std::chrono::duration<double, std::milli>(clock_type::now() - t0)
                    .count());
            put_next(self, l);
          },
          [self, l](caf::error& e) {
            l->slot->error = "put failed: " + self->system().render(e);
            finish(self, l);
          });
}

/// A running `cluster up` and this process's connection to its primary.
class conclave_cluster {
public:
  conclave_cluster(std::string bin, fs::path dir)
      : bin_(std::move(bin)), dir_(std::move(dir)) {}
  ~conclave_cluster() { down(); }

  /// Brings the cluster up and connects to a primary that commits.
  std::optional<std::string> up(const std::string& extra = {}) {
    auto out = conclave::testing::run_command(bin_ + " cluster up --json --nodes 3 --dir "
                                              + dir_.string() + " " + extra + " 2>&1");
    if (out.status != 0)
      return "conclave cluster up failed: " + out.out;
    up_ = true;
    up_args_ = extra;
    auto access = conclave::cluster::client_access_of(dir_.string());
    if (!access)
      return std::string{"no cluster.json in "} + dir_.string();
    auto members = conclave::node::parse_peers(access->peers);
    if (!members)
      return "peers: " + members.error();
    members_ = members.value();
    cluster_name_ = access->cluster;
    // The system keeps a reference to its config: both live as long as this.
    cfg_ = std::make_unique<caf::actor_system_config>();
    conclave::cluster::configure_client(*cfg_, access->ca, access->cert, access->key);
    // As the nodes: CAF's default work-stealing threads poll while idle and
    // would take CPU from the nodes on a small machine (docs/design/caf-0.17.md).
    cfg_->set("scheduler.policy", caf::atom("sharing"));
    cfg_->set("scheduler.max-threads", 2);
    sys_ = std::make_unique<caf::actor_system>(*cfg_);
    caf::scoped_actor self{*sys_};
    // Wait for a serving primary: a warm-up put acknowledged by it. A member
    // that is not the primary names it; that one is asked first next.
    std::string last;
    uint64_t named = 0;
    auto deadline = clock_type::now() + 60s;
    while (clock_type::now() < deadline) {
      std::vector<std::pair<uint64_t, conclave::node::address>> order;
      if (auto i = members.value().find(named); i != members.value().end())
        order.emplace_back(*i);
      for (auto& m : members.value())
        if (m.first != named)
          order.emplace_back(m);
      named = 0;
      for (auto& [id, where] : order) {
        auto a =
            conclave::cluster::connect_front(self, access->cluster, id, where, 1000ms);
        if (!a.front) {
          last = a.error;
          continue;
        }
        rp::txn_request req;
        req.ops.push_back({"kv", "bench-warmup", "1", rp::op_kind::put});
        bool ok = false;
        self->request(a.front, 2s, std::move(req))
            .receive(
                [&](rp::txn_result& r) {
                  ok = r.code == rp::errc::ok;
                  if (!ok) {
                    last = "node " + std::to_string(id) + ": "
                           + std::string{rp::to_string(r.code)};
                    named = r.primary.value != id ? r.primary.value : a.primary;
                  }
                },
                [&](caf::error& e) { last = sys_->render(e); });
        if (ok) {
          front_ = a.front;
          primary_ = id;
          return std::nullopt;
        }
        if (named != 0)
          break;
      }
      std::this_thread::sleep_for(50ms);
    }
    return "no primary committed within 60 s (last: " + last + ")";
  }

  figures run(int clients, double seconds, const std::string& tag,
              bool sessions = false) {
    caf::scoped_actor self{*sys_};
    std::vector<client_slot> slots(static_cast<size_t>(clients));
    auto start = clock_type::now();
    auto end = start
               + std::chrono::duration_cast<clock_type::duration>(
                   std::chrono::duration<double>(seconds));
    auto value = value_of_256();
    ++runs_;
    cpu_meter meter{node_pids()};
    for (int c = 0; c < clients; ++c) {
      auto l = std::make_shared<client_loop>();
      l->front = front_;
      l->report_to = caf::actor_cast<caf::actor>(self);
      l->slot = &slots[static_cast<size_t>(c)];
      l->key_prefix = tag + "/c" + std::to_string(c) + "/";
      l->value = value;
      l->end = end;
      // A new id per run: a session's numbers never start again.
      if (sessions)
        l->session = tag + "/r" + std::to_string(runs_) + "/c" + std::to_string(c);
      sys_->spawn([l](caf::event_based_actor* a) -> caf::behavior {
        put_next(a, l);
        return {[](caf::ok_atom) {}}; // answers arrive through then()
      });
    }
    for (int c = 0; c < clients; ++c)
      self->receive([](caf::ok_atom) {});
    auto f = gather(slots, start);
    meter.finish(f);
    return f;
  }

  /// Failover rounds with a resident client (see run_failover).
  int failover(int rounds);

  void down() {
    front_ = nullptr;
    sys_.reset();
    cfg_.reset();
    if (up_)
      conclave::testing::run_command(bin_ + " cluster down --dir " + dir_.string()
                                     + " >/dev/null 2>&1");
    up_ = false;
  }

private:
  /// The members' pids, the primary's first (empty if a node.pid is missing).
  std::vector<pid_t> node_pids() const {
    std::vector<pid_t> out;
    if (auto p = pid_of(dir_, primary_))
      out.push_back(*p);
    for (auto& m : members_)
      if (m.first != primary_)
        if (auto p = pid_of(dir_, m.first))
          out.push_back(*p);
    if (out.size() != members_.size())
      out.clear();
    return out;
  }

  std::string bin_;
  fs::path dir_;
  uint64_t primary_ = 0;
  bool up_ = false;
  std::unique_ptr<caf::actor_system_config> cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  caf::actor front_;
  std::map<uint64_t, conclave::node::address> members_;
  std::string cluster_name_;
  std::string up_args_;
  uint64_t runs_ = 0;
};

// -- failover with a resident client -----------------------------------------

/// What the writer saw: every acknowledgement, with the primary that gave it.
struct ack_log {
  std::mutex mtx;
  std::vector<std::pair<clock_type::time_point, uint64_t>> acks;
  uint64_t failures = 0;
  std::string last_failure;
  std::atomic<bool> paused{false};
  std::atomic<bool> stop{false};
};

using resume_atom = caf::atom_constant<caf::atom("cn_bresume")>;

/// Strong puts through the client library in a closed loop, one at a time.
caf::behavior writer(caf::event_based_actor* self, caf::actor client,
                     std::shared_ptr<ack_log> log) {
  auto seq = std::make_shared<uint64_t>(0);
  auto next = std::make_shared<std::function<void()>>();
  *next = [self, client, log, seq, next] {
    if (log->stop)
      return self->quit();
    if (log->paused) {
      self->delayed_send(self, 5ms, resume_atom::value);
      return;
    }
    rp::txn_request req;
    req.ops.push_back({"kv", "fo/" + std::to_string((*seq)++), "v", rp::op_kind::put});
    self->request(client, 30s, std::move(req))
        .then(
            [log, next](rp::txn_result& r) {
              {
                std::lock_guard<std::mutex> guard{log->mtx};
                if (r.code == rp::errc::ok) {
                  log->acks.emplace_back(clock_type::now(), r.primary.value);
                } else {
                  ++log->failures;
                  log->last_failure = std::string{rp::to_string(r.code)};
                }
              }
              (*next)();
            },
            [log, next](caf::error&) {
              {
                std::lock_guard<std::mutex> guard{log->mtx};
                ++log->failures;
                log->last_failure = "no answer from the client actor";
              }
              (*next)();
            });
  };
  (*next)();
  return {[next](resume_atom) { (*next)(); }};
}

/// When, after the kill, a surviving member first answered a read as a
/// syncing primary and as a serving (acting) primary, and when the killed
/// member's front went down. Polls every member's front every 2 ms.
struct probe_times {
  std::mutex mtx;
  std::optional<clock_type::time_point> down, syncing, primary;
  std::atomic<bool> stop{false};
};

using poll_atom = caf::atom_constant<caf::atom("cn_bpoll")>;

caf::behavior prober(caf::event_based_actor* self,
                     std::shared_ptr<conclave::cluster::front_directory> dir,
                     std::vector<uint64_t> ids, uint64_t killed,
                     std::shared_ptr<probe_times> t) {
  if (auto f = dir->lookup(killed))
    self->monitor(f);
  self->set_down_handler([t](caf::down_msg&) {
    std::lock_guard<std::mutex> guard{t->mtx};
    if (!t->down)
      t->down = clock_type::now();
  });
  self->send(self, poll_atom::value);
  return {
      [=](poll_atom) {
        if (t->stop)
          return self->quit();
        for (auto id : ids) {
          if (id == killed)
            continue;
          auto f = dir->lookup(id);
          if (!f)
            continue;
          self->request(f, 1s, rp::read_request{"kv", "probe"})
              .then(
                  [t, id](rp::read_result& r) {
                    auto now = clock_type::now();
                    std::lock_guard<std::mutex> guard{t->mtx};
                    if (r.code != rp::errc::ok)
                      return;
                    if (r.replica_role == rp::role::syncing && !t->syncing)
                      t->syncing = now;
                    if (r.replica_role == rp::role::primary && !t->primary) {
                      t->primary = now;
                      if (!t->syncing) // a sync phase shorter than a poll
                        t->syncing = now;
                    }
                    (void)id;
                  },
                  [](caf::error&) {});
        }
        self->delayed_send(self, 2ms, poll_atom::value);
      },
  };
}

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::optional<pid_t> pid_of(const fs::path& dir, uint64_t id) {
  std::ifstream in{dir / ("node-" + std::to_string(id)) / "node.pid"};
  long pid = 0;
  if (!(in >> pid) || pid <= 0)
    return std::nullopt;
  return static_cast<pid_t>(pid);
}

/// Every node alive, with one applied lsn and digest.
bool replicas_equal(const std::string& bin, const fs::path& dir) {
  auto r = conclave::testing::run_command(bin + " cluster status --json --dir "
                                          + dir.string() + " 2>/dev/null");
  auto j = json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.contains("nodes"))
    return false;
  std::optional<std::pair<uint64_t, std::string>> seen;
  size_t n = 0;
  for (auto& node : j["nodes"]) {
    if (!node.value("alive", false) || !node["replica"].is_object())
      return false;
    std::pair<uint64_t, std::string> x{node["replica"].value("applied_lsn", uint64_t{0}),
                                       node["replica"].value("digest", std::string{})};
    if (seen && *seen != x)
      return false;
    seen = x;
    ++n;
  }
  return n > 0;
}

std::string stats_line(const char* what, std::vector<double> v) {
  std::ostringstream o;
  // p90 by nearest rank: the smallest value at or above 90 % of the rounds.
  auto sorted = v;
  std::sort(sorted.begin(), sorted.end());
  auto rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(sorted.size())));
  auto p90 = sorted[rank > 0 ? rank - 1 : 0];
  o << std::fixed << std::setprecision(1) << what << ": median "
    << conclave::bench::median(v) << " ms, p90 " << p90 << " ms, min "
    << *std::min_element(v.begin(), v.end()) << ", max "
    << *std::max_element(v.begin(), v.end()) << " (" << v.size() << " rounds)";
  return o.str();
}

int conclave_cluster::failover(int rounds) {
  std::vector<uint64_t> ids;
  for (auto& m : members_)
    ids.push_back(m.first);
  conclave::cluster::front_directory_options dopts;
  dopts.cluster = cluster_name_;
  dopts.members = members_;
  auto dir = std::make_shared<conclave::cluster::front_directory>(*sys_, dopts);
  if (dir->wait_connected(ids.size(), 10s) < ids.size()) {
    std::cerr << "repl_bench: not every member connected: " << dir->last_error() << '\n';
    return 1;
  }
  rp::client_options copts;
  for (auto id : ids)
    copts.members.push_back(rp::node_id{id});
  copts.lookup = [dir](rp::node_id id) { return dir->lookup(id.value); };
  copts.deadline = 20s;
  auto client = rp::spawn_client(*sys_, copts);
  auto log = std::make_shared<ack_log>();
  auto w = sys_->spawn(writer, client, log);
  auto acks = [&] {
    std::lock_guard<std::mutex> guard{log->mtx};
    return log->acks.size();
  };
  std::vector<double> first_commit, gap, to_down, to_syncing, to_primary, client_part;
  int status = 0;
  std::cout << "failover: SIGKILL of the primary while a resident client (client "
               "library, connected to every member) writes strong puts in a closed "
               "loop; cluster up --nodes 3 (TLS) "
            << up_args_ << std::endl;
  for (int r = 1; r <= rounds && status == 0; ++r) {
    // Steady writes first: 20 acknowledgements since the round began.
    auto start = acks();
    auto wait_until = clock_type::now() + 30s;
    while (acks() < start + 20 && clock_type::now() < wait_until)
      std::this_thread::sleep_for(5ms);
    uint64_t primary = 0;
    {
      std::lock_guard<std::mutex> guard{log->mtx};
      if (log->acks.size() >= start + 20)
        primary = log->acks.back().second;
    }
    auto pid = primary != 0 ? pid_of(dir_, primary) : std::nullopt;
    if (!pid) {
      std::cerr << "repl_bench: round " << r
                << ": no steady writes or no pid (last: " << log->last_failure << ")\n";
      status = 1;
      break;
    }
    auto t = std::make_shared<probe_times>();
    auto p = sys_->spawn(prober, dir, ids, primary, t);
    auto killed_at = clock_type::now();
    ::kill(*pid, SIGKILL);
    // The first acknowledgement by another member.
    std::optional<clock_type::time_point> first, last_before;
    auto limit = killed_at + 20s;
    while (!first && clock_type::now() < limit) {
      std::this_thread::sleep_for(1ms);
      std::lock_guard<std::mutex> guard{log->mtx};
      for (auto it = log->acks.rbegin(); it != log->acks.rend(); ++it) {
        if (it->first > killed_at && it->second != primary)
          first = it->first;
        if (it->first <= killed_at) {
          last_before = it->first;
          break;
        }
      }
    }
    t->stop = true;
    if (!first || !last_before) {
      std::cerr << "repl_bench: round " << r << ": no commit within 20 s of the kill\n";
      status = 1;
      break;
    }
    std::optional<clock_type::time_point> down, syncing, prim;
    {
      std::lock_guard<std::mutex> guard{t->mtx};
      down = t->down;
      syncing = t->syncing;
      prim = t->primary;
    }
    first_commit.push_back(ms_between(killed_at, *first));
    gap.push_back(ms_between(*last_before, *first));
    std::ostringstream line;
    line << std::fixed << std::setprecision(1) << "round " << r << ": killed primary "
         << primary << ", first commit by the new primary after " << first_commit.back()
         << " ms (gap between acknowledgements " << gap.back() << " ms)";
    if (down) {
      to_down.push_back(ms_between(killed_at, *down));
      line << "; link down " << to_down.back() << " ms";
    }
    if (syncing) {
      to_syncing.push_back(ms_between(killed_at, *syncing));
      line << ", syncing seen " << to_syncing.back() << " ms";
    }
    if (prim) {
      to_primary.push_back(ms_between(killed_at, *prim));
      client_part.push_back(ms_between(*prim, *first));
      line << ", serving seen " << to_primary.back() << " ms";
    }
    // The killed node back, every replica equal, before the next round.
    log->paused = true;
    auto restart = conclave::testing::run_command(
        bin_ + " cluster restart --timeout-ms 20000 --dir " + dir_.string() + " --node "
        + std::to_string(primary) + " 2>&1");
    bool equal = false;
    for (int i = 0; i < 200 && !equal && restart.status == 0; ++i) {
      equal = replicas_equal(bin_, dir_);
      if (!equal)
        std::this_thread::sleep_for(50ms);
    }
    line << "; replicas equal after restart: " << (equal ? "yes" : "NO");
    std::cout << line.str() << std::endl;
    if (restart.status != 0) {
      std::cerr << "repl_bench: restart failed: " << restart.out << '\n';
      status = 1;
    }
    if (!equal)
      status = 1;
    // The directory reconnects to the restarted node by itself.
    dir->wait_connected(ids.size(), 10s);
    log->paused = false;
    caf::anon_send(w, resume_atom::value);
  }
  log->stop = true;
  caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(client, caf::exit_reason::user_shutdown);
  if (!first_commit.empty()) {
    std::cout << stats_line("SIGKILL -> first commit acknowledged by the new primary",
                            first_commit)
              << '\n'
              << stats_line("gap between the last acknowledgement before and the first "
                            "after",
                            gap)
              << '\n';
    if (!to_down.empty())
      std::cout << stats_line("SIGKILL -> client's link to the primary down", to_down)
                << '\n';
    if (!to_syncing.empty())
      std::cout << stats_line("SIGKILL -> a read answered by a syncing new primary",
                              to_syncing)
                << '\n';
    if (!to_primary.empty())
      std::cout << stats_line("SIGKILL -> a read answered by the serving new primary",
                              to_primary)
                << '\n'
                << stats_line("serving seen -> first commit acknowledged (client)",
                              client_part)
                << '\n';
    std::lock_guard<std::mutex> guard{log->mtx};
    std::cout << "puts answered with an error (retried by the writer): " << log->failures
              << (log->last_failure.empty() ? "" : " (last: " + log->last_failure + ")")
              << std::endl;
  }
  return status;
}

// -- etcd ----------------------------------------------------------------------

class etcd_cluster {
public:
  etcd_cluster(std::string bin, fs::path dir)
      : bin_(std::move(bin)), dir_(std::move(dir)) {}
  ~etcd_cluster() { down(); }

  /// `extra`: more etcd flags (timing), kept for restarts.
  std::optional<std::string> up(std::vector<std::string> extra = {}) {
    fs::create_directories(dir_);
    extra_ = std::move(extra);
    std::string initial;
    for (int i = 1; i <= 3; ++i) {
      members_.push_back({"m" + std::to_string(i), conclave::testing::free_port(),
                          conclave::testing::free_port(), -1});
      initial += (i == 1 ? "" : ",") + members_.back().name
                 + "=http://127.0.0.1:" + std::to_string(members_.back().peer);
    }
    initial_ = initial;
    for (auto& m : members_)
      start(m);
    // The leader: the member whose status names itself; then a warm-up put.
    auto deadline = clock_type::now() + 30s;
    while (clock_type::now() < deadline) {
      for (auto& m : members_) {
        conclave::bench::http_connection c{m.client, 500ms};
        std::string body;
        if (!c.ok() || c.post("/v3/maintenance/status", "{}", body) != 200)
          continue;
        auto j = json::parse(body, nullptr, false);
        if (j.is_discarded() || !j.contains("header"))
          continue;
        auto self_id = j["header"].value("member_id", "0");
        auto leader = j.value("leader", "0");
        if (leader != "0" && leader == self_id
            && c.post("/v3/kv/put", R"({"key":"cmVhZHk=","value":"MQ=="})", body)
                   == 200) {
          leader_port_ = m.client;
          return std::nullopt;
        }
      }
      std::this_thread::sleep_for(50ms);
    }
    return "etcd did not elect a leader within 30 s (logs in " + dir_.string() + ")";
  }

  figures run(int clients, double seconds, const std::string& tag) {
    std::vector<client_slot> slots(static_cast<size_t>(clients));
    auto start = clock_type::now();
    auto end = start
               + std::chrono::duration_cast<clock_type::duration>(
                   std::chrono::duration<double>(seconds));
    auto value = conclave::bench::base64(value_of_256());
    std::vector<pid_t> pids;
    for (auto& m : members_)
      if (m.client == leader_port_)
        pids.insert(pids.begin(), m.pid);
      else
        pids.push_back(m.pid);
    cpu_meter meter{pids};
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c)
      threads.emplace_back([&, c] {
        auto& slot = slots[static_cast<size_t>(c)];
        conclave::bench::http_connection conn{leader_port_, 10s};
        if (!conn.ok()) {
          slot.error = "cannot connect to etcd";
          return;
        }
        auto prefix = tag + "/c" + std::to_string(c) + "/";
        std::string response;
        for (uint64_t seq = 0; clock_type::now() < end; ++seq) {
          auto body = R"({"key":")"
                      + conclave::bench::base64(prefix + std::to_string(seq))
                      + R"(","value":")" + value + R"("})";
          auto t0 = clock_type::now();
          auto status = conn.post("/v3/kv/put", body, response);
          if (status != 200) {
            slot.error = "etcd put answered " + std::to_string(status) + ": " + response;
            return;
          }
          slot.latency_ms.push_back(
              std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
        }
      });
    for (auto& t : threads)
      t.join();
    auto f = gather(slots, start);
    meter.finish(f);
    return f;
  }

  /// Failover rounds with a resident client (see below).
  int failover(int rounds, const std::string& label);

  void down() {
    for (auto& m : members_)
      conclave::bench::stop_child(m.pid);
    members_.clear();
  }

private:
  struct member {
    std::string name;
    uint16_t client = 0, peer = 0;
    pid_t pid = -1;
  };

  /// Starts (or restarts, on its data dir) one member.
  void start(member& m) {
    auto client = "http://127.0.0.1:" + std::to_string(m.client);
    auto peer = "http://127.0.0.1:" + std::to_string(m.peer);
    std::vector<std::string> args{bin_,
                                  "--name=" + m.name,
                                  "--data-dir=" + (dir_ / m.name).string(),
                                  "--listen-client-urls=" + client,
                                  "--advertise-client-urls=" + client,
                                  "--listen-peer-urls=" + peer,
                                  "--initial-advertise-peer-urls=" + peer,
                                  "--initial-cluster=" + initial_,
                                  "--initial-cluster-state=new",
                                  "--initial-cluster-token=conclave-repl-bench",
                                  "--log-level=error"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    m.pid = conclave::bench::spawn_logged(args, (dir_ / (m.name + ".log")).string());
  }

  /// The member that says it leads, or nullptr.
  member* leader() {
    for (auto& m : members_) {
      conclave::bench::http_connection c{m.client, 500ms};
      std::string body;
      if (!c.ok() || c.post("/v3/maintenance/status", "{}", body) != 200)
        continue;
      auto j = json::parse(body, nullptr, false);
      if (j.is_discarded() || !j.contains("header"))
        continue;
      auto leader = j.value("leader", "0");
      if (leader != "0" && leader == j["header"].value("member_id", "0"))
        return &m;
    }
    return nullptr;
  }

  std::string bin_;
  fs::path dir_;
  std::vector<member> members_;
  uint16_t leader_port_ = 0;
  std::string initial_;
  std::vector<std::string> extra_;
};

/// etcd as a client with a connection per member sees it: one writer thread
/// puts in a closed loop to the leader; when a put fails (the connection
/// died, or no answer in 250 ms: a put a follower forwarded to the dead
/// leader is never answered), it moves to the next member (a follower
/// forwards puts to the leader once there is one). Per round SIGKILL of the
/// leader, time to the first acknowledged put by a surviving member, the gap
/// between acknowledgements; the killed member is restarted on its data dir.
int etcd_cluster::failover(int rounds, const std::string& label) {
  auto log = std::make_shared<ack_log>();
  std::atomic<size_t> target{0};
  if (auto* l = leader())
    target = static_cast<size_t>(l - members_.data());
  std::vector<uint16_t> ports;
  for (auto& m : members_)
    ports.push_back(m.client);
  std::thread writer{[&, log] {
    std::unique_ptr<conclave::bench::http_connection> conn;
    size_t at = target;
    std::string response;
    for (uint64_t seq = 0; !log->stop; ++seq) {
      if (log->paused) {
        std::this_thread::sleep_for(5ms);
        continue;
      }
      if (!conn) {
        conn = std::make_unique<conclave::bench::http_connection>(ports[at], 250ms);
        if (!conn->ok()) {
          conn.reset();
          at = (at + 1) % ports.size();
          continue;
        }
      }
      auto body = R"({"key":")" + conclave::bench::base64("fo/" + std::to_string(seq))
                  + R"(","value":"dg=="})";
      if (conn->post("/v3/kv/put", body, response) == 200) {
        std::lock_guard<std::mutex> guard{log->mtx};
        log->acks.emplace_back(clock_type::now(), ports[at]);
      } else {
        conn.reset();
        at = (at + 1) % ports.size();
        std::lock_guard<std::mutex> guard{log->mtx};
        ++log->failures;
      }
    }
  }};
  auto acks = [&] {
    std::lock_guard<std::mutex> guard{log->mtx};
    return log->acks.size();
  };
  std::vector<double> first_commit, gap;
  int status = 0;
  std::cout << "etcd failover (" << label
            << "): SIGKILL of the leader while one client writes puts in a closed "
               "loop, moving to the next member when a put fails"
            << std::endl;
  for (int r = 1; r <= rounds && status == 0; ++r) {
    auto begun = acks();
    auto until = clock_type::now() + 30s;
    while (acks() < begun + 20 && clock_type::now() < until)
      std::this_thread::sleep_for(5ms);
    auto* l = leader();
    if (!l || acks() < begun + 20) {
      std::cerr << "repl_bench: etcd round " << r << ": no leader or no steady writes\n";
      status = 1;
      break;
    }
    auto killed_port = l->client;
    auto killed_at = clock_type::now();
    ::kill(l->pid, SIGKILL);
    std::optional<clock_type::time_point> first, last_before;
    while (!first && clock_type::now() < killed_at + 30s) {
      std::this_thread::sleep_for(1ms);
      std::lock_guard<std::mutex> guard{log->mtx};
      for (auto it = log->acks.rbegin(); it != log->acks.rend(); ++it) {
        if (it->first > killed_at && it->second != killed_port)
          first = it->first;
        if (it->first <= killed_at) {
          last_before = it->first;
          break;
        }
      }
    }
    if (!first || !last_before) {
      std::cerr << "repl_bench: etcd round " << r << ": no put within 30 s of the kill\n";
      status = 1;
      break;
    }
    first_commit.push_back(ms_between(killed_at, *first));
    gap.push_back(ms_between(*last_before, *first));
    std::cout << std::fixed << std::setprecision(1) << "etcd round " << r
              << ": killed the leader, first put acknowledged after "
              << first_commit.back() << " ms (gap " << gap.back() << " ms)" << std::endl;
    log->paused = true;
    ::waitpid(l->pid, nullptr, 0);
    start(*l);
    // Back with a leader before the next round.
    auto back = clock_type::now() + 30s;
    while (clock_type::now() < back) {
      conclave::bench::http_connection c{killed_port, 500ms};
      std::string body;
      if (c.ok() && c.post("/v3/maintenance/status", "{}", body) == 200 && leader())
        break;
      std::this_thread::sleep_for(50ms);
    }
    log->paused = false;
  }
  log->stop = true;
  writer.join();
  if (!first_commit.empty())
    std::cout << stats_line(
        ("etcd (" + label + "): SIGKILL -> first put acknowledged").c_str(), first_commit)
              << '\n'
              << stats_line(
                     ("etcd (" + label + "): gap between acknowledgements").c_str(), gap)
              << std::endl;
  return status;
}

// -- report ------------------------------------------------------------------

struct summary {
  double rate = 0, p50 = 0, p99 = 0;
  /// CPU microseconds per commit: all servers, the primary (leader) alone,
  /// the clients (this process); negative: not measured.
  double cpu_all_us = -1, cpu_leader_us = -1, cpu_clients_us = -1;
};

summary summarize(figures f) {
  summary s;
  s.rate = f.rate();
  if (f.commits > 0) {
    auto per = [&](double secs) {
      return secs < 0 ? -1 : secs * 1e6 / double(f.commits);
    };
    s.cpu_all_us = per(f.cpu_all);
    s.cpu_leader_us = per(f.cpu_leader);
    s.cpu_clients_us = per(f.cpu_clients);
  }
  s.p50 = conclave::bench::percentile(f.latency_ms, 0.5);
  s.p99 = conclave::bench::percentile(f.latency_ms, 0.99);
  return s;
}

std::string line(const char* who, int clients, const summary& s) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(0) << who << " clients=" << clients
    << " commits/s=" << s.rate << std::setprecision(2) << " p50_ms=" << s.p50
    << " p99_ms=" << s.p99;
  if (s.cpu_all_us >= 0)
    o << std::setprecision(0) << " cpu_us/commit servers=" << s.cpu_all_us
      << " leader=" << s.cpu_leader_us;
  if (s.cpu_clients_us >= 0)
    o << std::setprecision(0) << " clients=" << s.cpu_clients_us;
  return o.str();
}

std::optional<std::vector<int>> parse_counts(const std::string& text) {
  std::vector<int> v;
  std::stringstream in{text};
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    long n = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n < 1 || n > 4096)
      return std::nullopt;
    v.push_back(static_cast<int>(n));
  }
  if (v.empty())
    return std::nullopt;
  return v;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  const char* usage =
      "usage: repl_bench [--etcd BIN] [--skip-etcd] [--conclave BIN] "
      "[--clients 1,8,32,128] [--seconds S] [--quick] [--sessions]\n"
      "       repl_bench --failover ROUNDS [--up-args 'CLUSTER UP ARGS'] [--skip-etcd]\n";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::optional<std::string> {
      if (i + 1 >= argc)
        return std::nullopt;
      return std::string{argv[++i]};
    };
    std::optional<std::string> v;
    if (a == "--help" || a == "-h") {
      std::cout << usage;
      return 0;
    } else if (a == "--sessions") {
      o.sessions = true;
    } else if (a == "--skip-etcd") {
      o.skip_etcd = true;
    } else if (a == "--quick") {
      o.skip_etcd = true;
      o.clients = {1, 8};
      o.seconds = 0.5;
    } else if (a == "--failover" && (v = next())) {
      char* end = nullptr;
      long n = std::strtol(v->c_str(), &end, 10);
      if (*end != '\0' || n < 1 || n > 1000) {
        std::cerr << "repl_bench: --failover wants a round count 1..1000\n";
        return 2;
      }
      o.failover_rounds = static_cast<int>(n);
    } else if (a == "--up-args" && (v = next())) {
      o.up_args = *v;
    } else if (a == "--etcd" && (v = next())) {
      o.etcd = *v;
    } else if (a == "--conclave" && (v = next())) {
      o.conclave = *v;
    } else if (a == "--clients" && (v = next())) {
      auto c = parse_counts(*v);
      if (!c) {
        std::cerr << "repl_bench: --clients wants counts 1..4096 like 1,8,32\n";
        return 2;
      }
      o.clients = *c;
    } else if (a == "--seconds" && (v = next())) {
      char* end = nullptr;
      o.seconds = std::strtod(v->c_str(), &end);
      if (*end != '\0' || !(o.seconds > 0 && o.seconds <= 3600)) {
        std::cerr << "repl_bench: --seconds wants a number in (0, 3600]\n";
        return 2;
      }
    } else {
      std::cerr << "repl_bench: unknown or incomplete argument " << a << "\n" << usage;
      return 2;
    }
  }
  if (o.failover_rounds > 0) {
    o.etcd_failover = !o.skip_etcd;
    o.skip_etcd = true;
    if (o.etcd_failover && ::access(o.etcd.c_str(), X_OK) != 0) {
      std::cerr << "repl_bench: no etcd at " << o.etcd << " (or pass --skip-etcd)\n";
      return 2;
    }
  }
  if (!o.skip_etcd && ::access(o.etcd.c_str(), X_OK) != 0) {
    std::cerr << "repl_bench: no etcd at " << o.etcd
              << " (scripts/bench-repl.sh installs it), or pass --skip-etcd\n";
    return 2;
  }

  char tmpl[] = "/tmp/conclave-repl-bench.XXXXXX";
  if (!::mkdtemp(tmpl)) {
    std::cerr << "repl_bench: cannot create a temporary directory\n";
    return 1;
  }
  fs::path root{tmpl};
  int status = 0;
  {
    conclave_cluster cc{o.conclave, root / "conclave"};
    std::unique_ptr<etcd_cluster> ec;
    if (auto err = cc.up(o.up_args)) {
      std::cerr << "repl_bench: " << *err << '\n';
      status = 1;
    }
    if (status == 0 && o.failover_rounds > 0) {
      status = cc.failover(o.failover_rounds);
      o.clients.clear();
      cc.down();
      for (auto& [label, flags] :
           std::vector<std::pair<std::string, std::vector<std::string>>>{
               {"defaults 100/1000 ms", {}},
               {"tuned 10/100 ms",
                {"--heartbeat-interval=10", "--election-timeout=100"}}}) {
        if (status != 0 || !o.etcd_failover)
          break;
        etcd_cluster e{o.etcd, root / ("etcd-" + std::to_string(flags.size()))};
        if (auto err = e.up(flags)) {
          std::cerr << "repl_bench: " << *err << '\n';
          status = 1;
          break;
        }
        status = e.failover(o.failover_rounds, label);
      }
    }
    // Idle past the nodes' link timeout (1 s) before the first put: the
    // connection must survive it (it did not before clients sent middleman
    // heartbeats), so the smoke run checks that too.
    if (status == 0 && o.failover_rounds == 0)
      std::this_thread::sleep_for(1500ms);
    if (status == 0 && !o.skip_etcd) {
      ec = std::make_unique<etcd_cluster>(o.etcd, root / "etcd");
      if (auto err = ec->up()) {
        std::cerr << "repl_bench: " << *err << '\n';
        status = 1;
      }
    }
    if (!o.clients.empty())
      std::cout << "strong puts, 256-byte values, distinct keys, closed loop, "
                << o.seconds << " s per case; conclave: cluster up --nodes 3 (TLS)"
                << (o.skip_etcd ? "" : "; etcd: 3 members, JSON gateway, keep-alive")
                << '\n';
    for (size_t k = 0; status == 0 && k < o.clients.size(); ++k) {
      int n = o.clients[k];
      auto tag = "n" + std::to_string(n);
      std::optional<summary> mine, theirs;
      auto run_conclave = [&] {
        auto f = cc.run(n, o.seconds, tag);
        if (!f.error.empty()) {
          std::cerr << "repl_bench: conclave, " << n << " clients: " << f.error << '\n';
          status = 1;
        }
        mine = summarize(std::move(f));
        std::cout << line("conclave", n, *mine) << std::endl;
      };
      auto run_etcd = [&] {
        auto f = ec->run(n, o.seconds, tag);
        if (!f.error.empty()) {
          std::cerr << "repl_bench: etcd, " << n << " clients: " << f.error << '\n';
          status = 1;
        }
        theirs = summarize(std::move(f));
        std::cout << line("etcd    ", n, *theirs) << std::endl;
      };
      // With --sessions: the same case with a session op on every put, in
      // alternating order with the plain one.
      std::optional<summary> sessioned;
      auto run_sessioned = [&] {
        auto f = cc.run(n, o.seconds, tag + "s", true);
        if (!f.error.empty()) {
          std::cerr << "repl_bench: conclave with sessions, " << n
                    << " clients: " << f.error << '\n';
          status = 1;
        }
        sessioned = summarize(std::move(f));
        std::cout << line("sessions", n, *sessioned) << std::endl;
      };
      if (o.sessions && k % 2 == 1)
        run_sessioned();
      if (!ec) {
        run_conclave();
      } else if (k % 2 == 0) {
        run_conclave();
        run_etcd();
      } else {
        run_etcd();
        run_conclave();
      }
      if (o.sessions && k % 2 == 0)
        run_sessioned();
      if (mine && sessioned && mine->rate > 0 && mine->p99 > 0)
        std::cout << std::fixed << std::setprecision(2) << "ratio    clients=" << n
                  << " commits/s sessions/plain=" << sessioned->rate / mine->rate
                  << " p99 sessions/plain=" << sessioned->p99 / mine->p99 << std::endl;
      if (mine && mine->rate == 0) {
        std::cerr << "repl_bench: conclave, " << n << " clients: no commit\n";
        status = 1;
      }
      if (mine && theirs && theirs->rate > 0 && theirs->p99 > 0)
        std::cout << std::fixed << std::setprecision(2) << "ratio    clients=" << n
                  << " commits/s conclave/etcd=" << mine->rate / theirs->rate
                  << " p99 conclave/etcd=" << mine->p99 / theirs->p99 << std::endl;
    }
  }
  if (status == 0)
    fs::remove_all(root);
  else
    std::cerr << "repl_bench: files kept in " << root << '\n';
  return status;
}
