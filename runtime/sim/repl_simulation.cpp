#include "runtime/sim/repl_simulation.hpp"

#include "actors/ask/ask.hpp"
#include "actors/election/candidate_actor.hpp"
#include "actors/replication/lease_state.hpp"
#include "actors/replication/replica_host.hpp"
#include "protocols/election/status.hpp"
#include "protocols/history/linearizability.hpp"
#include "runtime/node/node_composition.hpp"
#include "runtime/sim/node_world.hpp"
#include "runtime/sim/sim_disk.hpp"
#include "runtime/sim/world.hpp"
#include "runtime/sim/world_ask.hpp"
#include "runtime/sim/world_clock.hpp"
#include "runtime/sim/world_faults.hpp"
#include "runtime/sim/world_node_options.hpp"

#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

namespace conclave::sim {

namespace {

/// A replica's storage failed on a disk without an injected fault (the node left):
/// the simulated file system returns no error, so the storage code is wrong.
repl_violation storage_failure_violation(const disk_counts& d) {
  return {
      "storage_never_fails",
      "a replica's storage failed on a disk without an injected fault (the node left): "
          + d.first_storage_failure,
      false, 0};
}

namespace el = conclave::election;
namespace rp = conclave::replication;
using namespace std::chrono_literals;
using time_point = caf::actor_clock::time_point;

constexpr auto sample_interval = 10ms;
constexpr auto client_timeout = 200ms;
constexpr auto retry_pause = 5ms;
constexpr auto quiet_period = 500ms;
/// How much longer the final sample waits for the replicas to agree.
constexpr auto settle_for = 1s;
constexpr const char* collection = "kv";

// -- requests that remember when they were answered ---------------------------

template <class T>
struct timed_reply {
  bool done = false;
  std::optional<T> value;
  /// Run time of the answer.
  duration at{0};
};

/// What one sampling instant asks one replica.
struct sample_slot {
  size_t node = 0;
  timed_reply<rp::replica_status> before, after;
  timed_reply<el::leader_info> info;
  std::vector<timed_reply<rp::read_result>> reads;
};

// -- the world ------------------------------------------------------------------

/// The rate error of the nodes' clocks: the drift the quorum guard is
/// configured to tolerate, as the election workload draws it.
double guard_rate_error(const el::election_config& c) {
  auto& g = c.guard;
  auto window = static_cast<double>((g.lease + g.max_clock_drift).count());
  return window > 0 ? static_cast<double>(g.max_clock_drift.count()) / (4 * window) : 0;
}

/// The replication workload's nodes on the simulated world: each node is the
/// node composition `conclave node` runs (node_composition.hpp): candidate,
/// replica host, replica front and the leadership wiring between them, with
/// the world's network and the node's own drifting clock, a simulated disk and
/// a term file that survive its crashes.
class repl_world final : private world_observer {
public:
  repl_world(const repl_settings& s, const fault_plan& plan, uint64_t net_seed)
      : settings_(s),
        world_(s.replicas, net_seed, world_network_of(plan), clocks_of(s),
               [](caf::actor_system_config& cfg) {
                 cfg.add_message_types<caf::id_block::conclave_replication>();
                 cfg.add_message_types<caf::id_block::conclave_election>();
               }) {
    econfig_.guard.enabled = true;
    rconfig_.unsafe_skip_sync = s.skip_sync;
    rconfig_.unsafe_ignore_window = s.ignore_window;
    if (s.batch_bytes != 0)
      rconfig_.max_batch_bytes = s.batch_bytes;
    if (s.window_bytes != 0)
      rconfig_.max_inflight_bytes = s.window_bytes;
    // A checkpoint stream lost while its receiver was down is sent again
    // after snapshot_retry; the default 500 ms is the whole quiet period
    // after which replicas_converge judges, so the sim retries sooner.
    rconfig_.snapshot_retry = std::chrono::milliseconds(100);
    for (uint64_t k = 1; k <= s.replicas; ++k)
      members_.push_back(el::node_id{k});
    set_node_notices(world_);
    world_.add_observer(this);
    world_.set_tap([this](timestamp, node_id, node_id, const caf::message&, fate f) {
      if (f != fate::delivered)
        ++lost_;
    });
    nodes_.resize(s.replicas);
    for (size_t i = 0; i < s.replicas; ++i) {
      auto& n = nodes_[i];
      n.disk = std::make_shared<world_node_disk>(
          s.disk, s.fsync, s.lying_disk, net_seed ^ (0x9e3779b97f4a7c15ull * (i + 1)));
      world_.spawn(members_[i], [this, i](world&, node_id, uint32_t incarnation) {
        return make_node(i, incarnation);
      });
    }
  }

  ~repl_world() override {
    for (auto& n : nodes_)
      if (n.disk)
        n.disk->disk().set_releaser(caf::actor{});
  }

  // -- time (what the run loops drive) -----------------------------------------

  /// Runs the world up to run time `t`.
  void advance_to(duration t) { world_.run_until(t); }
  duration elapsed() const { return world_.now(); }
  /// Runs what the clients' requests started at this instant.
  void run() { world_.run_actors(); }

  uint64_t messages() const { return world_.messages_sent(); }
  uint64_t messages_lost() const { return lost_; }
  uint64_t duplicated() const { return world_.messages_duplicated(); }
  const std::vector<duration>& syncs() const { return syncs_; }
  /// Records appended but not yet durable that crashes dropped.
  uint64_t unsynced_lost() const { return unsynced_lost_; }
  uint64_t checkpoints() const {
    uint64_t n = 0;
    for (auto& x : nodes_)
      n += x.disk->disk().checkpoints();
    return n;
  }
  /// What the disks went through (power losses, bit flips, starts).
  disk_counts disks() const {
    auto d = disks_;
    for (auto& x : nodes_)
      d.power_losses += x.disk->power_losses();
    return d;
  }
  uint64_t installs() const {
    uint64_t n = 0;
    for (auto& x : nodes_)
      n += x.disk->disk().installs();
    return n;
  }
  size_t alive() const {
    size_t n = 0;
    for (auto id : members_)
      n += world_.alive(id) ? 1 : 0;
    return n;
  }
  /// Live nodes that hold their log (not amnesiac): with fewer than a
  /// majority, what a lost log acknowledged may be gone, and the replicas
  /// rightly refuse to serve until an operator decides.
  size_t alive_with_log() const {
    size_t n = 0;
    for (size_t i = 0; i < members_.size(); ++i)
      n += world_.alive(members_[i]) && !nodes_[i].amnesiac ? 1 : 0;
    return n;
  }

  void apply(const fault& f, bool end) {
    using k = fault::kind;
    if (apply_disk_stall(world_, f, *nodes_[f.node.value - 1].disk, end))
      return;
    if (end)
      return; // the world ends pauses, partitions and cuts itself
    switch (f.what) {
    case k::crash:
      world_.crash(f.node);
      break;
    case k::fsync_loss:
    case k::bitflip:
      apply_disk_fault(world_, f, *nodes_[f.node.value - 1].disk, disks_);
      break;
    case k::restart:
      world_.crash(f.node);
      world_.restart(f.node);
      break;
    default:
      // The shared words; the parser refuses this workload any other.
      apply_world_fault(world_, f, members_, nodes_, crashed_leaders_);
      break;
    }
    take_down_refused(world_, members_, nodes_);
    world_.run_actors();
  }

  /// The live node whose candidate acts as leader with the highest term (a
  /// paused node does not answer).
  std::optional<size_t> acting_leader() {
    return acting_world_leader(world_, members_, nodes_);
  }

  bool node_alive(size_t i) const { return world_.alive(members_[i]); }

  /// Sends a write to node i's front; the answer lands in the slot.
  std::shared_ptr<timed_reply<rp::txn_result>>
  send_write(size_t i, size_t key, uint64_t seq, rp::commit_mode mode) {
    rp::txn_request req;
    req.ops.push_back(
        rp::txn_op{collection, key_name(key), std::to_string(seq), rp::op_kind::put});
    req.mode = mode;
    return send_txn(i, std::move(req));
  }

  /// Sends a transaction to node i's replica front (what clients talk to);
  /// the answer lands in the slot.
  std::shared_ptr<timed_reply<rp::txn_result>> send_txn(size_t i, rp::txn_request req) {
    return ask_front<rp::txn_result>(i, std::move(req));
  }

  /// Reads a key through node i's replica front; the answer lands in the slot.
  std::shared_ptr<timed_reply<rp::read_result>> send_read(size_t i,
                                                          rp::read_request req) {
    return ask_front<rp::read_result>(i, std::move(req));
  }

  /// Every host's flow-control window and batch size.
  const rp::replica_config& replica_config() const { return rconfig_; }

  /// The promised term of node i's host now (none if it is down or paused).
  std::optional<el::term> promised_of(size_t i) {
    if (i < nodes_.size() && world_.alive(members_[i])) {
      auto r = asker_.ask<rp::replica_status>(nodes_[i].host,
                                              replication_atoms::status_atom_v);
      world_.run_actors();
      if (r->value)
        return r->value->promised;
    }
    return std::nullopt;
  }

  /// Samples every live replica at this instant; `discarded` counts samples
  /// whose status changed while they were taken. A paused node answers
  /// nothing and is not sampled.
  std::vector<repl_sample> sample(size_t& discarded) {
    std::vector<std::shared_ptr<sample_slot>> slots;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (!world_.alive(members_[i]) || world_.paused(members_[i]))
        continue;
      auto slot = std::make_shared<sample_slot>();
      slot->node = i;
      slot->reads.resize(sampled_keys());
      slots.push_back(slot);
    }
    auto* w = &world_;
    auto keys = sampled_keys();
    auto& leases = settings_.sampled_leases;
    auto fill = [w](auto& r) {
      return [w, &r](auto& x) {
        r.value = std::move(x);
        r.done = true;
        r.at = w->now();
      };
    };
    auto ignore = [](caf::error&) {};
    for (auto& sl : slots) {
      auto host = nodes_[sl->node].host;
      auto cand = caf::actor_cast<caf::actor>(nodes_[sl->node].candidate);
      asker_.request<rp::replica_status>(
          host, caf::make_message(replication_atoms::status_atom_v),
          [sl, f = fill(sl->before)](rp::replica_status& x) mutable { f(x); }, ignore);
      asker_.request<el::leader_info>(
          cand,
          caf::make_message(caf::get_atom::value, election_atoms::leader_atom::value),
          [sl, f = fill(sl->info)](el::leader_info& x) mutable { f(x); }, ignore);
      for (size_t k = 0; k < keys; ++k)
        asker_.request<rp::read_result>(
            host,
            caf::make_message(leases.empty()
                                  ? rp::read_request{collection, key_name(k)}
                                  : rp::read_request{rp::lease_collection, leases[k]}),
            [sl, f = fill(sl->reads[k])](rp::read_result& x) mutable { f(x); }, ignore);
      asker_.request<rp::replica_status>(
          host, caf::make_message(replication_atoms::status_atom_v),
          [sl, f = fill(sl->after)](rp::replica_status& x) mutable { f(x); }, ignore);
    }
    world_.run_actors();
    std::vector<repl_sample> out;
    auto now = world_.now();
    for (auto& sl : slots) {
      auto ok = sl->before.value && sl->after.value && sl->info.value;
      for (auto& r : sl->reads)
        ok = ok && r.value;
      if (!ok)
        continue; // the node died while sampled
      auto& a = *sl->before.value;
      auto& b = *sl->after.value;
      note_syncs(sl->node, b);
      if (a.replica_role != b.replica_role || a.serving != b.serving
          || a.promised != b.promised || a.applied != b.applied) {
        ++discarded;
        continue;
      }
      repl_sample s;
      s.at = now;
      s.node = members_[sl->node];
      s.replica_role = a.replica_role;
      s.serving = a.serving;
      s.acting = sl->info.value->is_leader && sl->info.value->acting;
      s.promised = a.promised;
      s.applied = a.applied;
      s.last = a.last;
      s.durable = a.durable;
      s.failed = a.failed;
      s.peak_inflight = a.peak_inflight_bytes;
      s.largest_record = a.largest_record_bytes;
      for (auto& r : sl->reads) {
        uint64_t v = 0;
        if (r.value->found) {
          auto& text = r.value->value;
          if (settings_.sampled_leases.empty())
            std::from_chars(text.data(), text.data() + text.size(), v);
          else
            v = std::hash<std::string>{}(text) | 1; // 0: no holder
        }
        s.values.push_back(v);
      }
      out.push_back(std::move(s));
    }
    return out;
  }

private:
  /// Sends `req` to node i's front through the asker; the answer (or
  /// the error, as an empty answer) lands in the slot with its time.
  template <class Answer, class Request>
  std::shared_ptr<timed_reply<Answer>> ask_front(size_t i, Request req) {
    auto out = std::make_shared<timed_reply<Answer>>();
    auto* w = &world_;
    asker_.request<Answer>(
        nodes_[i].front, caf::make_message(std::move(req)),
        [=](Answer& r) {
          out->value = std::move(r);
          out->done = true;
          out->at = w->now();
        },
        [=](caf::error&) {
          out->done = true;
          out->at = w->now();
        });
    return out;
  }

  static clock_model clocks_of(const repl_settings& s) {
    clock_model c;
    el::election_config guarded;
    guarded.guard.enabled = true;
    c.max_rate_error =
        s.clock_rate_error >= 0 ? s.clock_rate_error : guard_rate_error(guarded);
    c.rates = s.clock_rates;
    return c;
  }

  /// Keys each sample reads: the clients' keys, or the sampled leases.
  size_t sampled_keys() const {
    return settings_.sampled_leases.empty() ? settings_.clients
                                            : settings_.sampled_leases.size();
  }

  /// The sync phases a host finished since the last look (its own count and
  /// the duration of the last one).
  void note_syncs(size_t i, const rp::replica_status& s) {
    auto& n = nodes_[i];
    if (s.syncs > n.syncs_seen)
      syncs_.push_back(std::chrono::microseconds(s.last_sync_us));
    n.syncs_seen = std::max(n.syncs_seen, s.syncs);
  }

  struct node_slot {
    std::shared_ptr<world_node_disk> disk;
    caf::actor host;
    caf::actor front;
    el::candidate_actor candidate;
    uint64_t syncs_seen = 0;
    /// This life did not start (its storage refused to open).
    bool refused = false;
    /// Its log was lost (damage moved aside) and is not rebuilt yet.
    bool amnesiac = false;
  };

  /// One life of node i: what `conclave node` composes, with the world's pieces.
  node_body make_node(size_t i, uint32_t incarnation) {
    auto& sys = world_.system();
    auto& n = nodes_[i];
    auto id = members_[i];
    auto local_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(world_.local_now(id))
            .count();
    auto storage = n.disk->open(members_.size(), local_ms, econfig_.guard.lease_max);
    if (!storage) {
      // `conclave node` prints the line and exits 1: the node stays down.
      disks_.refused(id, storage.error());
      // apply() takes the node down once the fault that restarted it is done.
      auto b = refused_node_body(sys);
      n.host = n.front = b.actor;
      n.candidate = caf::actor_cast<el::candidate_actor>(b.actor);
      n.refused = true;
      return b;
    }
    n.amnesiac = storage.value().amnesiac;
    if (n.amnesiac) {
      auto healed = std::move(storage.value().healed);
      storage.value().healed = [this, i, healed] {
        nodes_[i].amnesiac = false;
        if (healed)
          healed();
      };
    }
    disks_.opened(storage.value());
    auto o = world_node_options(world_, id, members_, econfig_, rconfig_, storage.value(),
                                incarnation);
    auto& ro = *o.replica;
    ro.checkpoint_every_records = settings_.checkpoint_every;
    ro.checkpoint_every_bytes = 0;
    ro.unsafe_install_keeps_state = settings_.bad_install;
    ro.on_failure = leave_on_storage_failure(world_, id, n.disk, disks_);
    ro.lease = settings_.lease;
    o.front.unsafe_reads_without_lease = settings_.reads_without_lease;
    if (settings_.amnesia_unmarked) {
      ro.amnesiac = false;
      ro.healed = nullptr;
    }
    auto parts = node::compose_node(sys, std::move(o));
    n.host = parts.host;
    n.front = parts.front;
    n.candidate = parts.candidate;
    n.syncs_seen = 0;
    auto releaser = spawn_disk_releaser(sys, n.disk->disk_ptr());
    n.disk->disk().set_releaser(releaser);
    caf::anon_send(n.candidate, election_atoms::start_atom::value);
    node_body b;
    b.actor = caf::actor_cast<caf::actor>(parts.candidate);
    b.ports = {parts.host, parts.front, releaser};
    return b;
  }

  void crashed(node_id id, timestamp) override {
    auto& n = nodes_[id.value - 1];
    unsynced_lost_ += n.disk->kill();
  }

  repl_settings settings_;
  world world_;
  /// Declared after the world: gone before the world's actor system.
  asker asker_{world_.system()};
  el::election_config econfig_;
  rp::replica_config rconfig_;
  std::vector<el::node_id> members_;
  std::vector<node_slot> nodes_;
  std::vector<size_t> crashed_leaders_; // by crash-leader, not yet restarted
  std::vector<duration> syncs_;
  uint64_t unsynced_lost_ = 0;
  uint64_t lost_ = 0;
  disk_counts disks_;
};

struct client {
  size_t key = 0;
  /// Index of the write in flight or being retried.
  std::optional<size_t> write;
  size_t target = 0;
  std::shared_ptr<timed_reply<rp::txn_result>> pending;
  duration deadline{0};
  duration next_at{0};
};

/// A client whose operations go into the run's history (linearizability).
struct history_client {
  size_t index = 0;
  size_t target = 0;
  uint64_t made = 0;
  /// The operation in flight: its index in the history, and its answer slot.
  std::optional<size_t> op;
  std::shared_ptr<timed_reply<rp::txn_result>> txn;
  std::shared_ptr<timed_reply<rp::read_result>> read;
  duration deadline{0};
  duration next_at{0};
};

constexpr const char* history_queue = "hq";
constexpr size_t history_keys = 2;
/// Steps the checker may spend on one key or queue of a run's history; past
/// it the partition counts as undecided (reported), not as a violation.
constexpr uint64_t history_step_budget = 200'000;

/// What the store's answer to an operation tells the client: the outcome, or
/// nothing when the operation surely did not happen (a refusal; dropped from
/// the history), or unknown (the operation stays unanswered).
enum class answer_kind { known, refused, unknown };

answer_kind classify(rp::errc code) {
  switch (code) {
  case rp::errc::ok:
  case rp::errc::unknown_collection:
    return answer_kind::known;
  case rp::errc::not_primary:
  case rp::errc::syncing:
  case rp::errc::bad_request:
  case rp::errc::too_large:
  case rp::errc::wrong_kind:
  case rp::errc::timeout:
    return answer_kind::refused;
  default:
    return answer_kind::unknown;
  }
}

struct action {
  duration at{0};
  fault f;
  bool end = false;
};

/// The plan's faults as timed actions (a window's end is one too), in time
/// order; counts them and lists them in the spec's syntax.
std::vector<action> plan_actions(const fault_plan& plan, uint64_t& count,
                                 std::string& list) {
  std::vector<action> actions;
  for (auto& f : plan.faults) {
    ++count;
    list += (list.empty() ? "" : ",") + to_spec(f);
    actions.push_back({f.at, f, false});
    if (f.ends_by_action())
      actions.push_back({f.until, f, true});
  }
  std::stable_sort(actions.begin(), actions.end(),
                   [](const action& a, const action& b) { return a.at < b.at; });
  return actions;
}

} // namespace

bool repl_run_report::safety_violated() const {
  return std::any_of(violations.begin(), violations.end(),
                     [](const repl_violation& v) { return v.safety; });
}

bool repl_run_report::liveness_failed() const {
  return std::any_of(violations.begin(), violations.end(),
                     [](const repl_violation& v) { return !v.safety; });
}

duration repl_bound(const fault_plan& plan) {
  return 3s + 20 * plan.delay_max;
}

outcome::result<void, std::string> validate_repl(const fault_plan& plan, size_t replicas,
                                                 disk_kind disk) {
  if (auto v = validate(plan, replicas); !v)
    return v.error();
  return validate_disk(plan, disk);
}

repl_run_report run_repl_simulation(const repl_settings& settings) {
  repl_run_report rep;
  rep.seed = settings.seed;
  std::mt19937_64 rng{settings.seed};
  auto plan = settings.plan;
  add_random_faults(plan, settings.replicas, rng, workload::replication,
                    settings.disk == disk_kind::files);
  auto net_seed = rng();
  std::mt19937_64 crng{rng()};
  auto actions = plan_actions(plan, rep.faults, rep.fault_list);
  rep.heal = plan.heal_time();
  rep.bound = repl_bound(plan);
  auto stop_at = std::max(rep.heal + rep.bound, settings.min_run);

  repl_world w{settings, plan, net_seed};
  auto& d = w;
  repl_observation obs;
  obs.keys = settings.clients;
  obs.heal = rep.heal;
  obs.bound = rep.bound;
  std::vector<client> clients(settings.clients);
  for (size_t k = 0; k < clients.size(); ++k) {
    clients[k].key = k;
    clients[k].target = k % settings.replicas;
  }
  uint64_t seq = 0;
  // The replica that acts and serves at the last sample (none: no_acting).
  constexpr size_t no_acting = std::numeric_limits<size_t>::max();
  size_t acting = no_acting;
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>{lo, hi}(crng);
  };
  // The replica a client tries next: the one a refusal named, else the
  // acting primary of the last sample, else the next one.
  auto retarget = [&](auto& c, rp::node_id hint) {
    if (hint != rp::no_node && hint.value <= settings.replicas)
      c.target = hint.value - 1;
    else if (acting != no_acting)
      c.target = acting;
    else
      c.target = (c.target + 1) % settings.replicas;
  };
  // The history clients: every operation into `hops` (refused ones marked
  // dropped), judged by the linearizability checker at the end.
  namespace hs = conclave::history;
  std::vector<hs::operation> hops;
  std::vector<bool> dropped;
  std::vector<history_client> hclients(settings.history_clients);
  for (size_t k = 0; k < hclients.size(); ++k) {
    hclients[k].index = k;
    hclients[k].target = (k + 1) % settings.replicas;
    hclients[k].next_at = std::chrono::milliseconds{pick(0, 10)};
  }
  // The answer to c's operation, if it came: into the history.
  auto hanswer = [&](history_client& c) -> std::optional<answer_kind> {
    if (!c.op || !((c.txn && c.txn->done) || (c.read && c.read->done)))
      return std::nullopt;
    auto op = *c.op;
    auto& h = hops[op];
    answer_kind k = answer_kind::unknown;
    rp::node_id hint = rp::no_node;
    if (c.read) {
      auto& r = c.read->value;
      if (r && r->code == rp::errc::ok && r->replica_role == rp::role::primary) {
        k = answer_kind::known;
        h.seen = hs::outcome::read(r->found ? std::optional<std::string>{r->value}
                                            : std::nullopt);
        h.responded = c.read->at;
      } else {
        k = answer_kind::refused; // a refused read observed nothing
        hint = r ? r->primary : rp::no_node;
      }
    } else {
      auto& r = c.txn->value;
      k = r ? classify(r->code) : answer_kind::unknown;
      hint = r ? r->primary : rp::no_node;
      if (k == answer_kind::known) {
        h.responded = c.txn->at;
        if (h.what.kind == hs::op_kind::dequeue)
          h.seen = r->code == rp::errc::ok && !r->outputs.empty() && r->outputs[0].found
                       ? hs::outcome::read(r->outputs[0].value)
                       : hs::outcome::read(std::nullopt);
        else
          h.seen = hs::outcome::done();
      }
    }
    if (k == answer_kind::refused)
      dropped[op] = true;
    if (k != answer_kind::known)
      retarget(c, hint);
    c.op.reset();
    c.txn.reset();
    c.read.reset();
    return k;
  };
  auto hstart = [&](history_client& c, duration now) {
    if (!w.node_alive(c.target))
      retarget(c, rp::no_node);
    if (!w.node_alive(c.target)) {
      c.next_at = now + retry_pause;
      return;
    }
    auto key = "h" + std::to_string(pick(0, history_keys - 1));
    auto value = "c" + std::to_string(c.index) + "." + std::to_string(++c.made);
    auto roll = pick(0, 99);
    hs::operation op;
    op.client = hs::client_id{c.index + 1};
    op.invoked = now;
    rp::txn_request req;
    req.mode = rp::commit_mode::strong;
    if (roll < 35) {
      op.what = hs::call::get(key);
      c.read = w.send_read(c.target, rp::read_request{collection, key});
    } else {
      if (roll < 60) {
        op.what = hs::call::put(key, value);
        req.ops.push_back(rp::txn_op{collection, key, value, rp::op_kind::put});
      } else if (roll < 70) {
        op.what = hs::call::remove(key);
        req.ops.push_back(rp::txn_op{collection, key, "", rp::op_kind::remove});
      } else if (roll < 85) {
        op.what = hs::call::enqueue(history_queue, value);
        req.ops.push_back(rp::txn_op{history_queue, "q", value, rp::op_kind::enqueue});
      } else {
        op.what = hs::call::dequeue(history_queue);
        req.ops.push_back(rp::txn_op{history_queue, "q", "", rp::op_kind::dequeue});
      }
      c.txn = w.send_txn(c.target, std::move(req));
    }
    hops.push_back(std::move(op));
    dropped.push_back(false);
    c.op = hops.size() - 1;
    c.deadline = now + client_timeout;
  };

  size_t next = 0;
  duration next_sample{0};
  bool stopped = false;
  size_t discarded = 0;
  while (!stopped) {
    auto t = std::min(next_sample, stop_at);
    if (next < actions.size())
      t = std::min(t, actions[next].at);
    for (auto& c : clients)
      t = std::min(t, c.pending ? c.deadline : c.next_at);
    for (auto& c : hclients)
      t = std::min(t, c.op ? c.deadline : c.next_at);
    d.advance_to(t);
    auto now = d.elapsed();
    for (; next < actions.size() && actions[next].at <= now; ++next)
      w.apply(actions[next].f, actions[next].end);
    for (auto& c : clients) {
      if (c.pending && c.pending->done) {
        auto p = std::move(c.pending);
        c.pending.reset();
        auto& wr = obs.writes[*c.write];
        if (p->value && p->value->code == rp::errc::ok) {
          wr.acked = p->at;
          wr.acked_by = p->value->primary;
          wr.at = p->value->at;
          wr.acked_term = w.promised_of(wr.acked_by.value - 1);
          if (wr.mode == rp::commit_mode::strong && *wr.acked >= rep.heal) {
            if (!rep.recovery)
              rep.recovery = *wr.acked - rep.heal;
            stopped = stopped || *wr.acked >= settings.min_run;
          }
          c.write.reset();
          c.next_at = now + std::chrono::milliseconds{pick(1, 10)};
        } else {
          retarget(c, p->value ? p->value->primary : rp::no_node);
          c.next_at = now + retry_pause;
        }
      } else if (c.pending && now >= c.deadline) {
        c.pending.reset(); // outcome unknown: retried with the same value
        retarget(c, rp::no_node);
        c.next_at = now;
      }
    }
    for (auto& c : hclients) {
      if (auto k = hanswer(c)) {
        c.next_at = now
                    + (*k == answer_kind::known ? std::chrono::milliseconds{pick(1, 10)}
                                                : retry_pause);
      } else if (c.op && now >= c.deadline) {
        c.op.reset(); // no answer: the operation stays unanswered in the history
        c.txn.reset();
        c.read.reset();
        retarget(c, rp::no_node);
        c.next_at = now;
      }
    }
    if (now >= next_sample) {
      auto got = w.sample(discarded);
      acting = no_acting;
      for (auto& s : got)
        if (s.acting && s.serving)
          acting = s.node.value - 1;
      rep.samples += got.size();
      for (auto& s : got)
        obs.samples.push_back(std::move(s));
      next_sample += sample_interval;
    }
    if (now >= stop_at)
      stopped = true;
    if (stopped)
      break;
    for (auto& c : clients) {
      if (c.pending || now < c.next_at)
        continue;
      if (!c.write) {
        repl_write wr;
        wr.seq = ++seq;
        wr.key = c.key;
        wr.mode = pick(0, 999) < static_cast<int64_t>(settings.weak_share * 1000)
                      ? rp::commit_mode::weak
                      : rp::commit_mode::strong;
        wr.issued = now;
        obs.writes.push_back(wr);
        c.write = obs.writes.size() - 1;
      }
      if (!w.node_alive(c.target))
        retarget(c, rp::no_node);
      if (!w.node_alive(c.target)) {
        c.next_at = now + retry_pause;
        continue;
      }
      auto& wr = obs.writes[*c.write];
      c.pending = w.send_write(c.target, c.key, wr.seq, wr.mode);
      c.deadline = now + client_timeout;
    }
    for (auto& c : hclients)
      if (!c.op && now >= c.next_at)
        hstart(c, now);
    d.run();
  }
  // Quiet period: no new writes; what is in flight settles.
  d.advance_to(d.elapsed() + quiet_period);
  for (auto& c : clients)
    if (c.pending && c.pending->done && c.pending->value
        && c.pending->value->code == rp::errc::ok) {
      auto& wr = obs.writes[*c.write];
      wr.acked = c.pending->at;
      wr.acked_by = c.pending->value->primary;
      wr.at = c.pending->value->at;
      wr.acked_term = w.promised_of(wr.acked_by.value - 1);
    }
  // The final states: sampled again (every sample_interval, up to
  // settle_for more) while a sample changed as it was read, or while the live
  // replicas still apply different lsns (a primary that took over late in
  // the quiet period is still catching a secondary up); a replica that
  // stays behind is judged by replicas_converge.
  auto settle_until = d.elapsed() + settle_for;
  for (int attempt = 0;; ++attempt) {
    size_t changed = 0;
    obs.final_states = w.sample(changed);
    bool apart = std::any_of(obs.final_states.begin(), obs.final_states.end(),
                             [&](const repl_sample& x) {
                               return x.applied != obs.final_states.front().applied;
                             });
    if ((changed == 0 && !apart) || (changed == 0 && d.elapsed() >= settle_until)
        || attempt >= 200)
      break;
    d.advance_to(d.elapsed() + sample_interval);
  }
  for (auto& c : hclients)
    hanswer(c); // answered in the quiet period, or never
  {
    hs::client_history h;
    for (size_t i = 0; i < hops.size(); ++i)
      if (!dropped[i]) {
        h.add(hops[i]);
        rep.history_unanswered += hops[i].completed() ? 0 : 1;
      }
    rep.history_ops = h.size();
    hs::check_options opt;
    opt.step_budget = history_step_budget;
    opt.witness_budget = history_step_budget;
    auto verdict = hs::check_linearizable(h, opt);
    for (auto& p : verdict.problems) {
      if (p.result == hs::verdict::violation)
        rep.violations.push_back({"linearizable", p.describe(h), true, 0});
      else
        ++rep.history_undecided;
    }
  }
  rep.samples += obs.final_states.size();
  // The final states are samples too (acknowledgements of the quiet period).
  for (auto& s : obs.final_states)
    obs.samples.push_back(s);
  rep.samples_discarded = discarded;
  rep.acting_reads = static_cast<uint64_t>(
      std::count_if(obs.samples.begin(), obs.samples.end(),
                    [](const repl_sample& s) { return s.acting && s.serving; }));
  rep.end = d.elapsed();
  for (size_t i = 0; i < settings.replicas; ++i)
    rep.down_at_end += w.node_alive(i) ? 0 : 1;
  obs.judge_liveness = w.alive_with_log() >= settings.replicas / 2 + 1;
  obs.window_bytes = w.replica_config().max_inflight_bytes;
  obs.batch_bytes = w.replica_config().max_batch_bytes;
  rep.liveness_judged = obs.judge_liveness;
  for (auto& v : run_repl_checkers(standard_repl_checkers(), obs))
    rep.violations.push_back(std::move(v));
  std::set<uint64_t> lost;
  for (auto& v : rep.violations)
    if (v.lost_seq != 0)
      lost.insert(v.lost_seq);
  rep.lost = lost.size();
  rep.writes = obs.writes.size();
  for (auto& wr : obs.writes)
    if (wr.acked)
      ++(wr.mode == rp::commit_mode::strong ? rep.strong_acked : rep.weak_acked);
  rep.sync_durations = w.syncs();
  rep.syncs = rep.sync_durations.size();
  rep.messages = w.messages();
  rep.messages_lost = w.messages_lost();
  rep.duplicated = w.duplicated();
  rep.unsynced_lost = w.unsynced_lost();
  rep.disks = w.disks();
  if (rep.disks.storage_failures > 0)
    rep.violations.push_back(storage_failure_violation(rep.disks));
  rep.checkpoints = w.checkpoints();
  rep.installs = w.installs();
  return rep;
}

// -- the lease workload --------------------------------------------------------

namespace {

constexpr auto lease_client_timeout = 200ms;

/// One lease client: what it is doing, what it believes, when it is frozen.
struct lease_client {
  enum class phase { idle, acquiring, holding, releasing };
  size_t index = 0;
  /// Rate of the client's clock against run time.
  double rate = 1.0;
  phase now_doing = phase::idle;
  /// The lease of the attempt (index into the observation's leases), its
  /// holder id (one per attempt, kept across retries) and token once granted.
  size_t lease = 0;
  std::string holder;
  uint64_t attempts = 0;
  uint64_t token = 0;
  /// Run time of the attempt's first acquire.
  duration first_sent{0};
  size_t target = 0;
  std::shared_ptr<timed_reply<rp::txn_result>> pending;
  duration sent{0};
  duration deadline{0};
  /// Next action (acquire, renewal, release or retry).
  duration next_at{0};
  /// When the client means to release, and when its belief ends (run time).
  duration hold_until{0};
  duration believe_until{0};
  size_t release_tries = 0;
  /// Frozen windows [from, to) in run time.
  std::vector<std::pair<duration, duration>> pauses;

  bool paused(duration t) const {
    for (auto& [a, b] : pauses)
      if (t >= a && t < b)
        return true;
    return false;
  }
  /// The run time a span of `d` on this client's clock takes.
  duration real(duration d) const {
    return duration{
        static_cast<duration::rep>(std::floor(static_cast<double>(d.count()) / rate))};
  }
};

} // namespace

bool lease_run_report::safety_violated() const {
  return std::any_of(violations.begin(), violations.end(),
                     [](const repl_violation& v) { return v.safety; });
}

bool lease_run_report::liveness_failed() const {
  return std::any_of(violations.begin(), violations.end(),
                     [](const repl_violation& v) { return !v.safety; });
}

/// The rate error of every clock of a lease run: drift= of the plan, else the
/// drift the hosts allow for; the broken fixture's clocks drift 5 %.
double lease_clock_drift(const lease_settings& s) {
  if (s.unsafe_no_drift)
    return 0.05;
  return s.base.plan.drift ? *s.base.plan.drift : s.drift;
}

duration lease_bound(const lease_settings& s) {
  // Expiries take the longer of what the hosts allow and what the clocks do.
  auto t = rp::lease_timing{std::max(s.drift, lease_clock_drift(s)), s.lock_delay};
  auto hold = 3 * s.ttl, wait = 2 * s.ttl, pause = 3 * s.ttl;
  return repl_bound(s.base.plan) + 2 * rp::expiry_wait(s.ttl, t) + hold + wait + pause
         + s.ttl + lease_client_timeout;
}

lease_run_report run_lease_simulation(const lease_settings& settings) {
  lease_run_report rep;
  rep.seed = settings.base.seed;
  std::mt19937_64 rng{settings.base.seed};
  auto plan = settings.base.plan;
  add_random_faults(plan, settings.base.replicas, rng, workload::lease,
                    settings.base.disk == disk_kind::files);
  auto net_seed = rng();
  std::mt19937_64 lrng{rng()};
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>{lo, hi}(lrng);
  };
  // Clock rates: an extreme two times in three.
  double clock_drift = lease_clock_drift(settings);
  auto draw_rate = [&] {
    switch (pick(0, 2)) {
    case 0:
      return 1.0 - clock_drift;
    case 1:
      return 1.0 + clock_drift;
    default:
      return std::uniform_real_distribution<double>{1.0 - clock_drift,
                                                    1.0 + clock_drift}(lrng);
    }
  };
  auto actions = plan_actions(plan, rep.faults, rep.fault_list);
  rep.heal = plan.heal_time();
  rep.bound = lease_bound(settings);
  auto min_run = std::max<duration>(settings.base.min_run, 10 * settings.ttl);
  auto stop_at = std::max(rep.heal + rep.bound, min_run);

  lease_observation lobs;
  lobs.leases.push_back({"mutex", 1});
  if (settings.limit > 1)
    lobs.leases.push_back({"sem", settings.limit});
  lobs.heal = rep.heal;
  lobs.bound = rep.bound;

  auto ws = settings.base;
  ws.plan = plan;
  ws.lease = settings.unsafe_no_drift
                 ? rp::lease_timing{0.0, duration{0}}
                 : rp::lease_timing{settings.drift, settings.lock_delay};
  ws.clock_rates.clear();
  for (size_t i = 0; i < ws.replicas; ++i)
    ws.clock_rates.push_back(draw_rate());
  ws.sampled_leases.clear();
  for (auto& l : lobs.leases)
    ws.sampled_leases.push_back(l.name);

  std::vector<lease_client> clients(ws.clients);
  auto pause_until = std::max(rep.heal, min_run);
  for (size_t k = 0; k < clients.size(); ++k) {
    auto& c = clients[k];
    c.index = k;
    c.rate = draw_rate();
    c.target = k % ws.replicas;
    c.next_at = std::chrono::milliseconds{pick(0, 20)};
    auto n = static_cast<size_t>(pick(0, static_cast<int64_t>(settings.client_pauses)));
    for (size_t j = 0; j < n; ++j) {
      duration from{pick(0, pause_until.count())};
      auto ttl = std::chrono::duration_cast<duration>(settings.ttl);
      duration len{pick(ttl.count() / 4, 3 * ttl.count())};
      c.pauses.emplace_back(from, from + len);
      ++rep.client_pauses;
    }
  }

  for (auto& p : settings.planned_pauses)
    if (p.client < clients.size()) {
      clients[p.client].pauses.emplace_back(p.from, p.to);
      ++rep.client_pauses;
    }

  repl_world w{ws, plan, net_seed};
  auto& d = w;
  repl_observation obs;
  obs.keys = ws.sampled_leases.size();
  obs.heal = rep.heal;
  obs.bound = rep.bound;
  constexpr size_t no_acting = std::numeric_limits<size_t>::max();
  size_t acting = no_acting;
  auto retarget = [&](lease_client& c, rp::node_id hint) {
    if (hint != rp::no_node && hint.value <= ws.replicas)
      c.target = hint.value - 1;
    else if (acting != no_acting)
      c.target = acting;
    else
      c.target = (c.target + 1) % ws.replicas;
  };
  auto ttl = std::chrono::duration_cast<duration>(settings.ttl);
  auto wait = 2 * settings.ttl;
  auto send = [&](lease_client& c, rp::op_kind kind, duration now) {
    if (!w.node_alive(c.target))
      retarget(c, rp::no_node);
    if (!w.node_alive(c.target)) {
      c.next_at = now + retry_pause;
      return;
    }
    auto& l = lobs.leases[c.lease];
    rp::txn_request req;
    std::string value;
    duration timeout = lease_client_timeout;
    if (kind == rp::op_kind::lease_acquire) {
      rp::lease_params p;
      p.ttl = settings.ttl;
      p.limit = l.limit;
      p.wait = wait;
      p.label = "client " + std::to_string(c.index);
      value = rp::encode_params(p);
      timeout += wait;
      ++rep.acquires;
    } else {
      value = rp::format_token(c.token);
      if (kind == rp::op_kind::lease_renew)
        timeout = std::min<duration>(timeout, c.real(ttl / 3));
    }
    req.ops.push_back(rp::txn_op{l.name, c.holder, value, kind});
    c.pending = w.send_txn(c.target, std::move(req));
    c.sent = now;
    c.deadline = now + timeout;
  };
  // A grant or renewal answered ok: the client believes from now until the
  // request's send + ttl on its clock.
  auto believe = [&](lease_client& c, duration now) {
    auto until = c.sent + c.real(ttl);
    lobs.beliefs.push_back({c.index, c.lease, c.holder, c.token, now, until});
    c.believe_until = std::max(c.believe_until, until);
  };
  // A release sent at `now` ends the attempt's beliefs then.
  auto stop_believing = [&](lease_client& c, duration now) {
    for (auto& b : lobs.beliefs)
      if (b.client == c.index && b.holder == c.holder && b.until > now)
        b.until = std::max(b.from, now);
    c.believe_until = std::min(c.believe_until, now);
  };
  auto go_idle = [&](lease_client& c, duration now) {
    c.now_doing = lease_client::phase::idle;
    c.next_at = now + std::chrono::milliseconds{pick(1, 20)};
  };
  using ph = lease_client::phase;
  auto on_answer = [&](lease_client& c, const timed_reply<rp::txn_result>& p,
                       duration now) {
    auto code = p.value ? p.value->code : rp::errc::not_primary;
    auto hint = p.value ? p.value->primary : rp::no_node;
    bool retry = code != rp::errc::ok && code != rp::errc::lease_busy
                 && code != rp::errc::stale_token;
    if (retry) {
      retarget(c, hint);
      c.next_at = now + retry_pause;
      if (c.now_doing == ph::releasing && ++c.release_tries >= 3)
        go_idle(c, now); // the slot expires on its own
      return;
    }
    switch (c.now_doing) {
    case ph::acquiring:
      if (code == rp::errc::ok && !p.value->outputs.empty()) {
        auto t = rp::parse_token(p.value->outputs[0].value);
        c.token = t ? *t : 0;
        ++rep.grants;
        lobs.grants.push_back({c.index, c.lease, c.holder, c.token, c.first_sent, now});
        if (now >= rep.heal && !rep.recovery)
          rep.recovery = now - rep.heal;
        c.believe_until = duration{0};
        believe(c, now);
        c.now_doing = ph::holding;
        c.hold_until =
            now + c.real(std::chrono::milliseconds{pick(0, 3 * settings.ttl.count())});
        // A grant that waited in the queue may leave little or nothing of the
        // ttl counted from the send: the client renews at once.
        c.next_at = std::min(c.sent + c.real(ttl / 3), c.believe_until - c.real(ttl / 3));
      } else {
        ++rep.busy;
        go_idle(c, now);
      }
      break;
    case ph::holding:
      if (code == rp::errc::ok) {
        ++rep.renewals;
        believe(c, now);
        c.next_at = c.sent + c.real(ttl / 3);
      } else { // stale_token: the slot expired; the belief ends on its own
        ++rep.expiries;
        go_idle(c, now);
      }
      break;
    case ph::releasing:
      ++(code == rp::errc::ok ? rep.releases : rep.expiries);
      go_idle(c, now);
      break;
    case ph::idle:
      break;
    }
  };
  auto act = [&](lease_client& c, duration now) {
    switch (c.now_doing) {
    case ph::idle:
      c.holder = "c" + std::to_string(c.index) + "." + std::to_string(++c.attempts);
      c.lease = lobs.leases.size() > 1 && pick(0, 1) == 1 ? 1 : 0;
      c.now_doing = ph::acquiring;
      c.first_sent = now;
      send(c, rp::op_kind::lease_acquire, now);
      break;
    case ph::acquiring:
      send(c, rp::op_kind::lease_acquire, now);
      break;
    case ph::holding:
      // A client whose ttl ran out (a renewal unanswered, a pause) renews
      // anyway: the store answers ok if it still holds the slot.
      if (now >= c.hold_until) {
        stop_believing(c, now);
        c.now_doing = ph::releasing;
        c.release_tries = 0;
        send(c, rp::op_kind::lease_release, now);
      } else {
        send(c, rp::op_kind::lease_renew, now);
      }
      break;
    case ph::releasing:
      send(c, rp::op_kind::lease_release, now);
      break;
    }
  };

  size_t next = 0;
  duration next_sample{0};
  size_t discarded = 0;
  while (true) {
    auto t = std::min(next_sample, stop_at);
    if (next < actions.size())
      t = std::min(t, actions[next].at);
    auto now0 = d.elapsed();
    for (auto& c : clients) {
      // Answers are read within 1 ms; a frozen client wakes at its pause's end.
      auto wake =
          std::max(c.pending ? std::min(c.deadline, now0 + 1ms) : c.next_at, now0);
      for (bool moved = true; moved;) {
        moved = false;
        for (auto& [from, to] : c.pauses)
          if (wake >= from && wake < to) {
            wake = to;
            moved = true;
          }
      }
      t = std::min(t, wake);
    }
    d.advance_to(t);
    auto now = d.elapsed();
    for (; next < actions.size() && actions[next].at <= now; ++next)
      w.apply(actions[next].f, actions[next].end);
    for (auto& c : clients) {
      if (c.paused(now))
        continue;
      if (c.pending && c.pending->done) {
        auto p = std::move(c.pending);
        c.pending.reset();
        on_answer(c, *p, c.paused(p->at) ? now : p->at);
      } else if (c.pending && now >= c.deadline) {
        c.pending.reset(); // outcome unknown: retried (same holder, same token)
        retarget(c, rp::no_node);
        c.next_at = now;
      }
      if (!c.pending && now >= c.next_at && now < stop_at)
        act(c, now);
    }
    if (now >= next_sample) {
      auto got = w.sample(discarded);
      acting = no_acting;
      for (auto& s : got)
        if (s.acting && s.serving)
          acting = s.node.value - 1;
      for (auto& s : got)
        obs.samples.push_back(std::move(s));
      next_sample += sample_interval;
    }
    if (now >= stop_at || (rep.recovery && now >= min_run))
      break;
    d.run();
  }
  // Quiet period: clients stop; held slots expire, waiters time out.
  auto t = rp::lease_timing{std::max(settings.drift, clock_drift), settings.lock_delay};
  d.advance_to(d.elapsed() + quiet_period + 3 * rp::expiry_wait(settings.ttl, t) + wait);
  for (int attempt = 0; attempt < 5; ++attempt) {
    size_t changed = 0;
    obs.final_states = w.sample(changed);
    if (changed == 0)
      break;
    d.advance_to(d.elapsed() + sample_interval);
  }
  for (auto& s : obs.final_states)
    obs.samples.push_back(s);
  rep.end = d.elapsed();
  obs.judge_liveness = w.alive_with_log() >= ws.replicas / 2 + 1;
  lobs.judge_liveness = obs.judge_liveness;
  rep.liveness_judged = obs.judge_liveness;
  std::vector<std::unique_ptr<repl_checker>> state_checkers;
  for (auto& c : standard_repl_checkers())
    if (std::string_view{c->name()} == "committed_prefix_agrees"
        || std::string_view{c->name()} == "replicas_converge")
      state_checkers.push_back(std::move(c));
  rep.violations = run_lease_checkers(standard_lease_checkers(), lobs);
  for (auto& v : run_repl_checkers(state_checkers, obs))
    rep.violations.push_back(std::move(v));
  if (auto d = w.disks(); d.storage_failures > 0)
    rep.violations.push_back(storage_failure_violation(d));
  rep.max_mutex_believers = max_believers(lobs, 0);
  if (lobs.leases.size() > 1)
    rep.max_sem_believers = max_believers(lobs, 1);
  rep.syncs = w.syncs().size();
  rep.messages = w.messages();
  rep.messages_lost = w.messages_lost();
  return rep;
}

} // namespace conclave::sim
