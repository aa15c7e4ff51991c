// Workflow benchmark: prints figures, asserts nothing.
//
//   workflow_bench [--quick] [--jobs N] [--pending N] [--reps R] [--rounds K]
//                  [--only throughput|redispatch|memory] [--claim-group G]
//                  [--store memory|durable] [--steps 1|5] [--pipelined]
//                  [--caf-threads N] [--caf-policy sharing|stealing]
//                  [--schedulers N] [--claims-in-flight N] [--submit-group N]
//
// CAF's scheduler runs as in `conclave node` unless told otherwise: 2 threads,
// work sharing (runtime/node/node.cpp). `--caf-threads 0 --caf-policy
// stealing` gives CAF's own default (work stealing, max(4, cores) threads:
// 4 threads on this 2-core machine, which costs 10-25 % here).
//
// 1. Throughput: N jobs of 1 and of 5 steps with a no-op service (two agents,
//    two schedulers), submitted at once; steps completed per second and step
//    transitions per second (2 per step: claim, completion), with the store
//    in memory (store_host + memory_log_device) and durable (store_actor over
//    state_manager: strong mode, group commit, in a temporary directory).
//    p50/p99 job latency = completion time - submission time of each job;
//    CPU = the process's user+system time (getrusage) per step transition,
//    which other load on the machine disturbs less than wall-clock rates.
//    Each configuration runs K rounds of each variant, alternating in the
//    same process; the medians are printed. "batched": op_batch messages, a
//    job change is 2, an outcome 1 and it claims the next step in the same
//    transaction, each poll reads the whole ready index; "grouped" (the
//    default): the same, but the outcomes that arrive while an outcome batch
//    is in flight share the next one, and a poll reads at most 256 ready
//    entries; with --pipelined also "pipelined" (one store message per
//    operation, independent ones sent together: ~10 requests per job change).
// 2. Re-dispatch after a known agent death: a step hangs at its agent, the
//    agent is killed, time until the step is dispatched again (supervisor's
//    monitor path), median over R kills.
// 3. Memory per pending 1-step job (no scheduler, so every job stays pending):
//    the growth of the allocator's bytes in use (jemalloc's stats.allocated,
//    or glibc's mallinfo2 without jemalloc) and of the
//    resident set, divided by the number of jobs; with the memory host (which
//    also keeps its log in memory) and with the durable store (log on disk).
//    Then the time of the queries over all those jobs: list of a final state
//    (an index scan), list of an active state and explain (an index scan plus
//    every active job's document, read 512 per message).
#include "actors/store/store_actor.hpp"
#include "actors/store/store_host.hpp"
#include "actors/workflow/agent.hpp"
#include "actors/workflow/client.hpp"
#include "actors/workflow/scheduler.hpp"
#include "actors/workflow/supervisor.hpp"
#include "storage/api/memory_log_device.hpp"
#include "tests/bench/support/stats.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <malloc.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>

namespace wf = conclave::workflow;
namespace st = conclave::store;
namespace atoms = conclave::workflow_atoms;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

struct bench_probe : wf::workflow_probe {
  std::atomic<uint64_t> finished{0};
  std::atomic<uint64_t> dispatches{0};
  std::atomic<int64_t> last_dispatch_ns{0};
  void step_finished(wf::step_state, std::chrono::nanoseconds) override { ++finished; }
  void dispatched(bool) override {
    last_dispatch_ns = steady::now().time_since_epoch().count();
    ++dispatches;
  }
};

/// CAF's scheduler for the bench (--caf-threads, --caf-policy): by default
/// that of `conclave node` (2 threads, sharing); 0 threads: CAF's default
/// count (max(4, cores)); "stealing": CAF's default policy.
int caf_threads = 2;
std::string caf_policy = "sharing";

caf::actor_system_config& config(caf::actor_system_config& cfg) {
  if (caf_threads > 0)
    cfg.set("scheduler.max-threads", caf_threads);
  if (caf_policy == "sharing")
    cfg.set("scheduler.policy", caf::atom("sharing"));
  st::add_store_types(cfg);
  wf::add_workflow_types(cfg);
  cfg.add_message_types<caf::id_block::conclave_election>();
  cfg.set("logger.file-verbosity", caf::atom("quiet"));
  return cfg;
}

double rss_mb() {
  std::ifstream f{"/proc/self/statm"};
  long pages = 0, resident = 0;
  f >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE))
         / (1024.0 * 1024.0);
}

/// The store under test: memory host or durable state_manager.
struct store_under_test {
  st::store_actor handle;
  std::shared_ptr<st::state_manager> durable;
  std::filesystem::path dir;

  store_under_test(caf::actor_system& sys, bool is_durable) {
    if (!is_durable) {
      st::store_host_options o;
      o.device = std::make_shared<st::memory_log_device>();
      handle = st::spawn_store_host(sys, o);
      return;
    }
    dir = std::filesystem::temp_directory_path()
          / ("conclave-wf-bench-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    st::state_manager_options o;
    o.dir = dir;
    o.log = [](const std::string&) {};
    durable =
        std::shared_ptr<st::state_manager>{st::state_manager::open(o).value().release()};
    handle = st::spawn_store_actor(sys, durable);
  }

  ~store_under_test() {
    caf::anon_send_exit(handle, caf::exit_reason::kill);
    if (!dir.empty()) {
      durable.reset();
      std::filesystem::remove_all(dir);
    }
  }
};

wf::job_spec job(const std::string& id, int steps, const std::string& kind = "noop") {
  wf::job_spec s;
  s.id = wf::job_id{id};
  for (int i = 0; i < steps; ++i) {
    wf::step_spec st;
    st.agent_kind = kind;
    st.timeout = 30s;
    s.steps.push_back(st);
  }
  return s;
}

/// Submits all jobs from one actor, returns when every submission is answered.
/// Requests one actor keeps outstanding in submit_all() and the latency
/// reads. CAF 0.17 keeps an actor's awaited responses in a flat map (a
/// vector: each response is found and erased in O(outstanding)), so one
/// actor with 20,000 requests in flight spends most of its time there; a
/// client with a bounded window, as real ones have, does not.
constexpr size_t request_window = 512;

/// Sends request i of n (i < n) from `self` with `send_one(self, i, next)`,
/// keeping at most request_window outstanding; `next` is what each reply
/// handler calls.
template <class Send>
void windowed(caf::event_based_actor* self, size_t n, Send send_one) {
  auto next_i = std::make_shared<size_t>(0);
  auto next = std::make_shared<std::function<void()>>();
  *next = [self, n, next_i, send_one, weak = std::weak_ptr<std::function<void()>>(next)] {
    if (*next_i >= n)
      return;
    auto i = (*next_i)++;
    send_one(self, i, weak.lock());
  };
  // The handlers keep `next` alive through their captures.
  for (size_t k = 0; k < std::min(n, request_window); ++k)
    (*next)();
}

void submit_all(caf::actor_system& sys, const wf::client_actor& client,
                std::vector<wf::job_spec> specs) {
  auto left = std::make_shared<std::atomic<size_t>>(specs.size());
  auto all = std::make_shared<std::vector<wf::job_spec>>(std::move(specs));
  sys.spawn([client, all, left](caf::event_based_actor* self) {
    windowed(self, all->size(),
             [client, all, left](caf::event_based_actor* self, size_t i,
                                 std::shared_ptr<std::function<void()>> next) {
               self->request(client, caf::infinite, atoms::submit_atom_v, (*all)[i])
                   .then(
                       [left, next](wf::job_id&) {
                         --*left;
                         (*next)();
                       },
                       [left, next](caf::error& e) {
                         std::fprintf(stderr, "submit: %s\n", caf::to_string(e).c_str());
                         --*left;
                         (*next)();
                       });
             });
  });
  while (*left > 0)
    std::this_thread::sleep_for(100us);
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

struct rate {
  double steps_per_s = 0;
  double transitions_per_s = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double cpu_us_per_transition = 0;
  bool complete = true;
};

/// Submissions per client store batch (--submit-group; 0: its default).
size_t submit_group = 0;

/// Jobs each scheduler claims at once (--claims-in-flight; 0: its default).
size_t claims_in_flight = 0;

/// Scheduler instances in the throughput runs (--schedulers).
uint64_t schedulers = 2;

/// Ready jobs claimed per transaction by the batched schedulers (--claim-group).
size_t claim_group = wf::scheduler_options{}.claim_group;

/// What the schedulers and the client run: one store message per operation
/// (pipelined), op_batch messages with one outcome per message and polls of
/// the whole ready index (batched, before grouping), or outcomes grouped
/// across jobs and bounded polls (grouped, the default).
enum class variant { pipelined, batched, grouped };

const char* name_of(variant v) {
  return v == variant::pipelined ? "pipelined"
         : v == variant::batched ? "batched"
                                 : "grouped";
}

rate throughput(bool durable, int steps, int jobs, variant how) {
  bool batched = how != variant::pipelined;
  caf::actor_system_config cfg;
  caf::actor_system sys{config(cfg)};
  store_under_test store{sys, durable};
  auto probe = std::make_shared<bench_probe>();
  std::vector<wf::agent_entry> agents;
  std::vector<caf::actor> all;
  for (uint64_t i = 1; i <= 2; ++i) {
    wf::agent_options o;
    o.id = i;
    o.function = [](const wf::service_call&) { return wf::step_outcome{}; };
    auto a = wf::spawn_agent(sys, o);
    agents.push_back({i, "noop", a});
    all.push_back(caf::actor_cast<caf::actor>(a));
  }
  for (uint64_t i = 1; i <= schedulers; ++i) {
    wf::scheduler_options o;
    o.self = {i, 1};
    o.store = store.handle;
    o.agents = agents;
    o.probe = probe;
    o.poll_interval = 1ms;
    o.batched = batched;
    o.claim_group = claim_group;
    if (claims_in_flight > 0)
      o.claims_in_flight = claims_in_flight;
    if (how != variant::grouped) {
      o.outcome_group = 1;
      o.poll_limit = 0;
    }
    all.push_back(caf::actor_cast<caf::actor>(wf::spawn_scheduler(sys, o)));
  }
  wf::client_options co;
  co.store = store.handle;
  co.known_kinds = {"noop"};
  co.batched = batched;
  if (submit_group > 0)
    co.submit_group = submit_group;
  if (how != variant::grouped)
    co.submit_group = 1;
  auto client = wf::spawn_client(sys, co);
  all.push_back(caf::actor_cast<caf::actor>(client));
  std::vector<wf::job_spec> specs;
  for (int i = 0; i < jobs; ++i)
    specs.push_back(job("j" + std::to_string(i), steps));
  auto cpu_start = cpu_seconds();
  auto start = steady::now();
  submit_all(sys, client, specs);
  auto total = static_cast<uint64_t>(jobs) * static_cast<uint64_t>(steps);
  auto limit = start + 120s;
  while (probe->finished < total && steady::now() < limit)
    std::this_thread::sleep_for(200us);
  auto secs = std::chrono::duration<double>(steady::now() - start).count();
  auto cpu = cpu_seconds() - cpu_start;
  // Latency of each job from its own records (created/updated: actor clock).
  std::vector<double> lat;
  auto left = std::make_shared<std::atomic<int>>(jobs);
  auto out = std::make_shared<std::vector<double>>();
  auto mtx = std::make_shared<std::mutex>();
  sys.spawn([client, jobs, left, out, mtx](caf::event_based_actor* self) {
    windowed(self, static_cast<size_t>(jobs),
             [client, left, out, mtx](caf::event_based_actor* self, size_t i,
                                      std::shared_ptr<std::function<void()>> next) {
               self->request(client, caf::infinite, caf::get_atom::value,
                             wf::job_id{"j" + std::to_string(i)})
                   .then(
                       [left, out, mtx, next](wf::job_view& v) {
                         if (v.job.state == wf::job_state::processed) {
                           std::lock_guard<std::mutex> g{*mtx};
                           out->push_back(std::chrono::duration<double, std::milli>(
                                              v.job.updated - v.job.created)
                                              .count());
                         }
                         --*left;
                         (*next)();
                       },
                       [left, next](caf::error&) {
                         --*left;
                         (*next)();
                       });
             });
  });
  while (*left > 0)
    std::this_thread::sleep_for(100us);
  lat = *out;
  rate r;
  auto finished = static_cast<double>(probe->finished);
  r.steps_per_s = finished / secs;
  r.transitions_per_s = 2.0 * finished / secs;
  r.p50_ms = conclave::bench::percentile(lat, 0.5);
  r.p99_ms = conclave::bench::percentile(lat, 0.99);
  r.cpu_us_per_transition = finished > 0 ? cpu * 1e6 / (2.0 * finished) : 0;
  r.complete = probe->finished >= total;
  for (auto& a : all)
    caf::anon_send_exit(a, caf::exit_reason::kill);
  return r;
}

/// Include the pipelined variant in compare() (--pipelined).
bool with_pipelined = false;

/// K rounds of each variant, alternating; prints the medians.
void compare(bool durable, int steps, int jobs, int rounds) {
  std::vector<variant> variants{variant::batched, variant::grouped};
  if (with_pipelined)
    variants.insert(variants.begin(), variant::pipelined);
  std::map<variant, std::vector<rate>> runs;
  for (int k = 0; k < rounds; ++k)
    for (auto v : variants)
      runs[v].push_back(throughput(durable, steps, jobs, v));
  auto med = [](const std::vector<rate>& v, double rate::*field) {
    std::vector<double> xs;
    for (auto& r : v)
      xs.push_back(r.*field);
    return conclave::bench::median(xs);
  };
  std::map<variant, double> tps;
  for (auto how : variants) {
    auto& v = runs[how];
    bool complete = std::all_of(v.begin(), v.end(), [](auto& r) { return r.complete; });
    tps[how] = med(v, &rate::transitions_per_s);
    std::printf("%-8s %d-step jobs %-9s: %6d jobs x %d: %8.0f steps/s, %8.0f step "
                "transitions/s, %5.1f us CPU/transition, job latency p50 %.1f ms "
                "p99 %.1f ms%s\n",
                durable ? "durable" : "memory", steps, name_of(how), jobs, rounds,
                med(v, &rate::steps_per_s), tps[how],
                med(v, &rate::cpu_us_per_transition), med(v, &rate::p50_ms),
                med(v, &rate::p99_ms), complete ? "" : " (INCOMPLETE)");
  }
  auto base = tps[variant::batched];
  std::printf("%-8s %d-step jobs: grouped/batched transitions/s = %.2f\n",
              durable ? "durable" : "memory", steps,
              base > 0 ? tps[variant::grouped] / base : 0);
}

void redispatch(int reps) {
  caf::actor_system_config cfg;
  caf::actor_system sys{config(cfg)};
  store_under_test store{sys, false};
  auto probe = std::make_shared<bench_probe>();
  // Hangs the first attempt of every step, answers the others at once. (The
  // bench used to set test_service_state::script from this thread before each
  // job: the previous job's re-dispatch could consume that "hang" first, so
  // the next job completed at once and its agent's death re-dispatched
  // nothing — the "1 kill in 20 never seen". A rule by attempt has no race.)
  auto svc = sys.spawn([](wf::service_actor::pointer self)
                           -> wf::service_actor::behavior_type {
    auto held =
        std::make_shared<std::vector<caf::typed_response_promise<wf::step_outcome>>>();
    return {[self, held](wf::service_call& c) -> caf::result<wf::step_outcome> {
      if (c.attempt.value > 1)
        return wf::step_outcome{};
      held->push_back(self->template make_response_promise<wf::step_outcome>());
      return held->back();
    }};
  });
  std::vector<wf::agent_entry> agents;
  for (uint64_t i = 1; i <= static_cast<uint64_t>(reps) + 1; ++i) {
    wf::agent_options o;
    o.id = i;
    o.service = svc;
    agents.push_back({i, "svc", wf::spawn_agent(sys, o)});
  }
  wf::scheduler_options so;
  so.self = {1, 1};
  so.store = store.handle;
  so.agents = agents;
  so.probe = probe;
  so.poll_interval = 1ms;
  auto sched = wf::spawn_scheduler(sys, so);
  wf::supervisor_options vo;
  vo.store = store.handle;
  vo.scan_interval = 1s;
  auto sup = wf::spawn_supervisor(sys, vo);
  for (auto& a : agents)
    caf::anon_send(sup, atoms::watch_atom_v, a.id, caf::actor_cast<caf::actor>(a.handle),
                   false);
  conclave::election::leadership_event ev;
  ev.what = conclave::election::leadership_event::kind::became_leader;
  ev.t = conclave::election::term{1, conclave::election::node_id{1}, 1};
  caf::anon_send(sup, ev);
  wf::client_options co;
  co.store = store.handle;
  co.known_kinds = {"svc"};
  auto client = wf::spawn_client(sys, co);
  // Every dispatch hangs except the last of each job.
  std::vector<double> gaps;
  std::set<uint64_t> killed;
  int missed = 0;
  for (int r = 0; r < reps; ++r) {
    auto before = probe->dispatches.load();
    submit_all(sys, client, {job("r" + std::to_string(r), 1, "svc")});
    while (probe->dispatches == before)
      std::this_thread::sleep_for(50us);
    std::this_thread::sleep_for(2ms); // the agent holds the step now
    // Find the agent holding it and kill it.
    auto holder = std::make_shared<std::atomic<uint64_t>>(0);
    sys.spawn([client, r, holder](caf::event_based_actor* self) {
      self->request(client, caf::infinite, caf::get_atom::value,
                    wf::job_id{"r" + std::to_string(r)})
          .then([holder](wf::job_view& v) { *holder = v.steps[0].agent + 1000000; },
                [holder](caf::error&) { *holder = 1; });
    });
    while (*holder == 0)
      std::this_thread::sleep_for(50us);
    auto id = *holder - 1000000;
    auto after = probe->dispatches.load();
    auto kill_at = steady::now();
    for (auto& a : agents)
      if (a.id == id)
        caf::anon_send_exit(a.handle, caf::exit_reason::kill);
    auto limit = kill_at + 5s;
    while (probe->dispatches == after && steady::now() < limit)
      std::this_thread::sleep_for(20us);
    if (probe->dispatches == after) {
      ++missed;
      continue;
    }
    gaps.push_back(
        std::chrono::duration<double, std::milli>(
            steady::time_point{steady::duration{probe->last_dispatch_ns.load()}}
            - kill_at)
            .count());
  }
  std::printf(
      "re-dispatch after agent death: median %.2f ms, max %.2f ms over %zu kills, "
      "%d not re-dispatched within 5 s (deadline 30 s, supervisor scan every "
      "1 s)\n",
      conclave::bench::median(gaps),
      gaps.empty() ? 0.0 : *std::max_element(gaps.begin(), gaps.end()), gaps.size(),
      missed);
  for (auto& a : agents)
    caf::anon_send_exit(a.handle, caf::exit_reason::kill);
  caf::anon_send_exit(sched, caf::exit_reason::kill);
  caf::anon_send_exit(sup, caf::exit_reason::kill);
  caf::anon_send_exit(client, caf::exit_reason::kill);
  caf::anon_send_exit(svc, caf::exit_reason::kill);
}

} // namespace

// jemalloc's control interface, when the program is linked with it
// (CONCLAVE_ALLOCATOR): a weak reference, null under glibc's allocator.
extern "C" int mallctl(const char*, void*, size_t*, void*, size_t) __attribute__((weak));

namespace {

/// Bytes the allocator has handed out and not taken back (jemalloc's
/// stats.allocated when linked with it, else glibc's mallinfo2).
double heap_bytes() {
  if (mallctl) {
    uint64_t epoch = 1;
    size_t len = sizeof(epoch);
    mallctl("epoch", &epoch, &len, &epoch, len);
    size_t allocated = 0;
    len = sizeof(allocated);
    if (mallctl("stats.allocated", &allocated, &len, nullptr, 0) == 0)
      return static_cast<double>(allocated);
  }
  auto m = mallinfo2();
  return static_cast<double>(m.uordblks) + static_cast<double>(m.hblkhd);
}

/// Submits `pending` 1-step jobs (made one by one inside the submitting actor,
/// so no spec list is alive while measuring) and reports what they cost: the
/// allocator's bytes in use and the resident set, before and after, with
/// nothing else running (no scheduler: every job stays pending).
void memory(int pending, bool durable) {
  caf::actor_system_config cfg;
  caf::actor_system sys{config(cfg)};
  store_under_test store{sys, durable};
  wf::client_options co;
  co.store = store.handle;
  co.known_kinds = {"noop"};
  auto client = wf::spawn_client(sys, co);
  submit_all(sys, client, {job("warmup", 1)});
  std::this_thread::sleep_for(50ms);
  auto rss0 = rss_mb();
  auto heap0 = heap_bytes();
  // At most 256 submissions in flight.
  auto left = std::make_shared<std::atomic<int>>(pending);
  sys.spawn([client, pending, left](caf::event_based_actor* self) {
    auto next = std::make_shared<int>(0);
    auto launch = std::make_shared<std::function<void()>>();
    *launch = [self, client, pending, left, next, launch] {
      if (*next >= pending) {
        if (*left == 0)
          *launch = nullptr; // break the cycle
        return;
      }
      auto i = (*next)++;
      self->request(client, caf::infinite, atoms::submit_atom_v,
                    job("p" + std::to_string(i), 1))
          .then(
              [left, launch](wf::job_id&) {
                --*left;
                (*launch)();
              },
              [left, launch](caf::error& e) {
                std::fprintf(stderr, "submit: %s\n", caf::to_string(e).c_str());
                --*left;
                (*launch)();
              });
    };
    for (int k = 0; k < 256; ++k)
      (*launch)();
  });
  while (*left > 0)
    std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(50ms); // let the submitting actor finish
  auto heap1 = heap_bytes();
  auto rss1 = rss_mb();
  std::printf("memory %-7s: %d pending 1-step jobs: %.0f bytes per job in use (heap "
              "%.1f -> %.1f MB), %.0f bytes per job resident (RSS %.1f -> %.1f MB)%s\n",
              durable ? "durable" : "memory", pending, (heap1 - heap0) / pending,
              heap0 / 1048576.0, heap1 / 1048576.0, (rss1 - rss0) * 1048576.0 / pending,
              rss0, rss1,
              durable ? " (store state only: the log is on disk)"
                      : " (store state plus the in-memory log of every commit)");
  // The queries over every pending job: list of an active state reads the
  // documents of the active class, explain reads every non-final job.
  caf::scoped_actor self{sys};
  auto timed = [&](const char* what, auto request) {
    auto t0 = steady::now();
    std::string got;
    request(got);
    std::printf("  %-18s over %d pending jobs: %8.1f ms (%s)\n", what, pending,
                std::chrono::duration<double, std::milli>(steady::now() - t0).count(),
                got.c_str());
  };
  auto list = [&](wf::step_state s) {
    return [&, s](std::string& got) {
      self->request(client, caf::infinite, atoms::list_atom_v, s)
          .receive(
              [&](std::vector<wf::job_id>& ids) {
                got = std::to_string(ids.size()) + " jobs";
              },
              [&](caf::error& e) { got = caf::to_string(e); });
    };
  };
  timed("list(processed)", list(wf::step_state::processed));
  timed("list(pending)", list(wf::step_state::pending));
  timed("list(processing)", list(wf::step_state::processing));
  timed("explain()", [&](std::string& got) {
    self->request(client, caf::infinite, atoms::explain_atom_v)
        .receive(
            [&](std::vector<wf::stuck_report>& rs) {
              got = std::to_string(rs.size()) + " reports";
            },
            [&](caf::error& e) { got = caf::to_string(e); });
  });
  caf::anon_send_exit(client, caf::exit_reason::kill);
}

} // namespace

int main(int argc, char** argv) {
  std::printf("allocator: %s\n", mallctl ? "jemalloc" : "system (glibc)");
  auto print_scheduler = [] {
    auto threads = caf_threads > 0 ? std::to_string(caf_threads) + " threads"
                                   : std::string{"CAF's default thread count"};
    std::printf("CAF scheduler: %s, %s%s\n", threads.c_str(),
                caf_policy == "sharing" ? "work sharing" : "work stealing",
                caf_threads == 2 && caf_policy == "sharing" ? " (as conclave node)" : "");
  };
  int jobs = 5000, pending = 100000, reps = 20, rounds = 3;
  bool quick = false;
  std::string only, store_only;
  int steps_only = 0;
  for (int i = 1; i < argc; ++i) {
    auto arg = [&](const char* name) {
      return !std::strcmp(argv[i], name) && i + 1 < argc;
    };
    if (!std::strcmp(argv[i], "--quick"))
      quick = true;
    else if (arg("--jobs"))
      jobs = std::atoi(argv[++i]);
    else if (arg("--pending"))
      pending = std::atoi(argv[++i]);
    else if (arg("--reps"))
      reps = std::atoi(argv[++i]);
    else if (arg("--rounds"))
      rounds = std::atoi(argv[++i]);
    else if (arg("--only"))
      only = argv[++i];
    else if (!std::strcmp(argv[i], "--pipelined"))
      with_pipelined = true;
    else if (arg("--store"))
      store_only = argv[++i];
    else if (arg("--steps"))
      steps_only = std::atoi(argv[++i]);
    else if (arg("--submit-group"))
      submit_group = static_cast<size_t>(std::max(1, std::atoi(argv[++i])));
    else if (arg("--claims-in-flight"))
      claims_in_flight = static_cast<size_t>(std::max(1, std::atoi(argv[++i])));
    else if (arg("--schedulers"))
      schedulers = static_cast<uint64_t>(std::max(1, std::atoi(argv[++i])));
    else if (arg("--caf-threads"))
      caf_threads = std::atoi(argv[++i]);
    else if (arg("--caf-policy"))
      caf_policy = argv[++i];
    else if (arg("--claim-group"))
      claim_group = static_cast<size_t>(std::max(1, std::atoi(argv[++i])));
    else {
      std::fprintf(stderr, "workflow_bench: unknown flag %s (see the header comment)\n",
                   argv[i]);
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (quick) {
    jobs = 200;
    pending = 2000;
    reps = 3;
    rounds = 1;
  }
  if (jobs < 5 || pending < 1 || reps < 1 || rounds < 1
      || !(only.empty() || only == "throughput" || only == "redispatch"
           || only == "memory")
      || !(store_only.empty() || store_only == "memory" || store_only == "durable")
      || !(steps_only == 0 || steps_only == 1 || steps_only == 5) || caf_threads < 0
      || !(caf_policy == "sharing" || caf_policy == "stealing")) {
    std::fprintf(stderr,
                 "workflow_bench: --jobs >= 5, --pending, --reps, --rounds >= "
                 "1, --only throughput|redispatch|memory, --store memory|durable, "
                 "--steps 1|5, --caf-threads >= 0, --caf-policy sharing|stealing\n");
    return 2;
  }
  print_scheduler();
  auto part = [&](const char* name) { return only.empty() || only == name; };
  if (part("throughput"))
    for (bool durable : {false, true})
      for (int steps : {1, 5})
        if ((store_only.empty() || store_only == (durable ? "durable" : "memory"))
            && (steps_only == 0 || steps_only == steps))
          compare(durable, steps, steps == 1 ? jobs : jobs / 5, rounds);
  if (part("redispatch"))
    redispatch(reps);
  if (part("memory")) {
    memory(pending, false);
    memory(pending, true);
  }
  return 0;
}
