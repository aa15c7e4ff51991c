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
// order alternating with the client count. Nothing about speed is asserted:
// the exit status is 1 only if something did not work (a put failed, a
// cluster did not come up).
//
//   repl_bench [--etcd BIN] [--skip-etcd] [--clients 1,8,32,128]
//              [--seconds S] [--quick]
#include "actors/replication/messages.hpp"
#include "actors/replication/type_ids.hpp"
#include "runtime/cluster/client_connect.hpp"
#include "runtime/cluster/cluster.hpp"
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
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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
};

/// One measured case: commits, wall time, commit latencies (ms).
struct figures {
  uint64_t commits = 0;
  double seconds = 0;
  std::vector<double> latency_ms;
  std::string error; ///< why a put failed; empty when all succeeded

  double rate() const { return seconds > 0 ? double(commits) / seconds : 0; }
};

std::string value_of_256() {
  return std::string(256, 'v');
}

// -- conclave ----------------------------------------------------------------

/// What one client actor measured; written by the actor, read by main after
/// the actor's "done" message.
struct client_slot {
  std::vector<double> latency_ms;
  std::string error;
};

struct client_loop {
  caf::actor front;
  caf::actor report_to;
  client_slot* slot = nullptr;
  std::string key_prefix;
  std::string value;
  clock_type::time_point end;
  uint64_t seq = 0;
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
  std::optional<std::string> up() {
    auto out = conclave::testing::run_command(bin_ + " cluster up --json --nodes 3 --dir "
                                              + dir_.string() + " 2>&1");
    if (out.status != 0)
      return "conclave cluster up failed: " + out.out;
    up_ = true;
    auto access = conclave::cluster::client_access_of(dir_.string());
    if (!access)
      return std::string{"no cluster.json in "} + dir_.string();
    auto members = conclave::node::parse_peers(access->peers);
    if (!members)
      return "peers: " + members.error();
    // The system keeps a reference to its config: both live as long as this.
    cfg_ = std::make_unique<caf::actor_system_config>();
    conclave::cluster::configure_client(*cfg_, access->ca, access->cert, access->key);
    // As the nodes: CAF's default work-stealing threads poll while idle and
    // would take CPU from the nodes on a small machine (../shared/CAF-0.17.md).
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
          return std::nullopt;
        }
        if (named != 0)
          break;
      }
      std::this_thread::sleep_for(50ms);
    }
    return "no primary committed within 60 s (last: " + last + ")";
  }

  figures run(int clients, double seconds, const std::string& tag) {
    figures f;
    caf::scoped_actor self{*sys_};
    std::vector<client_slot> slots(static_cast<size_t>(clients));
    auto start = clock_type::now();
    auto end = start
               + std::chrono::duration_cast<clock_type::duration>(
                   std::chrono::duration<double>(seconds));
    auto value = value_of_256();
    for (int c = 0; c < clients; ++c) {
      auto l = std::make_shared<client_loop>();
      l->front = front_;
      l->report_to = caf::actor_cast<caf::actor>(self);
      l->slot = &slots[static_cast<size_t>(c)];
      l->key_prefix = tag + "/c" + std::to_string(c) + "/";
      l->value = value;
      l->end = end;
      sys_->spawn([l](caf::event_based_actor* a) -> caf::behavior {
        put_next(a, l);
        return {[](caf::ok_atom) {}}; // answers arrive through then()
      });
    }
    for (int c = 0; c < clients; ++c)
      self->receive([](caf::ok_atom) {});
    f.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    for (auto& s : slots) {
      f.commits += s.latency_ms.size();
      f.latency_ms.insert(f.latency_ms.end(), s.latency_ms.begin(), s.latency_ms.end());
      if (f.error.empty() && !s.error.empty())
        f.error = s.error;
    }
    return f;
  }

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
  std::string bin_;
  fs::path dir_;
  bool up_ = false;
  std::unique_ptr<caf::actor_system_config> cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  caf::actor front_;
};

// -- etcd ----------------------------------------------------------------------

class etcd_cluster {
public:
  etcd_cluster(std::string bin, fs::path dir)
      : bin_(std::move(bin)), dir_(std::move(dir)) {}
  ~etcd_cluster() { down(); }

  std::optional<std::string> up() {
    fs::create_directories(dir_);
    std::string initial;
    for (int i = 1; i <= 3; ++i) {
      members_.push_back({"m" + std::to_string(i), conclave::testing::free_port(),
                          conclave::testing::free_port(), -1});
      initial += (i == 1 ? "" : ",") + members_.back().name
                 + "=http://127.0.0.1:" + std::to_string(members_.back().peer);
    }
    for (auto& m : members_) {
      auto client = "http://127.0.0.1:" + std::to_string(m.client);
      auto peer = "http://127.0.0.1:" + std::to_string(m.peer);
      m.pid = conclave::bench::spawn_logged(
          {bin_, "--name=" + m.name, "--data-dir=" + (dir_ / m.name).string(),
           "--listen-client-urls=" + client, "--advertise-client-urls=" + client,
           "--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
           "--initial-cluster=" + initial, "--initial-cluster-state=new",
           "--initial-cluster-token=conclave-repl-bench", "--log-level=error"},
          (dir_ / (m.name + ".log")).string());
    }
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
    figures f;
    std::vector<client_slot> slots(static_cast<size_t>(clients));
    auto start = clock_type::now();
    auto end = start
               + std::chrono::duration_cast<clock_type::duration>(
                   std::chrono::duration<double>(seconds));
    auto value = conclave::bench::base64(value_of_256());
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
    f.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    for (auto& s : slots) {
      f.commits += s.latency_ms.size();
      f.latency_ms.insert(f.latency_ms.end(), s.latency_ms.begin(), s.latency_ms.end());
      if (f.error.empty() && !s.error.empty())
        f.error = s.error;
    }
    return f;
  }

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
  std::string bin_;
  fs::path dir_;
  std::vector<member> members_;
  uint16_t leader_port_ = 0;
};

// -- report ------------------------------------------------------------------

struct summary {
  double rate = 0, p50 = 0, p99 = 0;
};

summary summarize(figures f) {
  summary s;
  s.rate = f.rate();
  s.p50 = conclave::bench::percentile(f.latency_ms, 0.5);
  s.p99 = conclave::bench::percentile(f.latency_ms, 0.99);
  return s;
}

std::string line(const char* who, int clients, const summary& s) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(0) << who << " clients=" << clients
    << " commits/s=" << s.rate << std::setprecision(2) << " p50_ms=" << s.p50
    << " p99_ms=" << s.p99;
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
      "usage: repl_bench [--etcd BIN] [--skip-etcd] [--clients 1,8,32,128] "
      "[--seconds S] [--quick]\n";
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
    } else if (a == "--skip-etcd") {
      o.skip_etcd = true;
    } else if (a == "--quick") {
      o.skip_etcd = true;
      o.clients = {1, 8};
      o.seconds = 0.5;
    } else if (a == "--etcd" && (v = next())) {
      o.etcd = *v;
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
    if (auto err = cc.up()) {
      std::cerr << "repl_bench: " << *err << '\n';
      status = 1;
    }
    // Idle past the nodes' link timeout (1 s) before the first put: the
    // connection must survive it (it did not before clients sent middleman
    // heartbeats), so the smoke run checks that too.
    if (status == 0)
      std::this_thread::sleep_for(1500ms);
    if (status == 0 && !o.skip_etcd) {
      ec = std::make_unique<etcd_cluster>(o.etcd, root / "etcd");
      if (auto err = ec->up()) {
        std::cerr << "repl_bench: " << *err << '\n';
        status = 1;
      }
    }
    std::cout << "strong puts, 256-byte values, distinct keys, closed loop, " << o.seconds
              << " s per case; conclave: cluster up --nodes 3 (TLS)"
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
      if (!ec) {
        run_conclave();
      } else if (k % 2 == 0) {
        run_conclave();
        run_etcd();
      } else {
        run_etcd();
        run_conclave();
      }
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
