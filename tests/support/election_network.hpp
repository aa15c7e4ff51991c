// Pure election cores on the simulated world (runtime/sim/world.hpp), for
// protocol tests: no actors, no sockets, no sleeping. Each node of the world runs
// a candidate_core through a plain function; messages travel through the world's
// network (a fixed latency here), timers through its queue, and time jumps to the
// next event. Members can be crashed (their peers optionally get "peer down" at
// once, as a dropped connection gives), restarted with the same id, cut off by
// partitions, and messages can be dropped by a predicate. Every sent message is
// counted by type. A test may call a core directly
// (node(i).request_election(net.now())); its outputs go out when the network next
// runs. Agreement is the simulator's one definition (runtime/sim/agreement.hpp).
#pragma once

#include "protocols/election/core_factory.hpp"
#include "protocols/election/type_ids.hpp"
#include "runtime/sim/agreement.hpp"
#include "runtime/sim/world.hpp"

#include <caf/make_message.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <vector>

namespace conclave::testing {

namespace el = conclave::election;

/// Candidate `x`'s id.
inline el::node_id id(uint64_t x) {
  return el::node_id{x};
}

/// `a` with the quorum guard on: lease 100 ms, drift bound 10 ms, a 150 ms
/// detector (the guard's inequality holds with room).
inline el::election_config guarded(el::algorithm a) {
  using namespace std::chrono_literals;
  el::election_config cfg;
  cfg.algo = a;
  cfg.guard.enabled = true;
  cfg.guard.lease = 100ms;
  cfg.guard.max_clock_drift = 10ms;
  cfg.detector.timeout = 150ms;
  return cfg;
}

/// `cfg` with the lease fixed at guard.lease (lease_max = lease: no adaptation).
inline el::election_config fixed_lease(el::election_config cfg) {
  cfg.guard.lease_max = cfg.guard.lease;
  return cfg;
}

/// The heartbeat acks in `c`'s outbox to `to`; the outbox is cleared.
inline std::vector<el::heartbeat_ack_msg> acks_to(el::candidate_core& c, el::node_id to) {
  std::vector<el::heartbeat_ack_msg> out;
  for (auto& o : c.outbox())
    if (auto a = std::get_if<el::heartbeat_ack_msg>(&o.msg); a && o.to == to)
      out.push_back(*a);
  c.outbox().clear();
  return out;
}

class election_network {
public:
  using clock_ms = std::chrono::milliseconds;

  election_network(size_t n, el::election_config cfg,
                   el::duration latency = std::chrono::milliseconds(1))
      : cfg_(cfg), world_(n, 1, network(latency), {}, [](caf::actor_system_config& c) {
          c.add_message_types<caf::id_block::conclave_election>();
        }) {
    nodes_.resize(n);
    for (auto id : world_.ids())
      world_.spawn(id, [this](sim::world&, el::node_id i, uint32_t) { return body(i); });
  }

  // -- driving ----------------------------------------------------------------

  void start_all() {
    for (auto id : ids())
      start(id);
  }

  void start(el::node_id id) {
    core(id).start(now(), ++starts_);
    flush(id);
  }

  /// Processes events until `pred` holds or virtual time passes `limit` from now.
  bool run_until(const std::function<bool()>& pred, el::duration limit) {
    auto end = now() + limit;
    flush_all();
    while (!pred()) {
      if (!world_.step(end))
        return pred();
    }
    return true;
  }

  /// Processes every event up to now + d.
  void run_for(el::duration d) {
    flush_all();
    world_.run_until(now() + d);
  }

  // -- faults -----------------------------------------------------------------

  /// Crashes `id`; with notify, every live peer gets peer_down (connection drop).
  void crash(el::node_id id, bool notify = true) {
    world_.crash(id, false);
    if (!notify)
      return;
    for (auto p : ids()) {
      if (p != id && alive(p)) {
        core(p).peer_down(id, now());
        flush(p);
      }
    }
  }

  /// Tells `to` that incarnation `incarnation` of `id` is proven dead (its
  /// liveness connection was closed by its kernel).
  void prove_dead(el::node_id to, el::node_id id, uint64_t incarnation) {
    core(to).peer_dead(id, incarnation, now());
    flush(to);
  }

  /// Tells only `to` that `id` is down (others notice later, if at all).
  void notify_down(el::node_id to, el::node_id id) {
    core(to).peer_down(id, now());
    flush(to);
  }

  /// Brings `id` back with a fresh core (a restarted process).
  void restart(el::node_id id) {
    world_.restart(id);
    start(id);
  }

  /// Members in different groups cannot talk; unlisted members are alone.
  void partition(const std::vector<std::vector<el::node_id>>& groups) {
    world_.end_cuts(now());
    std::vector<int> group(ids().size(), -1);
    for (size_t g = 0; g < groups.size(); ++g)
      for (auto id : groups[g])
        group[id.value - 1] = static_cast<int>(g);
    world_.add_cut(now(), el::timestamp::max(), group, false);
  }

  void heal() { world_.end_cuts(now()); }

  /// Freezes `id` for `d` (SIGSTOP-like, or a starved process): nothing reaches
  /// it meanwhile; then its due timers fire first, late, and the messages
  /// that queued up follow 100 us later.
  void pause(el::node_id id, el::duration d) { world_.pause(id, now() + d); }

  /// Drops every sent message for which `f` returns true.
  void set_drop(std::function<bool(el::node_id, el::node_id, const el::message&)> f) {
    drop_ = std::move(f);
  }

  // -- observing ----------------------------------------------------------------

  el::candidate_core& node(el::node_id id) { return core(id); }
  el::candidate_core& node(uint64_t id) { return core(el::node_id{id}); }
  bool alive(el::node_id id) const { return world_.alive(id); }
  el::timestamp now() const { return world_.now(); }
  const std::vector<el::node_id>& ids() const { return world_.ids(); }

  /// The one leader every live member agrees on (is_leader and acting at the
  /// leader, followed by all others), or no_node.
  el::node_id agreed_leader() const {
    std::vector<sim::member_view> members;
    for (auto id : ids()) {
      auto& c = *nodes_[id.value - 1].core;
      members.push_back({alive(id), c.leader(), c.is_leader() && c.acting()});
    }
    return sim::agreed_leader(members);
  }

  /// Live members that currently believe they lead.
  std::vector<el::node_id> leaders() const {
    std::vector<el::node_id> result;
    for (auto id : ids())
      if (alive(id) && nodes_[id.value - 1].core->is_leader())
        result.push_back(id);
    return result;
  }

  /// Messages sent since the last reset_counts(), by type index.
  const std::array<uint64_t, el::message_type_count>& sent() const { return sent_; }
  uint64_t sent(size_t type_index) const { return sent_[type_index]; }
  /// Every message except heartbeats and their acks.
  uint64_t election_messages() const {
    uint64_t sum = 0;
    for (size_t i = 0; i < sent_.size(); ++i)
      if (!el::is_heartbeat_type(i))
        sum += sent_[i];
    return sum;
  }
  void reset_counts() { sent_.fill(0); }

  /// Every node keeps a promise record unless turned off (call before the
  /// nodes start; a node without one never promises more than guard.lease).
  void keep_promise_records(bool on) {
    records_on_ = on;
    for (auto id : ids())
      nodes_[id.value - 1].core = new_core(id);
  }
  /// What `id`'s promise record holds, and how many writes all nodes made.
  el::duration promise_record(el::node_id id) const {
    return nodes_[id.value - 1].record;
  }
  uint64_t promise_record_writes() const { return record_writes_; }

  /// Every event a member reported, in order.
  const std::vector<el::election_event>& events(el::node_id id) { return log_[id]; }

  template <class T>
  static constexpr size_t index_of() {
    return el::message_index<T>;
  }

private:
  struct hosted {
    std::unique_ptr<el::candidate_core> core;
    uint64_t generation = 0;
    std::optional<el::timestamp> armed;
    /// The node's promise record (candidate_core::use_promise_record).
    el::duration record{0};
  };

  static sim::network_model network(el::duration latency) {
    sim::network_model m;
    m.delay_min = m.delay_max = latency;
    return m;
  }

  el::candidate_core& core(el::node_id id) { return *nodes_[id.value - 1].core; }

  std::unique_ptr<el::candidate_core> new_core(el::node_id id) {
    std::vector<el::node_id> peers;
    for (auto p : ids())
      if (p != id)
        peers.push_back(p);
    auto c = el::make_core(id, peers, cfg_);
    if (records_on_) // survives the restart, as a file does
      c->use_promise_record(nodes_[id.value - 1].record);
    return c;
  }

  /// A fresh core for `id`, fed by the world.
  sim::node_body body(el::node_id id) {
    auto& h = nodes_[id.value - 1];
    h.core = new_core(id);
    h.generation = 0;
    h.armed.reset();
    sim::node_body b;
    b.receive = [this, id](const caf::message& m) { receive(id, m); };
    return b;
  }

  template <class... Ts>
  bool deliver_if(el::node_id id, const caf::message& m) {
    return (try_deliver<Ts>(id, m) || ...);
  }

  template <class T>
  bool try_deliver(el::node_id id, const caf::message& m) {
    if (!m.match_elements<T>())
      return false;
    core(id).handle(el::message{m.get_as<T>(0)}, now());
    return true;
  }

  void receive(el::node_id id, const caf::message& m) {
    auto& h = nodes_[id.value - 1];
    if (m.match_elements<election_atoms::timer_atom, uint64_t>()) {
      if (m.get_as<uint64_t>(1) != h.generation)
        return; // superseded by an earlier timer
      h.armed.reset();
      h.core->tick(now());
    } else {
      deliver_if<el::election_msg, el::answer_msg, el::coordinator_msg,
                 el::ring_election_msg, el::ring_coordinator_msg, el::ring_ack_msg,
                 el::heartbeat_msg, el::heartbeat_ack_msg, el::resign_msg,
                 el::pre_vote_msg, el::pre_vote_reply_msg>(id, m);
    }
    flush(id);
  }

  void flush_all() {
    for (auto id : ids())
      if (alive(id))
        flush(id);
  }

  void flush(el::node_id id) {
    auto& h = nodes_[id.value - 1];
    auto& c = *h.core;
    if (auto v = c.take_promise_record()) {
      // Written at once and durable (a synchronous write that completed).
      h.record = *v;
      ++record_writes_;
      c.promise_recorded(*v, now());
    }
    for (auto& o : c.outbox()) {
      ++sent_[o.msg.index()];
      if (drop_ && drop_(id, o.to, o.msg))
        continue;
      world_.send(id, o.to,
                  std::visit([](const auto& x) { return caf::make_message(x); }, o.msg));
    }
    c.outbox().clear();
    auto& log = log_[id];
    log.insert(log.end(), c.events().begin(), c.events().end());
    c.events().clear();
    if (auto due = c.next_deadline(); due && (!h.armed || *due < *h.armed)) {
      h.armed = due;
      world_.schedule(
          id, std::max(el::duration{0}, *due - now()),
          caf::make_message(election_atoms::timer_atom::value, ++h.generation));
    }
  }

  el::election_config cfg_;
  sim::world world_;
  uint64_t starts_ = 0; ///< incarnations grow with every (re)start
  bool records_on_ = true;
  uint64_t record_writes_ = 0;
  std::vector<hosted> nodes_;
  std::function<bool(el::node_id, el::node_id, const el::message&)> drop_;
  std::array<uint64_t, el::message_type_count> sent_{};
  std::map<el::node_id, std::vector<el::election_event>> log_;
};

/// Seeds 1 to 200 of a random fault schedule, each on 3 to 7 candidates of
/// `cfg` with 5 % of messages lost while faults last: 12 phases, each a
/// partition in two groups (kind 0), a heal (kind 1) or
/// `fault(net, rng, kind, victim)` (kinds 2 to kinds - 1), followed by 50 to
/// 450 ms of events with `acting(net) <= 1` checked after every one. Then
/// every fault is healed and every crashed candidate restarted, and the
/// candidates must agree on a leader within 5 s, still with at most one
/// acting.
template <class Fault, class Acting>
void expect_one_acting_under_random_faults(const el::election_config& cfg, uint32_t kinds,
                                           Fault fault, Acting acting) {
  using namespace std::chrono_literals;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    size_t n = 3 + rng() % 5;
    election_network net(n, cfg);
    std::mt19937_64 loss_rng(seed * 7919);
    bool lossy = true;
    net.set_drop([&](el::node_id, el::node_id, const el::message&) {
      return lossy && loss_rng() % 100 < 5;
    });
    net.start_all();
    bool violated = false;
    auto check = [&] {
      violated |= acting(net) > 1;
      return false;
    };
    for (int phase = 0; phase < 12 && !violated; ++phase) {
      auto kind = static_cast<uint32_t>(rng() % kinds);
      auto victim = net.ids()[rng() % n];
      if (kind == 0) {
        std::vector<std::vector<el::node_id>> groups(2);
        for (auto i : net.ids())
          groups[rng() % 2].push_back(i);
        net.partition(groups);
      } else if (kind == 1) {
        net.heal();
      } else {
        fault(net, rng, kind, victim);
      }
      net.run_until(check, std::chrono::milliseconds(50 + rng() % 400));
    }
    EXPECT_FALSE(violated) << "seed " << seed;
    lossy = false;
    net.heal();
    for (auto i : net.ids())
      if (!net.alive(i))
        net.restart(i);
    EXPECT_TRUE(net.run_until(
        [&] {
          check();
          return net.agreed_leader() != el::no_node;
        },
        5s))
        << "seed " << seed;
    EXPECT_FALSE(violated) << "seed " << seed;
  }
}

} // namespace conclave::testing
