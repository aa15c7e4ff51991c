#include "runtime/sim/jobs_simulation.hpp"

#include "actors/ask/ask.hpp"
#include "actors/election/candidate_actor.hpp"
#include "actors/store/store_host.hpp"
#include "actors/workflow/agent.hpp"
#include "actors/workflow/client.hpp"
#include "actors/workflow/scheduler.hpp"
#include "actors/workflow/supervisor.hpp"
#include "actors/workflow/test_service.hpp"
#include "protocols/workflow/store_layout.hpp"
#include "runtime/node/node_composition.hpp"
#include "runtime/node/workflow_part.hpp"
#include "runtime/sim/node_world.hpp"
#include "runtime/sim/sim_disk.hpp"
#include "runtime/sim/world.hpp"
#include "runtime/sim/world_ask.hpp"
#include "runtime/sim/world_clock.hpp"
#include "runtime/sim/world_faults.hpp"
#include "runtime/sim/world_node_options.hpp"

#include <caf/send.hpp>

#include <random>

#include <algorithm>
#include <map>
#include <set>

namespace conclave::sim {

namespace {

namespace wf = conclave::workflow;
namespace el = conclave::election;
namespace rp = conclave::replication;
using namespace std::chrono_literals;

/// Counts what the workflow actors report (one thread: no locking needed).
class counting_probe final : public wf::workflow_probe {
public:
  void dispatched(bool) override { ++dispatches; }
  void dispatched_attempt(const wf::dispatch& d) override {
    ++attempts[d.job.value + (d.compensation ? " undo " : " step ")
               + std::to_string(d.step.value) + " attempt "
               + std::to_string(d.attempt.value)];
  }
  void stale_reply() override { ++stale; }
  void fenced_off() override { ++fenced; }
  void recovered(wf::recovery_cause c) override {
    switch (c) {
    case wf::recovery_cause::deadline:
      ++deadline;
      break;
    case wf::recovery_cause::monitor:
      ++monitor;
      break;
    case wf::recovery_cause::failure:
      ++failure;
      break;
    }
  }
  uint64_t dispatches = 0, stale = 0, fenced = 0, deadline = 0, monitor = 0, failure = 0;
  /// How often each (job, step or undo, attempt) was dispatched.
  std::map<std::string, int> attempts;
};

constexpr auto scan_interval = 10ms;
constexpr auto poll_interval = 5ms;
constexpr auto check_interval = 10ms;
/// What one run may take at most: world events, and runs of an actor on the
/// coordinator. A run needs a few hundred thousand of each; the bound ends a
/// run that would never end (actors messaging each other at one instant
/// forever) with a liveness failure that names it.
constexpr uint64_t max_events = 5'000'000;
constexpr uint64_t max_actor_runs = 50'000'000;

/// The jobs of a run, drawn from its generator.
std::vector<wf::job_spec> make_jobs(const jobs_shape& shape, std::mt19937_64& rng) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>{lo, hi}(rng);
  };
  std::vector<wf::job_spec> jobs;
  for (size_t j = 1; j <= shape.jobs; ++j) {
    wf::job_spec s;
    s.id = wf::job_id{"j" + std::to_string(j)};
    s.failure_threshold = static_cast<uint32_t>(pick(2, 4));
    for (size_t k = 0; k < shape.steps; ++k) {
      wf::step_spec st;
      st.agent_kind = "svc";
      st.timeout = std::chrono::milliseconds{pick(50, 150)};
      st.retry.max_attempts = static_cast<uint32_t>(pick(1, 3));
      st.retry.initial_interval = 2ms;
      if (pick(0, 1))
        st.compensation = wf::compensation_spec{"undo", "u"};
      s.steps.push_back(std::move(st));
    }
    jobs.push_back(std::move(s));
  }
  return jobs;
}

struct action {
  wf::duration at{0};
  std::optional<size_t> submit; ///< job index, or a fault
  fault timed;
  /// The end of a window (pause, partition, cut) on the world.
  bool end = false;
};

// -- the jobs workload on the simulated world ------------------------------------

/// A window of misbehaving service calls, in run time.
struct call_window {
  wf::test_behavior behavior = wf::test_behavior::ok;
  timestamp from{0};
  timestamp until{0};
  double probability = 1;
};

/// The rate error of the nodes' clocks: a quarter of the drift the quorum
/// guard tolerates, as the other workloads draw it.
double guard_rate_error(const el::election_config& c) {
  auto& g = c.guard;
  auto window = static_cast<double>((g.lease + g.max_clock_drift).count());
  return window > 0 ? static_cast<double>(g.max_clock_drift.count()) / (4 * window) : 0;
}

/// The nodes of a jobs run on the world: each is what `conclave node` runs,
/// the node composition and its workflow part, with the world's network, a
/// disk (world_node_disk.hpp) that survives its crashes, and its own drifting
/// clock.
class jobs_node_world final : private world_observer {
public:
  jobs_node_world(const jobs_settings& s, const fault_plan& plan, uint64_t net_seed,
                  uint64_t service_seed)
      : settings_(s),
        world_(jobs_nodes(s.shape), net_seed, world_network_of(plan), clocks_of(plan),
               [](caf::actor_system_config& cfg) {
                 store::add_store_types(cfg);
                 wf::add_workflow_types(cfg);
                 cfg.add_message_types<caf::id_block::conclave_replication>();
                 cfg.add_message_types<caf::id_block::conclave_election>();
               }) {
    world_.set_budget(max_events, max_actor_runs);
    econfig_.guard.enabled = true;
    // A checkpoint stream lost while its receiver was down is sent again
    // sooner than the default, as in the replication workload.
    rconfig_.snapshot_retry = 100ms;
    auto n = jobs_nodes(s.shape);
    for (uint64_t k = 1; k <= n; ++k)
      members_.push_back(el::node_id{k});
    probe_ = std::make_shared<counting_probe>();
    service_rng_.seed(service_seed);
    for (auto& f : plan.faults) {
      using k = fault::kind;
      if (f.what != k::fail && f.what != k::reject && f.what != k::hang
          && f.what != k::slow)
        continue;
      call_window w;
      w.behavior = f.what == k::fail     ? wf::test_behavior::transient
                   : f.what == k::reject ? wf::test_behavior::permanent
                   : f.what == k::hang   ? wf::test_behavior::hang
                                         : wf::test_behavior::slow;
      w.from = f.at;
      w.until = f.until;
      w.probability = f.probability;
      windows_.push_back(w);
    }
    service_ = std::make_shared<wf::test_service_state>();
    service_->slow_delay = plan.slow;
    service_->deduplicate = s.idempotent_service;
    service_->decide = [this] { return decide_call(); };
    set_node_notices(world_);
    world_.add_observer(this);
    world_.set_tap([this](timestamp, node_id, node_id, const caf::message&, fate f) {
      if (f != fate::delivered)
        ++lost_;
    });
    nodes_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      auto& x = nodes_[i];
      // Each disk's own seed (what a power loss keeps), from the run's seed
      // without another draw of its generator.
      x.disk = std::make_shared<world_node_disk>(
          s.disk, 2ms, false, net_seed ^ (0x9e3779b97f4a7c15ull * (i + 1)));
      world_.spawn(members_[i], [this, i](world&, node_id, uint32_t incarnation) {
        return make_node(i, incarnation);
      });
    }
    world_.run_actors();
  }

  ~jobs_node_world() override {
    service_->decide = nullptr;
    for (auto& x : nodes_)
      if (x.disk)
        x.disk->disk().set_releaser(caf::actor{});
  }

  void run_until(wf::duration t) { world_.run_until(timestamp{t}); }
  wf::duration elapsed() const { return world_.now(); }
  bool exhausted() const { return world_.exhausted(); }
  uint64_t events() const { return world_.events(); }
  const counting_probe& probe() const { return *probe_; }
  const wf::test_service_state& service() const { return *service_; }
  uint64_t messages() const { return world_.messages_sent(); }
  uint64_t lost() const { return lost_; }
  uint64_t duplicated() const { return world_.messages_duplicated(); }
  /// What the disks went through (power losses, bit flips, starts).
  disk_counts disks() const {
    auto d = disks_;
    for (auto& x : nodes_)
      d.power_losses += x.disk->power_losses();
    return d;
  }

  void submit(const wf::job_spec& spec) {
    // A refused submission is a bug of the simulation's own job generator
    // (or the store never answered): the job is then missing, and the
    // liveness checker says so.
    ids_.push_back(spec.id);
    submissions_.push_back({spec, nullptr});
    send_submission(submissions_.back());
  }

  void apply(const fault& f, bool end) {
    using k = fault::kind;
    using role = fault::role;
    if (apply_disk_stall(world_, f, *nodes_[f.node.value - 1].disk, end))
      return;
    if (end)
      return; // the world ends pauses, partitions and cuts itself
    switch (f.what) {
    case k::crash:
    case k::restart:
      if (f.target == role::service) {
        service_up_ = f.what == k::restart;
        if (!service_up_)
          service_->script.clear();
        break;
      }
      if (auto id = node_of(f)) {
        world_.crash(*id);
        if (f.what == k::restart)
          world_.restart(*id);
      }
      break;
    case k::fsync_loss:
    case k::bitflip:
      apply_disk_fault(world_, f, *nodes_[f.node.value - 1].disk, disks_);
      break;
    case k::cancel:
      if (f.number >= 1 && f.number <= ids_.size())
        if (auto i = reachable())
          asker_.ask<wf::job_state>(nodes_[*i].client,
                                    conclave::workflow_atoms::cancel_atom_v,
                                    ids_[f.number - 1]);
      break;
    default:
      // The shared words (service windows act through decide_call).
      apply_world_fault(world_, f, members_, nodes_, crashed_leaders_);
      break;
    }
    take_down_refused(world_, members_, nodes_);
    world_.run_actors();
  }

  /// Polls the jobs not yet known final; true once every submitted job has
  /// been read final (answers arrive while the world runs on).
  bool all_final() {
    // A user whose submission failed (its node died with the request, or the
    // store did not answer in time) submits it again, through another node
    // if need be; "exists already" means an earlier try committed.
    for (auto& sub : submissions_) {
      if (sub.answer && sub.answer->value)
        continue;
      auto via = members_[sub.via];
      bool node_died =
          sub.answer && !sub.answer->done
          && (!world_.alive(via) || world_.incarnation(via) != sub.via_incarnation);
      if (sub.answer && !sub.answer->done && !node_died)
        continue;
      if (sub.answer && sub.answer->done) {
        auto& e = sub.answer->error;
        if (e.category() == wf::error_category_atom
            && e.code() == static_cast<uint8_t>(wf::errc::job_exists))
          continue;
      }
      send_submission(sub);
    }
    if (!all_done(polls_))
      return false;
    for (auto& r : polls_)
      if (r->value && wf::is_final(r->value->job.state))
        final_.insert(r->value->job.id.value);
    polls_.clear();
    std::vector<wf::job_id> open;
    for (auto& id : ids_)
      if (!final_.count(id.value))
        open.push_back(id);
    if (open.empty())
      return true;
    if (auto i = reachable()) {
      for (auto& id : open)
        polls_.push_back(
            asker_.ask<wf::job_view>(nodes_[*i].client, caf::get_atom::value, id));
      world_.run_actors();
    }
    return false;
  }

  /// Everything the checkers read, through a live node's client and store
  /// adapter (the world runs on while the answers come).
  jobs_observation observe() {
    jobs_observation obs;
    // Without a majority up with its log the store cannot serve until an
    // operator steps in (amnesiac replicas do not count toward a sync): a
    // primary still serving answers at once, and waiting the full 10 s of
    // run time for answers that cannot come was most of a mix's CPU time.
    patience_ = 2 * alive_with_log() > members_.size() ? 10s : 1s;
    auto i = reachable();
    if (i) {
      auto client = nodes_[*i].client;
      std::vector<std::shared_ptr<reply<wf::job_view>>> views;
      std::vector<std::shared_ptr<reply<std::vector<wf::job_event>>>> events;
      for (auto& id : ids_) {
        views.push_back(asker_.ask<wf::job_view>(client, caf::get_atom::value, id));
        events.push_back(asker_.ask<std::vector<wf::job_event>>(
            client, conclave::workflow_atoms::events_atom_v, id, uint64_t{0}));
      }
      std::vector<std::shared_ptr<reply<std::vector<wf::job_id>>>> lists;
      for (uint8_t st = 0; st < wf::step_state_count; ++st)
        lists.push_back(asker_.ask<std::vector<wf::job_id>>(
            client, conclave::workflow_atoms::list_atom_v,
            static_cast<wf::step_state>(st)));
      wait_all(views);
      wait_all(events);
      wait_all(lists);
      for (size_t j = 0; j < ids_.size(); ++j) {
        job_trace t;
        t.id = ids_[j];
        t.view = views[j]->value;
        if (events[j]->value)
          t.events = std::move(*events[j]->value);
        obs.jobs.push_back(std::move(t));
      }
      std::map<uint8_t, std::vector<wf::job_id>> listed;
      bool read_all = true;
      for (uint8_t st = 0; st < wf::step_state_count; ++st) {
        if (!lists[st]->value)
          read_all = false;
        else
          listed[st] = std::move(*lists[st]->value);
      }
      if (read_all)
        obs.listed = std::move(listed);
      obs.index_rows = read_index_rows(nodes_[*i].store);
    } else {
      for (auto& id : ids_)
        obs.jobs.push_back(job_trace{id, std::nullopt, {}});
    }
    obs.effects = service_->effects;
    obs.dispatches = probe_->attempts;
    obs.origin = wf::timestamp{0};
    obs.now = wf::timestamp{world_.now()};
    // Jobs can be read only while a majority of the nodes (the replicated
    // store's quorum) is alive with its log: a run whose faults leave fewer
    // (crashed for good, started refused, or a damaged log moved aside and
    // not rebuilt yet) is not judged, as the replicas rightly wait for an
    // operator.
    obs.judge_liveness = i.has_value() && 2 * alive_with_log() > members_.size();
    return obs;
  }

private:
  struct submission {
    wf::job_spec spec;
    std::shared_ptr<reply<wf::job_id>> answer;
    /// The node (index) and life whose client was asked.
    size_t via = 0;
    uint32_t via_incarnation = 0;
  };

  void send_submission(submission& sub) {
    sub.answer.reset();
    if (auto i = reachable()) {
      sub.via = *i;
      sub.via_incarnation = world_.incarnation(members_[*i]);
      sub.answer = asker_.ask<wf::job_id>(
          nodes_[*i].client, conclave::workflow_atoms::submit_atom_v, sub.spec);
      world_.run_actors();
    }
  }

  struct node_slot {
    std::shared_ptr<world_node_disk> disk;
    caf::actor front;
    el::candidate_actor candidate;
    wf::client_actor client;
    store::store_actor store;
    /// This life did not start (its storage refused to open).
    bool refused = false;
    /// Its log was lost (damage moved aside) and is not rebuilt yet.
    bool amnesiac = false;
  };

  /// Live nodes that hold their log (not amnesiac).
  size_t alive_with_log() const {
    size_t n = 0;
    for (size_t i = 0; i < members_.size(); ++i)
      n += world_.alive(members_[i]) && !nodes_[i].amnesiac ? 1 : 0;
    return n;
  }

  static clock_model clocks_of(const fault_plan& plan) {
    clock_model c;
    el::election_config guarded;
    guarded.guard.enabled = true;
    c.max_rate_error = plan.drift ? *plan.drift : guard_rate_error(guarded);
    return c;
  }

  /// The node a crash or restart names: node N, or the node of agentN,
  /// schedulerN or supervisorN.
  std::optional<node_id> node_of(const fault& f) const {
    auto n = f.target == fault::role::node ? f.node.value : f.number;
    if (n < 1 || n > members_.size())
      return std::nullopt;
    return members_[n - 1];
  }

  /// A node that is alive and not paused (the lowest), whose client the run
  /// asks.
  std::optional<size_t> reachable() const {
    for (size_t i = 0; i < members_.size(); ++i)
      if (world_.alive(members_[i]) && !world_.paused(members_[i]))
        return i;
    return std::nullopt;
  }

  wf::test_behavior decide_call() {
    if (!service_up_)
      return wf::test_behavior::transient; // a refused connection
    auto now = world_.now();
    for (auto& w : windows_)
      if (w.from <= now && now < w.until && coin(w.probability))
        return w.behavior;
    return wf::test_behavior::ok;
  }

  bool coin(double p) {
    if (p <= 0)
      return false;
    return std::uniform_real_distribution<double>{0.0, 1.0}(service_rng_) < p;
  }

  /// Runs the world on until every answer came, for at most `patience` of
  /// run time (observe() sets it).
  template <class Replies>
  void wait_all(const Replies& rs) {
    world_.run_actors();
    auto limit = world_.now() + patience_;
    while (!all_done(rs) && world_.now() < limit)
      world_.run_until(world_.now() + 1ms);
  }

  template <class T>
  std::optional<T> wait_one(const std::shared_ptr<reply<T>>& r) {
    std::vector<std::shared_ptr<reply<T>>> one{r};
    wait_all(one);
    return r->value;
  }

  /// The raw index rows, read in a transaction of their own.
  std::optional<std::map<std::string, std::vector<std::string>>>
  read_index_rows(const store::store_actor& st) {
    auto t = wait_one(asker_.ask<store::txn_id>(st, conclave::store_atoms::begin_atom_v));
    if (!t)
      return std::nullopt;
    std::map<std::string, std::vector<std::string>> rows;
    bool read = true;
    for (const char* c : {wf::layout::state, wf::layout::ready, wf::layout::due}) {
      store::op_request r;
      r.txn = *t;
      r.op = store::operation::enumerate;
      r.collection = c;
      auto res = wait_one(asker_.ask<store::op_result>(st, r, uint32_t{1000}));
      if (!res) {
        read = false;
        break;
      }
      for (auto& kv : res->items)
        rows[c].push_back(kv.first);
    }
    wait_one(asker_.ask<bool>(st, conclave::store_atoms::abort_atom_v, *t));
    if (!read)
      return std::nullopt;
    return rows;
  }

  /// The live node whose candidate acts as leader with the highest term (a
  /// paused node does not answer).
  std::optional<size_t> acting_leader() {
    return acting_world_leader(world_, members_, nodes_);
  }

  /// One life of node i: the node composition and its workflow part, with
  /// the world's pieces.
  node_body make_node(size_t i, uint32_t incarnation) {
    auto& sys = world_.system();
    auto& n = nodes_[i];
    auto id = members_[i];
    auto local_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(world_.local_now(id))
            .count();
    auto opened = n.disk->open(members_.size(), local_ms, econfig_.guard.lease_max);
    if (!opened) {
      // `conclave node` prints the line and exits 1: the node stays down.
      // apply() takes it down once the fault that restarted it is done.
      disks_.refused(id, opened.error());
      auto b = refused_node_body(sys);
      n.front = b.actor;
      n.candidate = caf::actor_cast<el::candidate_actor>(b.actor);
      n.client = caf::actor_cast<wf::client_actor>(b.actor);
      n.store = caf::actor_cast<store::store_actor>(b.actor);
      n.refused = true;
      return b;
    }
    auto& storage = opened.value();
    disks_.opened(storage);
    n.amnesiac = storage.amnesiac;
    if (n.amnesiac) {
      auto healed = std::move(storage.healed);
      storage.healed = [this, i, healed] {
        nodes_[i].amnesiac = false;
        if (healed)
          healed();
      };
    }
    auto o = world_node_options(world_, id, members_, econfig_, rconfig_, storage,
                                incarnation);
    auto& ro = *o.replica;
    ro.checkpoint_every_records = 0;
    ro.checkpoint_every_bytes = 0;
    ro.on_failure = leave_on_storage_failure(world_, id, n.disk, disks_);
    auto parts = node::compose_node(sys, std::move(o));
    n.front = parts.front;
    n.candidate = parts.candidate;
    auto releaser = spawn_disk_releaser(sys, n.disk->disk_ptr());
    n.disk->disk().set_releaser(releaser);

    node::workflow_part_options wo;
    wo.self = id.value;
    wo.incarnation = incarnation;
    wo.members = members_;
    wo.lookup = [this, id](rp::node_id to) -> caf::actor {
      if (to.value < 1 || to.value > nodes_.size())
        return {};
      auto peer = members_[to.value - 1];
      if (!world_.alive(peer) || world_.blocked(id, peer) || world_.blocked(peer, id))
        return {};
      return nodes_[to.value - 1].front;
    };
    auto svc = wf::spawn_test_service(sys, service_);
    wo.services["svc"].push_back(svc);
    wo.services["undo"].push_back(svc);
    wo.candidate = parts.candidate;
    wo.probe = probe_;
    wo.clock = std::make_shared<world_node_clock>(world_, id);
    wo.poll_interval = poll_interval;
    wo.scan_interval = scan_interval;
    wo.unsafe_ignore_attempt_fence = settings_.unsafe_ignore_fence;
    auto part = node::compose_workflows(sys, std::move(wo));
    n.client = part.client;
    n.store = part.store;
    caf::anon_send(n.candidate, election_atoms::start_atom::value);
    node_body b;
    b.actor = caf::actor_cast<caf::actor>(parts.candidate);
    b.ports = {parts.host, parts.front, releaser};
    for (auto& a : part.actors)
      if (std::find(b.ports.begin(), b.ports.end(), a) == b.ports.end())
        b.ports.push_back(a);
    return b;
  }

  void crashed(node_id id, timestamp) override { nodes_[id.value - 1].disk->kill(); }

  jobs_settings settings_;
  world world_;
  /// Declared after the world: gone before the world's actor system.
  asker asker_{world_.system()};
  el::election_config econfig_;
  rp::replica_config rconfig_;
  std::vector<el::node_id> members_;
  std::vector<node_slot> nodes_;
  std::shared_ptr<counting_probe> probe_;
  std::shared_ptr<wf::test_service_state> service_;
  std::mt19937_64 service_rng_;
  std::vector<call_window> windows_;
  bool service_up_ = true;
  std::vector<size_t> crashed_leaders_; // by crash-leader, not yet restarted
  std::vector<wf::job_id> ids_;
  std::vector<submission> submissions_;
  std::set<std::string> final_;
  std::vector<std::shared_ptr<reply<wf::job_view>>> polls_;
  uint64_t lost_ = 0;
  disk_counts disks_;
  /// How long observe() waits for the answers to its reads.
  wf::duration patience_ = 10s;
};

/// Fills the run's report from what the checkers read and the counters.
void finish_report(jobs_run_report& rep, jobs_node_world& w, jobs_observation& obs) {
  obs.heal = rep.heal;
  obs.bound = rep.bound;
  // A run ends once every fault was applied (see run_on_world), so who is
  // alive now is who was alive once faults healed.
  rep.liveness_judged = obs.judge_liveness;
  rep.violations = run_checkers(standard_jobs_checkers(), obs);
  for (auto& t : obs.jobs) {
    if (!t.view)
      continue;
    auto s = t.view->job.state;
    ++rep.outcomes[static_cast<size_t>(s)];
    if (wf::is_final(s)) {
      auto at = t.view->job.updated - obs.origin;
      rep.settle = std::max(rep.settle, at - std::min(at, rep.heal));
    }
  }
  auto& p = w.probe();
  rep.dispatches = p.dispatches;
  rep.stale_replies = p.stale;
  rep.recoveries_deadline = p.deadline;
  rep.recoveries_monitor = p.monitor;
  rep.recoveries_failure = p.failure;
  rep.fenced_writes = p.fenced;
  for (auto& [key, n] : w.service().effects)
    rep.effects += static_cast<uint64_t>(n);
}

/// One run on the simulated world.
void run_on_world(const jobs_settings& settings, const fault_plan& plan,
                  const std::vector<wf::job_spec>& jobs, uint64_t net_seed,
                  uint64_t service_seed, std::vector<action> actions,
                  wf::duration last_submit, jobs_run_report& rep) {
  // Window ends (pauses, partitions, cuts, disk stalls) are actions too.
  for (auto& f : plan.faults) {
    if (f.ends_by_action()) {
      action a;
      a.at = f.until;
      a.timed = f;
      a.end = true;
      actions.push_back(a);
    }
  }
  std::stable_sort(actions.begin(), actions.end(),
                   [](const action& a, const action& b) { return a.at < b.at; });
  // Job times are read on the nodes' drifting clocks: one may run ahead of
  // run time by the clocks' rate error over the whole run.
  auto drift = plan.drift ? *plan.drift : 0.03;
  auto span = rep.heal + rep.bound;
  rep.bound +=
      std::chrono::duration_cast<wf::duration>(std::chrono::duration<double, std::nano>(
          static_cast<double>(span.count()) * drift));
  auto end = rep.heal + rep.bound;
  jobs_node_world w{settings, plan, net_seed, service_seed};
  size_t next = 0;
  size_t submitted = 0;
  wf::duration check = last_submit;
  while (true) {
    auto t = std::min(check, end);
    if (next < actions.size())
      t = std::min(t, actions[next].at);
    w.run_until(t);
    if (w.exhausted())
      break;
    for (; next < actions.size() && actions[next].at <= w.elapsed(); ++next) {
      auto& a = actions[next];
      if (a.submit) {
        w.submit(jobs[*a.submit]);
        ++submitted;
      } else
        w.apply(a.timed, a.end);
    }
    if (w.elapsed() >= check) {
      // What faults remain cannot change a final job, but they decide what
      // can be read at the end: a crash not yet undone can leave the store
      // without a quorum, and every final job unreadable. So a run stops
      // early only once every fault (window ends and restarts included) was
      // applied.
      if (submitted == jobs.size() && w.all_final() && next == actions.size())
        break;
      check += check_interval;
    }
    if (w.elapsed() >= end)
      break;
  }
  rep.end = w.elapsed();
  if (w.exhausted()) {
    // Nothing runs any more, so nothing can be read: the run is reported
    // as what it is, a run that did not end.
    rep.violations.push_back(
        {"run_ends",
         "the run hit its bound of " + std::to_string(max_events) + " events or "
             + std::to_string(max_actor_runs) + " actor runs at "
             + std::to_string(
                 std::chrono::duration_cast<std::chrono::microseconds>(rep.end).count())
             + " us (" + std::to_string(w.events()) + " events)",
         false});
  } else {
    auto obs = w.observe();
    finish_report(rep, w, obs);
  }
  rep.messages = w.messages();
  rep.lost = w.lost();
  rep.duplicated = w.duplicated();
  rep.disks = w.disks();
  if (rep.disks.storage_failures > 0)
    rep.violations.push_back(
        {"storage_never_fails",
         "a replica's storage failed on a disk without an injected fault "
         "(the node left): "
             + rep.disks.first_storage_failure,
         false});
}

} // namespace

bool jobs_run_report::safety_violated() const {
  return std::any_of(violations.begin(), violations.end(),
                     [](const jobs_violation& v) { return v.safety; });
}

bool jobs_run_report::liveness_failed() const {
  return std::any_of(violations.begin(), violations.end(),
                     [](const jobs_violation& v) { return !v.safety; });
}

wf::duration jobs_bound(const jobs_shape& shape, const fault_plan& plan) {
  auto per_step = 150ms + scan_interval + poll_interval + 4 * plan.delay_max + plan.slow;
  return 1s + 2 * static_cast<int64_t>(std::max<size_t>(1, shape.steps)) * per_step;
}

jobs_run_report run_jobs_simulation(const jobs_settings& settings) {
  jobs_run_report rep;
  rep.seed = settings.seed;
  std::mt19937_64 rng{settings.seed};
  auto plan = settings.plan;
  add_random_faults(plan, settings.shape, rng, settings.disk == disk_kind::files);
  auto jobs = make_jobs(settings.shape, rng);
  auto net_seed = rng();
  auto service_seed = rng();
  // Submissions and faults, in time order (submissions first at one instant).
  std::vector<action> actions;
  auto spread = plan.horizon * 3 / 4;
  wf::duration last_submit{0};
  for (size_t j = 0; j < jobs.size(); ++j) {
    action a;
    a.at = spread * static_cast<int64_t>(j) / static_cast<int64_t>(jobs.size());
    a.submit = j;
    last_submit = a.at;
    actions.push_back(a);
  }
  for (auto& f : plan.faults) {
    ++rep.faults;
    rep.fault_list += (rep.fault_list.empty() ? "" : ",") + to_spec(f);
    action a;
    a.at = f.at;
    a.timed = f;
    actions.push_back(a);
  }
  std::stable_sort(actions.begin(), actions.end(),
                   [](const action& a, const action& b) { return a.at < b.at; });
  rep.heal = std::max(plan.heal_time(), last_submit);
  rep.bound = jobs_bound(settings.shape, plan);
  run_on_world(settings, plan, jobs, net_seed, service_seed, actions, last_submit, rep);
  return rep;
}

} // namespace conclave::sim
