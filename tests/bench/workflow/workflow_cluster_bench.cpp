// Workflow benchmark across nodes: prints figures, asserts nothing.
//
//   workflow_cluster_bench --dir D [--conclave BIN] [--jobs N] [--kills R]
//                          [--pending P] [--only throughput|redispatch|memory]
//                          [--memory-mode pending|claimed|both] [--window W]
//
// D is a running `conclave cluster up` directory (scripts/bench-workflow-
// cluster.sh starts one: 3 nodes on loopback, TLS, durable store). This
// process is a client, like `conclave job`: the workflow client actor over
// the replicated store adapter over a replication client, connected to every
// member with the client certificate of D. The nodes run the schedulers,
// agents and supervisors as `conclave node` does.
//
// 1. Throughput: N 1-step jobs `sleep:0`, submitted with W submissions in
//    flight (the client groups them into store transactions), then polled
//    with list(processed) until all are final. Rates come from the jobs'
//    own event timestamps (wall-clock ns, written by the nodes and the
//    client): jobs/s = N / (last "completed" - first "received"); a 1-step
//    job makes 2 step transitions (pending -> processing -> processed).
//    Latency = "completed" - "received" of each job, split into the wait
//    for a claim ("received" -> "step_started") and the run
//    ("step_started" -> "step_completed"). The nodes' /metrics before and
//    after give replicated commits and log syncs per job.
// 2. Re-dispatch after kill -9: a job with one `sleep:5000` step (timeout
//    30 s); once a node has claimed it, that node is killed with
//    `conclave cluster kill --signal KILL`; the job is read every 5 ms until
//    its step runs attempt 2 on another node. Reported: from the start of
//    the kill command to the new claim's "step_started" event (and to when
//    this client saw it). The node is restarted (`conclave cluster
//    restart`) before the next round. Kills of the leader and of followers
//    are reported apart: the supervisor acts on the leader.
// 3. Memory per job: each node's resident set (VmRSS of D/node-I/node.pid)
//    before and after P more jobs. "pending": 1-step jobs of a kind no node
//    serves (the kind check is the client's; this client declares the kind),
//    so every job stays pending. "claimed": 1-step jobs `sleep:600000`
//    (timeout 15 min): every node claims and dispatches them, so they end up
//    processing, holding a running step each at the nodes.
#include "actors/replication/client.hpp"
#include "actors/store/store_interface.hpp"
#include "actors/workflow/client.hpp"
#include "actors/workflow/interfaces.hpp"
#include "actors/workflow/replicated_store.hpp"
#include "actors/workflow/type_ids.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/store_access.hpp"
#include "tests/bench/support/stats.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/process_tools.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#ifndef CONCLAVE_BIN
#define CONCLAVE_BIN "conclave"
#endif

namespace wf = conclave::workflow;
namespace rp = conclave::replication;
namespace cl = conclave::cluster;
namespace atoms = conclave::workflow_atoms;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using conclave::bench::median;
using conclave::bench::percentile;

namespace {

struct options {
  std::string dir;
  std::string conclave = CONCLAVE_BIN;
  int jobs = 2000;
  int kills = 10;
  int pending = 20000;
  size_t window = 512;
  std::string only;
  std::string memory_mode = "both";
};

/// Wall-clock ns since the Unix epoch: the workflow's time base.
int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double ms_of(int64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

/// A run's id prefix: jobs of earlier runs on the same cluster are not counted.
std::string run_prefix() {
  return "b" + std::to_string(wall_ns() / 1000000 % 100000000);
}

/// The client chain of `conclave job`: connection to every member,
/// replication client, store adapter, workflow client.
class session {
public:
  session(const cl::store_access& a, const std::map<uint64_t, conclave::node::address>& m,
          std::set<std::string> kinds)
      : conn_(a, m, 1s, [](caf::actor_system_config& cfg) {
          conclave::store::add_store_types(cfg);
          wf::add_workflow_types(cfg);
          cfg.add_message_types<caf::id_block::conclave_election>();
        }) {
    conn_.wait_ready(2s);
    auto copts = conn_.client_options();
    copts.deadline = 5s;
    copts.attempt_timeout = 1s;
    kv_ = std::make_unique<rp::kv_client>(conn_.system(), copts);
    wf::replicated_store_options sopts;
    sopts.client = kv_->actor();
    sopts.request_timeout = 6s;
    store_ = wf::spawn_replicated_store(conn_.system(), sopts);
    wf::client_options c;
    c.store = store_;
    c.known_kinds = std::move(kinds);
    c.id_prefix = run_prefix();
    c.clock_offset = std::chrono::duration_cast<wf::duration>(
        std::chrono::system_clock::now().time_since_epoch()
        - steady::now().time_since_epoch());
    client_ = wf::spawn_client(conn_.system(), std::move(c));
  }

  caf::actor_system& system() { return conn_.system(); }
  const wf::client_actor& client() const { return client_; }

  /// One request to the client; nullopt on an error or no answer in time.
  template <class Result, class... Ts>
  std::optional<Result> ask(Ts&&... xs) {
    return ask_within<Result>(8s, std::forward<Ts>(xs)...);
  }

  template <class Result, class... Ts>
  std::optional<Result> ask_within(caf::timespan timeout, Ts&&... xs) {
    caf::scoped_actor self{system()};
    std::optional<Result> out;
    self->request(client_, timeout, std::forward<Ts>(xs)...)
        .receive([&](Result& r) { out = std::move(r); }, [&](caf::error&) {});
    return out;
  }

private:
  cl::store_connection conn_;
  std::unique_ptr<rp::kv_client> kv_;
  conclave::store::store_actor store_;
  wf::client_actor client_;
};

wf::job_spec one_step(const std::string& id, const std::string& kind,
                      const std::string& payload, wf::duration timeout) {
  wf::job_spec s;
  s.id = wf::job_id{id};
  wf::step_spec st;
  st.agent_kind = kind;
  st.payload = payload;
  st.timeout = timeout;
  s.steps.push_back(std::move(st));
  return s;
}

struct submitted {
  std::atomic<size_t> left{0};
  std::atomic<size_t> failed{0};
  std::vector<int64_t> reply_ns; ///< wall clock of each answer
  std::string first_error;
};

/// Submits `specs` from one actor with at most `window` submissions in flight
/// (CAF 0.17's table of awaited responses is O(outstanding) per reply) and
/// waits for every answer.
std::shared_ptr<submitted> submit_all(session& s, std::vector<wf::job_spec> specs,
                                      size_t window) {
  auto out = std::make_shared<submitted>();
  out->left = specs.size();
  out->reply_ns.resize(specs.size());
  auto all = std::make_shared<std::vector<wf::job_spec>>(std::move(specs));
  auto client = s.client();
  s.system().spawn([client, all, out, window](caf::event_based_actor* self) {
    auto next = std::make_shared<size_t>(0);
    auto send_one = std::make_shared<std::function<void()>>();
    *send_one = [self, client, all, out, next,
                 weak = std::weak_ptr<std::function<void()>>(send_one)] {
      if (*next >= all->size())
        return;
      auto i = (*next)++;
      auto again = weak.lock();
      self->request(client, 30s, atoms::submit_atom_v, (*all)[i])
          .then(
              [out, i, again](wf::job_id&) {
                out->reply_ns[i] = wall_ns();
                --out->left;
                (*again)();
              },
              [self, out, i, again](caf::error& e) {
                if (out->failed++ == 0)
                  out->first_error = self->system().render(e);
                out->reply_ns[i] = wall_ns();
                --out->left;
                (*again)();
              });
    };
    for (size_t k = 0; k < std::min(window, all->size()); ++k)
      (*send_one)();
    // `send_one` lives as long as the handlers that capture it.
    self->attach_functor([send_one] { *send_one = nullptr; });
  });
  while (out->left > 0)
    std::this_thread::sleep_for(1ms);
  return out;
}

/// Ids in `state` that start with `prefix` (nullopt if the list failed).
std::optional<size_t> count_in(session& s, wf::step_state state,
                               const std::string& prefix) {
  // A list of an active state reads every active job's document: slow with
  // tens of thousands of them.
  auto ids = s.ask_within<std::vector<wf::job_id>>(60s, atoms::list_atom_v, state);
  if (!ids)
    return std::nullopt;
  size_t n = 0;
  for (auto& id : *ids)
    if (id.value.compare(0, prefix.size(), prefix) == 0)
      ++n;
  return n;
}

// -- the nodes' metrics -----------------------------------------------------------

/// Sum over every node's /metrics of each metric name (labels dropped).
std::map<std::string, double> scrape(const std::vector<cl::node_view>& views) {
  std::map<std::string, double> sums;
  for (auto& v : views) {
    auto colon = v.metrics.rfind(':');
    if (!v.alive || colon == std::string::npos)
      continue;
    auto body = conclave::testing::http_exchange(
        v.metrics.substr(0, colon),
        static_cast<uint16_t>(std::stoi(v.metrics.substr(colon + 1))),
        "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n", 2000ms);
    std::istringstream in{body};
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#')
        continue;
      auto sp = line.rfind(' ');
      if (sp == std::string::npos)
        continue;
      auto name = line.substr(0, std::min(line.find('{'), sp));
      try {
        sums[name] += std::stod(line.substr(sp + 1));
      } catch (...) {
      }
    }
  }
  return sums;
}

double delta(const std::map<std::string, double>& a,
             const std::map<std::string, double>& b, const std::string& name) {
  auto get = [&](const std::map<std::string, double>& m) {
    auto i = m.find(name);
    return i == m.end() ? 0.0 : i->second;
  };
  return get(b) - get(a);
}

long rss_kb(int pid) {
  std::ifstream f{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::atol(line.c_str() + 6);
  return -1;
}

/// User + system CPU seconds of every live node (/proc/PID/stat).
double nodes_cpu_s(const std::string& dir) {
  double sum = 0;
  for (auto& v : cl::read_views(dir)) {
    if (!v.alive)
      continue;
    std::ifstream f{"/proc/" + std::to_string(v.pid) + "/stat"};
    std::string stat;
    std::getline(f, stat);
    auto close = stat.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream in{stat.substr(close + 2)};
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && in >> field; ++i) {
      if (i == 14)
        utime = std::stod(field);
      if (i == 15)
        stime = std::stod(field);
    }
    sum += (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  return sum;
}

double own_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

// -- the summary ------------------------------------------------------------------

std::vector<std::pair<std::string, std::string>> summary;

void remember(const std::string& what, const char* fmt, double a = 0, double b = 0,
              double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  summary.emplace_back(what, buf);
}

// -- 1. throughput ----------------------------------------------------------------

void throughput(session& s, const options& o) {
  auto prefix = run_prefix() + "-tp-";
  std::vector<wf::job_spec> specs;
  for (int i = 0; i < o.jobs; ++i)
    specs.push_back(one_step(prefix + std::to_string(i), "sleep", "0", 30s));
  auto before = scrape(cl::read_views(o.dir));
  auto cpu_before = nodes_cpu_s(o.dir);
  auto own_before = own_cpu_s();
  auto t0 = steady::now();
  auto sub = submit_all(s, specs, o.window);
  auto t_sub = steady::now();
  size_t done = 0, failed = 0;
  auto last_change = steady::now();
  while (done + failed < static_cast<size_t>(o.jobs)) {
    std::this_thread::sleep_for(100ms);
    auto p = count_in(s, wf::step_state::processed, prefix);
    auto e = count_in(s, wf::step_state::error, prefix);
    if (p && e && *p + *e != done + failed) {
      done = *p;
      failed = *e;
      last_change = steady::now();
    }
    if (steady::now() - last_change > 60s) {
      std::printf("throughput: no progress for 60 s (%zu processed, %zu failed of %d)\n",
                  done, failed, o.jobs);
      break;
    }
  }
  auto t_done = steady::now();
  auto cpu_after = nodes_cpu_s(o.dir);
  // The nodes publish their replica's figures on a status tick.
  std::this_thread::sleep_for(1500ms);
  auto after = scrape(cl::read_views(o.dir));
  auto secs = [](steady::duration d) { return std::chrono::duration<double>(d).count(); };
  std::printf(
      "throughput: %d jobs submitted in %.2f s (%zu refused%s%s), all final after "
      "%.2f s (polled every 100 ms): %zu processed, %zu error\n",
      o.jobs, secs(t_sub - t0), sub->failed.load(), sub->failed ? ", first: " : "",
      sub->first_error.c_str(), secs(t_done - t0), done, failed);
  // Each job's events: received, step_started, step_completed, completed.
  std::vector<double> lat, wait, run, submit_ms;
  int64_t first = INT64_MAX, last = 0;
  size_t read = 0;
  for (int i = 0; i < o.jobs; ++i) {
    auto evs = s.ask<std::vector<wf::job_event>>(atoms::events_atom_v,
                                                 wf::job_id{specs[i].id}, uint64_t{1});
    if (!evs)
      continue;
    int64_t received = 0, started = 0, step_done = 0, completed = 0;
    for (auto& e : *evs) {
      auto at = e.at.count();
      switch (e.kind) {
      case wf::event_kind::received:
        received = at;
        break;
      case wf::event_kind::step_started:
        started = started ? started : at;
        break;
      case wf::event_kind::step_completed:
        step_done = at;
        break;
      case wf::event_kind::completed:
        completed = at;
        break;
      default:
        break;
      }
    }
    if (!received || !completed)
      continue;
    ++read;
    first = std::min(first, received);
    last = std::max(last, completed);
    lat.push_back(ms_of(completed - received));
    if (started) {
      wait.push_back(ms_of(started - received));
      if (step_done)
        run.push_back(ms_of(step_done - started));
    }
    if (sub->reply_ns[i])
      submit_ms.push_back(ms_of(sub->reply_ns[i] - received));
  }
  if (read == 0) {
    std::printf("throughput: no job's events could be read\n");
    return;
  }
  auto span_s = static_cast<double>(last - first) / 1e9;
  auto jobs_s = static_cast<double>(read) / span_s;
  auto p50 = percentile(lat, 0.5), p99 = percentile(lat, 0.99);
  std::printf("throughput: %zu jobs from first received to last completed in %.2f s: "
              "%.0f jobs/s, %.0f step transitions/s (2 per job)\n",
              read, span_s, jobs_s, 2 * jobs_s);
  std::printf(
      "  job latency received -> completed: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", p50,
      p99, percentile(lat, 1.0));
  std::printf("  of which received -> step_started (waiting for a claim): p50 %.1f ms, "
              "p99 %.1f ms; step_started -> step_completed (dispatch, sleep 0, "
              "answer): p50 %.1f ms, p99 %.1f ms\n",
              percentile(wait, 0.5), percentile(wait, 0.99), percentile(run, 0.5),
              percentile(run, 0.99));
  std::printf("  submission answered after received: p50 %.1f ms, p99 %.1f ms\n",
              percentile(submit_ms, 0.5), percentile(submit_ms, 0.99));
  auto cpu_s = cpu_after - cpu_before;
  auto own_s = own_cpu_s() - own_before;
  std::printf("  CPU: nodes %.1f s (%.0f us per transition, all three), this client "
              "%.1f s (%.0f us per transition)\n",
              cpu_s, cpu_s * 1e6 / (2.0 * o.jobs), own_s, own_s * 1e6 / (2.0 * o.jobs));
  auto members = static_cast<double>(std::max<size_t>(1, cl::read_views(o.dir).size()));
  auto lsn = delta(before, after, "conclave_replica_commit_lsn") / members;
  auto lat_sum = delta(before, after, "conclave_replica_commit_latency_seconds_sum");
  auto lat_n = delta(before, after, "conclave_replica_commit_latency_seconds_count");
  std::printf(
      "  replicated store, from the nodes' metrics: %.0f strong commits (%.2f per "
      "job), log advanced %.0f records (%.2f per job); commit latency at the "
      "primary (request in -> majority durable): mean %.2f ms\n",
      lat_n, lat_n / o.jobs, lsn, lsn / o.jobs, lat_n > 0 ? lat_sum / lat_n * 1e3 : 0.0);
  remember("throughput, 1-step sleep:0 jobs", "%.0f jobs/s, %.0f transitions/s", jobs_s,
           2 * jobs_s);
  remember("job latency p50 / p99", "%.1f / %.1f ms", p50, p99);
  remember("nodes' CPU per transition", "%.0f us (all three nodes)",
           cpu_s * 1e6 / (2.0 * o.jobs));
  remember("replicated commits per job", "%.2f (commit latency mean %.1f ms)",
           lat_n / o.jobs, lat_n > 0 ? lat_sum / lat_n * 1e3 : 0.0);
}

// -- 2. re-dispatch after kill -9 ---------------------------------------------------

void redispatch(session& s, const options& o) {
  auto prefix = run_prefix() + "-rd-";
  std::vector<double> leader_ms, follower_ms, seen_ms, kill_cmd_ms;
  int missed = 0;
  for (int round = 0; round < o.kills; ++round) {
    auto id = wf::job_id{prefix + std::to_string(round)};
    if (!s.ask<wf::job_id>(atoms::submit_atom_v,
                           one_step(id.value, "sleep", "5000", 30s))) {
      std::printf("redispatch: round %d: submit failed\n", round);
      ++missed;
      continue;
    }
    // The node that claimed it.
    uint64_t node = 0;
    for (auto until = steady::now() + 10s; steady::now() < until && node == 0;) {
      if (auto v = s.ask<wf::job_view>(caf::get_atom::value, id);
          v && v->steps[0].state == wf::step_state::processing)
        node = v->steps[0].locked_by.instance;
      else
        std::this_thread::sleep_for(5ms);
    }
    if (node == 0) {
      std::printf("redispatch: round %d: not claimed within 10 s\n", round);
      ++missed;
      continue;
    }
    bool was_leader = cl::leader_named_in(o.dir) == node;
    auto k0 = wall_ns();
    auto r = conclave::testing::run_command(o.conclave + " cluster kill --dir '" + o.dir
                                            + "' --node " + std::to_string(node)
                                            + " --signal KILL >/dev/null 2>&1");
    auto k1 = wall_ns();
    kill_cmd_ms.push_back(ms_of(k1 - k0));
    if (r.status != 0)
      std::printf("redispatch: round %d: cluster kill exited %d\n", round, r.status);
    // Attempt 2 on another node.
    std::optional<int64_t> seen;
    for (auto until = steady::now() + 40s; steady::now() < until && !seen;) {
      if (auto v = s.ask<wf::job_view>(caf::get_atom::value, id);
          v && v->steps[0].attempt.value >= 2 && v->steps[0].locked_by.instance != node
          && !v->steps[0].locked_by.empty())
        seen = wall_ns();
      else
        std::this_thread::sleep_for(5ms);
    }
    if (!seen) {
      std::printf("redispatch: round %d: node %llu killed, no new claim within 40 s\n",
                  round, static_cast<unsigned long long>(node));
      ++missed;
    } else {
      int64_t claimed = 0;
      if (auto evs =
              s.ask<std::vector<wf::job_event>>(atoms::events_atom_v, id, uint64_t{1}))
        for (auto& e : *evs)
          if (e.kind == wf::event_kind::step_started && e.attempt.value >= 2 && !claimed)
            claimed = e.at.count();
      auto ms = ms_of((claimed ? claimed : *seen) - k0);
      (was_leader ? leader_ms : follower_ms).push_back(ms);
      seen_ms.push_back(ms_of(*seen - k0));
      std::printf("redispatch: round %d: killed node %llu (%s): claimed again after "
                  "%.1f ms (seen after %.1f ms; kill command %.1f ms)\n",
                  round, static_cast<unsigned long long>(node),
                  was_leader ? "leader" : "follower", ms, ms_of(*seen - k0),
                  ms_of(k1 - k0));
    }
    s.ask<wf::step_state>(atoms::cancel_atom_v, id);
    auto rr = conclave::testing::run_command(o.conclave + " cluster restart --dir '"
                                             + o.dir + "' --node " + std::to_string(node)
                                             + " >/dev/null 2>&1");
    if (rr.status != 0)
      std::printf("redispatch: round %d: cluster restart exited %d\n", round, rr.status);
    std::this_thread::sleep_for(500ms); // let the client reconnect to it
  }
  std::vector<double> all = leader_ms;
  all.insert(all.end(), follower_ms.begin(), follower_ms.end());
  auto line = [](const char* what, std::vector<double> v) {
    if (v.empty())
      return;
    std::printf("redispatch %-9s: %zu kills: median %.1f ms, max %.1f ms", what, v.size(),
                median(v), percentile(v, 1.0));
    if (v.size() >= 50)
      std::printf(", p99 %.1f ms", percentile(v, 0.99));
    std::printf("\n");
  };
  line("all", all);
  line("leader", leader_ms);
  line("follower", follower_ms);
  std::printf("redispatch: %d of %d rounds without a measurement; kill command itself: "
              "median %.1f ms (included above)\n",
              missed, o.kills, median(kill_cmd_ms));
  if (!all.empty())
    remember("re-dispatch after kill -9 (all kills)",
             "median %.0f ms, max %.0f ms (%.0f kills)", median(all),
             percentile(all, 1.0), static_cast<double>(all.size()));
  if (!leader_ms.empty())
    remember("  of the leader", "median %.0f ms, max %.0f ms (%.0f kills)",
             median(leader_ms), percentile(leader_ms, 1.0),
             static_cast<double>(leader_ms.size()));
  if (!follower_ms.empty())
    remember("  of a follower", "median %.0f ms, max %.0f ms (%.0f kills)",
             median(follower_ms), percentile(follower_ms, 1.0),
             static_cast<double>(follower_ms.size()));
}

// -- 3. memory per job ----------------------------------------------------------------

void memory(session& s, const options& o, bool claimed) {
  auto views = cl::read_views(o.dir);
  std::vector<std::pair<uint64_t, int>> pids;
  for (auto& v : views)
    if (v.alive)
      pids.emplace_back(v.id, v.pid);
  std::map<uint64_t, long> rss0;
  for (auto& [id, pid] : pids)
    rss0[id] = rss_kb(pid);
  auto prefix = run_prefix() + (claimed ? "-mc-" : "-mp-");
  std::vector<wf::job_spec> specs;
  for (int i = 0; i < o.pending; ++i)
    specs.push_back(
        claimed ? one_step(prefix + std::to_string(i), "sleep", "600000", 15min)
                : one_step(prefix + std::to_string(i), "bench-unserved", "", 30s));
  auto t0 = steady::now();
  auto sub = submit_all(s, std::move(specs), o.window);
  auto cpu0 = nodes_cpu_s(o.dir);
  auto t_sub = steady::now();
  auto submit_s = std::chrono::duration<double>(steady::now() - t0).count();
  // Claimed: until the nodes stop claiming (no change for 3 s) or all run.
  size_t pending = 0, processing = 0;
  auto last_change = steady::now();
  for (auto until = steady::now() + (claimed ? 300s : 5s); steady::now() < until;) {
    std::this_thread::sleep_for(claimed ? 1s : 5s);
    auto p = count_in(s, wf::step_state::pending, prefix);
    auto r = count_in(s, wf::step_state::processing, prefix);
    if (!p || !r)
      continue;
    if (*p != pending || *r != processing)
      last_change = steady::now();
    pending = *p;
    processing = *r;
    if (!claimed || pending == 0 || steady::now() - last_change > 3s)
      break;
  }
  auto settled_s = std::chrono::duration<double>(steady::now() - t0).count();
  auto busy = (nodes_cpu_s(o.dir) - cpu0)
              / std::chrono::duration<double>(steady::now() - t_sub).count();
  std::this_thread::sleep_for(1s);
  auto n = static_cast<double>(o.pending - static_cast<int>(sub->failed.load()));
  std::printf("memory %s: %d jobs (%zu refused) submitted in %.1f s; then %zu pending, "
              "%zu processing after %.1f s; meanwhile the nodes used %.2f cores\n",
              claimed ? "claimed" : "pending", o.pending, sub->failed.load(), submit_s,
              pending, processing, settled_s, busy);
  std::vector<double> per_job;
  for (auto& [id, pid] : pids) {
    auto r1 = rss_kb(pid);
    auto b = static_cast<double>(r1 - rss0[id]) * 1024.0 / n;
    per_job.push_back(b);
    std::printf("  node %llu: RSS %.1f -> %.1f MB: %.0f bytes per job\n",
                static_cast<unsigned long long>(id), rss0[id] / 1024.0, r1 / 1024.0, b);
  }
  remember(claimed ? "memory per claimed (processing) job" : "memory per pending job",
           "%.0f bytes resident per node (median of %.0f nodes, %.0f jobs)",
           median(per_job), static_cast<double>(per_job.size()), n);
}

int usage() {
  std::fprintf(stderr, "workflow_cluster_bench --dir D [--conclave BIN] [--jobs N] "
                       "[--kills R] [--pending P] [--only throughput|redispatch|memory] "
                       "[--memory-mode pending|claimed|both] [--window W]\n");
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    auto arg = [&](const char* name) {
      return !std::strcmp(argv[i], name) && i + 1 < argc;
    };
    if (arg("--dir"))
      o.dir = argv[++i];
    else if (arg("--conclave"))
      o.conclave = argv[++i];
    else if (arg("--jobs"))
      o.jobs = std::atoi(argv[++i]);
    else if (arg("--kills"))
      o.kills = std::atoi(argv[++i]);
    else if (arg("--pending"))
      o.pending = std::atoi(argv[++i]);
    else if (arg("--window"))
      o.window = static_cast<size_t>(std::max(1, std::atoi(argv[++i])));
    else if (arg("--only"))
      o.only = argv[++i];
    else if (arg("--memory-mode"))
      o.memory_mode = argv[++i];
    else
      return usage();
  }
  if (o.dir.empty() || o.jobs < 1 || o.kills < 0 || o.pending < 1
      || !(o.memory_mode == "pending" || o.memory_mode == "claimed"
           || o.memory_mode == "both"))
    return usage();
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  cl::store_access a;
  a.dir = o.dir;
  if (auto e = cl::settle_access(a)) {
    std::fprintf(stderr, "workflow_cluster_bench: %s\n", e->c_str());
    return 2;
  }
  std::map<uint64_t, conclave::node::address> members;
  if (auto e = cl::parse_members(a, members)) {
    std::fprintf(stderr, "workflow_cluster_bench: %s\n", e->c_str());
    return 2;
  }
  std::printf("cluster: %s, %zu members; client: this process (CAF 2 threads, "
              "sharing), %zu submissions in flight\n",
              o.dir.c_str(), members.size(), o.window);
  session s{a, members, {"exec", "sleep", "fail", "bench-unserved"}};
  auto part = [&](const char* name) { return o.only.empty() || o.only == name; };
  if (part("throughput"))
    throughput(s, o);
  if (part("redispatch") && o.kills > 0)
    redispatch(s, o);
  if (part("memory")) {
    if (o.memory_mode != "pending")
      memory(s, o, true);
    if (o.memory_mode != "claimed")
      memory(s, o, false);
  }
  std::printf("\n%-40s %s\n", "figure", "value");
  for (auto& [what, value] : summary)
    std::printf("%-40s %s\n", what.c_str(), value.c_str());
  std::fflush(nullptr);
  // Like `conclave job`: CAF's orderly shutdown can wait on connections.
  std::_Exit(0);
}
