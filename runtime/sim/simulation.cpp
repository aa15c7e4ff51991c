#include "runtime/sim/simulation.hpp"

#include "actors/election/candidate_actor.hpp"
#include "actors/election/election_probe.hpp"
#include "actors/election/host.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <tuple>

namespace conclave::sim {

namespace el = conclave::election;
using namespace std::chrono_literals;

duration liveness_bound(const el::election_config& cfg, size_t nodes,
                        const fault_plan& plan) {
  auto n = static_cast<int64_t>(nodes);
  auto detector = cfg.detector.kind == el::detector_kind::phi ? cfg.detector.timeout * 4
                                                              : cfg.detector.timeout;
  auto detect = std::max(cfg.election_wait, detector) + cfg.heartbeat_interval;
  duration elect =
      cfg.algo == el::algorithm::bully
          ? cfg.answer_timeout + cfg.coordinator_timeout + plan.delay_max * 4
          : (cfg.hop_timeout * (cfg.hop_retries + 1) + plan.delay_max) * 2 * n;
  // A resigning or restarted candidate may abstain for a while.
  auto abstain = cfg.election_wait + cfg.coordinator_timeout + cfg.detector.timeout;
  return 3 * (detect + elect) + abstain;
}

namespace {

struct sim_event {
  enum class kind : uint8_t { deliver, timer, peer_down, peer_up, fault };
  timestamp at;
  uint64_t seq;
  kind what;
  uint32_t node;        ///< target index
  uint32_t incarnation; ///< timers: of the actor that armed them
  uint64_t arg;         ///< timer generation, fault index, or peer index
  el::message msg;
};

/// What the heap orders: small, so that sifting is cheap; the event itself
/// (with its message) stays put in a pool.
struct queued {
  timestamp at;
  uint64_t seq;
  uint32_t slot;
};

struct later {
  bool operator()(const queued& a, const queued& b) const {
    return a.at != b.at ? a.at > b.at : a.seq > b.seq;
  }
};

class world;

class sim_transport final : public el::transport {
public:
  sim_transport(world& w, uint32_t index) : w_(w), index_(index) {}
  void send(caf::local_actor*, el::node_id to, const el::message& m) override;
  void watch(caf::local_actor*, el::node_id) override {
    // Every candidate watches every peer; crashes notify all live candidates.
  }
  std::optional<el::node_id> node_of(const caf::actor_addr&) const override {
    return std::nullopt;
  }

private:
  world& w_;
  uint32_t index_;
};

class sim_clock final : public el::election_clock {
public:
  sim_clock(world& w, uint32_t index) : w_(w), index_(index) {}
  timestamp now(caf::local_actor*) override;
  void schedule(caf::local_actor*, duration after, uint64_t generation) override;

private:
  world& w_;
  uint32_t index_;
};

class sim_probe final : public el::election_probe {
public:
  sim_probe(world& w, uint32_t index) : w_(w), index_(index) {}
  void event(const el::election_event& e, timestamp) override;
  void state(const el::candidate_core& c, timestamp) override;

private:
  world& w_;
  uint32_t index_;
};

constexpr uint32_t none = ~uint32_t{0};

class world {
public:
  explicit world(const sim_settings& s) : s_(s), plan_(s.plan), rng_(s.seed) {
    add_random_faults(plan_, s_.nodes, rng_);
    heal_ = plan_.heal_time();
    bound_ = liveness_bound(s_.config, s_.nodes, plan_);
    end_ = std::max(heal_, plan_.last_fault_end()) + bound_;
    for (auto& f : plan_.faults) {
      if (f.what != fault::kind::partition && f.what != fault::kind::cut)
        continue;
      cut c{f.at, f.until, f.what == fault::kind::cut, std::vector<int>(s_.nodes, -1)};
      for (size_t g = 0; g < f.groups.size(); ++g)
        for (auto id : f.groups[g])
          c.group[id.value - 1] = static_cast<int>(g);
      cuts_.push_back(std::move(c));
    }
    report_.seed = s.seed;
    report_.algo = s.config.algo;
    report_.nodes = s.nodes;
    cfg_.set("scheduler.policy", caf::atom("testing"));
    cfg_.set("logger.file-verbosity", caf::atom("quiet"));
    cfg_.add_message_types<caf::id_block::conclave_election>();
    sys_ = std::make_unique<caf::actor_system>(cfg_);
    sched_ = &dynamic_cast<caf::scheduler::test_coordinator&>(sys_->scheduler());
    slots_.resize(s_.nodes);
    follow_count_.assign(s_.nodes, 0);
    for (uint64_t i = 1; i <= s_.nodes; ++i)
      ids_.push_back(el::node_id{i});
  }

  ~world() {
    for (auto& s : slots_)
      if (s.alive)
        caf::anon_send_exit(s.handle, caf::exit_reason::kill);
    sched_->run();
  }

  run_report run() {
    for (uint32_t i = 0; i < slots_.size(); ++i)
      spawn(i);
    for (auto& s : slots_)
      caf::anon_send(s.handle, conclave::election_atoms::start_atom::value);
    sched_->run();
    for (uint64_t i = 0; i < plan_.faults.size(); ++i)
      push({plan_.faults[i].at, 0, sim_event::kind::fault, none, 0, i, {}});
    open_episode(); // the first election
    check_agreement();
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), later{});
      auto q = heap_.back();
      heap_.pop_back();
      if (q.at > end_)
        break;
      sim_event e = std::move(pool_[q.slot]);
      free_.push_back(q.slot);
      now_ = e.at;
      ++report_.events;
      dispatch(e);
      check_agreement();
      if (s_.stop_at_first_agreement && !report_.elections.empty())
        break;
    }
    if (!s_.stop_at_first_agreement) {
      now_ = std::max(now_, end_);
      check_agreement();
      judge_liveness();
    }
    close_split_brain();
    report_.end = now_;
    return std::move(report_);
  }

  // -- called by the simulated transport, clock and probe ---------------------

  timestamp now() const { return now_; }

  void send(uint32_t from, el::node_id to, const el::message& m) {
    ++report_.messages_sent;
    ++sent_by_type_[m.index()];
    if (to.value < 1 || to.value > slots_.size())
      return;
    bool faulty = now_ < heal_;
    if (faulty && plan_.loss > 0 && unit(rng_) < plan_.loss)
      return;
    auto target = static_cast<uint32_t>(to.value - 1);
    push({now_ + delay(), 0, sim_event::kind::deliver, target, 0, from, m});
    if (faulty && plan_.dup > 0 && unit(rng_) < plan_.dup)
      push({now_ + delay(), 0, sim_event::kind::deliver, target, 0, from, m});
  }

  void schedule(uint32_t node, duration after, uint64_t gen) {
    push({now_ + after,
          0,
          sim_event::kind::timer,
          node,
          slots_[node].incarnation,
          gen,
          {}});
  }

  void on_event(uint32_t i, const el::election_event& e) {
    auto& s = slots_[i];
    switch (e.kind) {
    case el::event_kind::leader_changed:
      if (e.t < s.highest_adopted)
        violation("node " + el::to_string(ids_[i]) + " adopted term " + el::to_string(e.t)
                  + " after " + el::to_string(s.highest_adopted));
      s.highest_adopted = std::max(s.highest_adopted, e.t);
      break;
    case el::event_kind::acting_started: {
      auto key = std::make_tuple(e.t.epoch, e.t.leader.value, e.t.incarnation);
      auto who = std::make_pair(i, s.incarnation);
      auto [it, fresh] = acted_in_term_.emplace(key, who);
      if (!fresh && it->second != who)
        violation("two candidates acted in term " + el::to_string(e.t));
      acting_.push_back(i);
      break;
    }
    case el::event_kind::acting_stopped:
      acting_.erase(std::remove(acting_.begin(), acting_.end(), i), acting_.end());
      break;
    case el::event_kind::election_started:
      if (!episode_open_)
        open_episode();
      break;
    case el::event_kind::peer_suspected:
      // Suspicion of one's own leader starts the clock of an election; a leader
      // suspecting a silent follower does not.
      if (!episode_open_ && e.peer.value >= 1 && s.leader == e.peer.value - 1)
        open_episode();
      break;
    default:
      break;
    }
    if (s_.record_timeline && e.kind != el::event_kind::heartbeat_rtt
        && e.kind != el::event_kind::peer_trusted)
      report_.timeline.push_back(
          {now_, ids_[i], std::string{el::to_string(e.kind)}, e.t});
  }

  void on_state(uint32_t i, const el::candidate_core& c) {
    auto& s = slots_[i];
    s.is_leader = c.is_leader();
    s.acting = c.acting();
    s.lease = c.lease_expiry();
    auto leader =
        c.leader() == el::no_node ? none : static_cast<uint32_t>(c.leader().value - 1);
    if (leader != s.leader) {
      if (s.alive && s.leader != none)
        --follow_count_[s.leader];
      s.leader = leader;
      if (s.alive && leader != none)
        ++follow_count_[leader];
    }
    last_changed_ = i;
  }

private:
  struct slot {
    el::candidate_actor handle;
    uint32_t incarnation = 0;
    bool alive = false;
    timestamp paused_until{0};
    uint32_t leader = none;
    bool is_leader = false;
    bool acting = false;
    timestamp lease{0};
    el::term highest_adopted;
  };

  struct cut {
    timestamp from;
    timestamp until;
    bool directed;
    std::vector<int> group; ///< per node; -1 = in no group
  };

  static inline std::uniform_real_distribution<double> unit{0.0, 1.0};

  duration delay() {
    if (plan_.delay_min == plan_.delay_max)
      return plan_.delay_min;
    return duration{std::uniform_int_distribution<int64_t>{
        plan_.delay_min.count(), plan_.delay_max.count()}(rng_)};
  }

  void push(sim_event e) {
    e.seq = seq_++;
    uint32_t slot;
    if (free_.empty()) {
      slot = static_cast<uint32_t>(pool_.size());
      pool_.push_back(std::move(e));
    } else {
      slot = free_.back();
      free_.pop_back();
      pool_[slot] = std::move(e);
    }
    auto& stored = pool_[slot];
    heap_.push_back({stored.at, stored.seq, slot});
    std::push_heap(heap_.begin(), heap_.end(), later{});
  }

  bool paused(uint32_t i) const { return now_ < slots_[i].paused_until; }

  bool blocked(uint32_t from, uint32_t to) const {
    for (auto& c : cuts_) {
      if (now_ < c.from || now_ >= c.until || from == to)
        continue;
      auto a = c.group[from], b = c.group[to];
      if (c.directed ? (a == 0 && b == 1) : (a != b || a < 0))
        return true;
    }
    return false;
  }

  /// Acting as observed from outside: a frozen candidate cannot act, and a lease
  /// that ran out while nobody ran the candidate's timer is over.
  bool effectively_acting(uint32_t i) const {
    auto& s = slots_[i];
    return s.alive && s.acting && now_ < s.lease && !paused(i);
  }

  void dispatch(sim_event& e) {
    if (e.what == sim_event::kind::fault) {
      apply(plan_.faults[e.arg]);
      return;
    }
    auto& s = slots_[e.node];
    if (!s.alive)
      return;
    if (e.what == sim_event::kind::timer && e.incarnation != s.incarnation)
      return;
    if (e.what == sim_event::kind::deliver
        && blocked(static_cast<uint32_t>(e.arg), e.node))
      return;
    if (paused(e.node)) {
      // Frozen: everything waits for SIGCONT. On resume a process's due timers
      // fire at once, while the bytes its peers sent meanwhile still have to be
      // read off the sockets: timers first, deliveries a moment later.
      e.at = s.paused_until;
      if (e.what != sim_event::kind::timer)
        e.at += std::chrono::microseconds(100);
      push(std::move(e));
      return;
    }
    switch (e.what) {
    case sim_event::kind::deliver:
      ++report_.messages_delivered;
      std::visit([&](const auto& m) { caf::anon_send(s.handle, m); }, e.msg);
      break;
    case sim_event::kind::timer:
      caf::anon_send(s.handle, conclave::election_atoms::timer_atom::value, e.arg);
      break;
    case sim_event::kind::peer_down:
      caf::anon_send(s.handle, conclave::election_atoms::peer_down_atom::value,
                     ids_[e.arg]);
      break;
    case sim_event::kind::peer_up:
      caf::anon_send(s.handle, conclave::election_atoms::peer_up_atom::value,
                     ids_[e.arg]);
      break;
    default:
      break;
    }
    sched_->run();
  }

  void spawn(uint32_t i) {
    auto& s = slots_[i];
    el::candidate_options o;
    o.id = ids_[i];
    o.peers = ids_;
    o.config = s_.config;
    if (s_.quiet_start)
      o.config.election_wait = std::chrono::hours(24 * 365);
    o.net = std::make_shared<sim_transport>(*this, i);
    o.clock = std::make_shared<sim_clock>(*this, i);
    o.probe = std::make_shared<sim_probe>(*this, i);
    o.incarnation = s.incarnation + 1;
    s.handle = el::spawn_candidate(*sys_, std::move(o));
    s.alive = true;
    ++live_;
    s.paused_until = timestamp{0};
    s.leader = none;
    s.is_leader = s.acting = false;
    s.highest_adopted = el::term{};
  }

  void crash(uint32_t i) {
    auto& s = slots_[i];
    if (!s.alive)
      return;
    caf::anon_send_exit(s.handle, caf::exit_reason::kill);
    sched_->run();
    note(i, "crashed");
    s.alive = false;
    --live_;
    ++s.incarnation;
    if (s.leader != none)
      --follow_count_[s.leader];
    acting_.erase(std::remove(acting_.begin(), acting_.end(), i), acting_.end());
    for (uint32_t p = 0; p < slots_.size(); ++p)
      if (p != i && slots_[p].alive)
        push({now_ + s_.down_notice, 0, sim_event::kind::peer_down, p, 0, i, {}});
    for (uint32_t p = 0; p < slots_.size(); ++p)
      if (slots_[p].alive)
        last_changed_ = p;
  }

  void restart(uint32_t i) {
    auto& s = slots_[i];
    if (s.alive)
      return;
    ++s.incarnation;
    note(i, "restarted");
    spawn(i);
    caf::anon_send(s.handle, conclave::election_atoms::start_atom::value);
    sched_->run();
    for (uint32_t p = 0; p < slots_.size(); ++p)
      if (p != i && slots_[p].alive)
        push({now_ + s_.down_notice, 0, sim_event::kind::peer_up, p, 0, i, {}});
  }

  /// The candidate that leads with the highest term, if any.
  uint32_t current_leader() const {
    uint32_t best = none;
    for (uint32_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].alive && slots_[i].is_leader
          && (best == none || slots_[best].highest_adopted < slots_[i].highest_adopted))
        best = i;
    return best;
  }

  void apply(const fault& f) {
    auto idx = static_cast<uint32_t>(f.node.value - 1);
    switch (f.what) {
    case fault::kind::crash:
      crash(idx);
      break;
    case fault::kind::restart:
      restart(idx);
      break;
    case fault::kind::pause:
      if (slots_[idx].alive) {
        slots_[idx].paused_until = f.until;
        note(idx, "paused");
      }
      break;
    case fault::kind::crash_leader:
      if (auto l = current_leader(); l != none) {
        crash(l);
        crashed_leaders_.push_back(l);
      }
      break;
    case fault::kind::restart_leader:
      if (!crashed_leaders_.empty()) {
        restart(crashed_leaders_.back());
        crashed_leaders_.pop_back();
      }
      break;
    case fault::kind::pause_leader:
      if (auto l = current_leader(); l != none) {
        slots_[l].paused_until = f.until;
        note(l, "paused");
      }
      break;
    case fault::kind::elect:
      if (slots_[idx].alive) {
        caf::anon_send(slots_[idx].handle, conclave::election_atoms::elect_atom::value);
        sched_->run();
      }
      break;
    case fault::kind::partition:
    case fault::kind::cut:
      break; // blocked() consults the windows
    }
  }

  /// A fault, on the timeline.
  void note(uint32_t i, const char* what) {
    if (s_.record_timeline)
      report_.timeline.push_back({now_, ids_[i], what, el::term{}});
  }

  void violation(std::string what) {
    ++report_.safety_violations;
    if (report_.violations.size() < 5)
      report_.violations.push_back("t=" + std::to_string(now_.count() / 1000)
                                   + "us: " + what);
  }

  void open_episode() {
    episode_open_ = true;
    episode_broke_ = false;
    episode_start_ = now_;
    episode_sent_ = sent_by_type_;
  }

  void check_agreement() {
    // Acting leaders at this instant (safety and split brain).
    size_t acting_now = 0;
    for (auto i : acting_)
      acting_now += effectively_acting(i);
    if (acting_now > 1) {
      if (s_.config.guard.enabled) {
        std::string who;
        for (auto i : acting_)
          if (effectively_acting(i))
            who += " " + el::to_string(ids_[i]) + " (lease to "
                   + std::to_string(slots_[i].lease.count() / 1000) + "us)";
        violation("two candidates act at once under the quorum guard:" + who);
      } else if (!split_) {
        split_ = true;
        split_start_ = now_;
        ++report_.split_brain_windows;
      }
    } else {
      close_split_brain();
    }
    // Agreement: every live candidate follows one leader, which acts.
    auto live = live_;
    bool agreed = false;
    if (last_changed_ != none && slots_[last_changed_].alive) {
      auto l = slots_[last_changed_].leader;
      agreed = l != none && follow_count_[l] == live && effectively_acting(l);
    }
    if (!agreed)
      episode_broke_ = true;
    if (agreed && episode_open_) {
      election_record r;
      r.latency = now_ - episode_start_;
      for (size_t t = 0; t < r.by_type.size(); ++t) {
        r.by_type[t] = sent_by_type_[t] - episode_sent_[t];
        if (!el::is_heartbeat_type(t))
          r.messages += r.by_type[t];
      }
      // An election that neither disturbed agreement nor sent anything (it was
      // called off at once) is no election.
      if (episode_broke_ || r.messages > 0)
        report_.elections.push_back(r);
      episode_open_ = false;
    }
    if (agreed && !agreed_) {
      auto l = slots_[last_changed_].leader;
      agreed = l != none && follow_count_[l] == live && effectively_acting(l);
    }
    if (agreed && !agreed_) {
      if (episode_open_) {
        election_record r;
        r.latency = now_ - episode_start_;
        for (size_t t = 0; t < r.by_type.size(); ++t) {
          r.by_type[t] = sent_by_type_[t] - episode_sent_[t];
          if (t
                  != el::message_index<
                      el::heartbeat_msg> && t != el::message_index<el::heartbeat_ack_msg>)
            r.messages += r.by_type[t];
        }
        report_.elections.push_back(r);
        episode_open_ = false;
      }
      auto l = slots_[last_changed_].leader;
      if (agreed_leader_ != none && agreed_leader_ != l)
        ++report_.leader_changes;
      agreed_leader_ = l;
    }
    agreed_ = agreed;
    if (agreed && now_ >= heal_ && !liveness_met_) {
      liveness_met_ = true;
      report_.time_to_agreement_after_heal = now_ - heal_;
    }
  }

  void close_split_brain() {
    if (split_) {
      split_ = false;
      report_.split_brain_time += now_ - split_start_;
    }
  }

  void judge_liveness() {
    size_t live = 0;
    for (auto& s : slots_)
      live += s.alive;
    if (live == 0)
      return;
    if (s_.config.guard.enabled && live < s_.nodes / 2 + 1)
      return; // no majority: no leader may act, by design
    if (!liveness_met_ || !agreed_) {
      report_.liveness_ok = false;
      report_.violations.push_back("no single leader known to all live candidates within "
                                   + std::to_string(bound_.count() / 1'000'000)
                                   + "ms after the faults healed at "
                                   + std::to_string(heal_.count() / 1'000'000) + "ms");
    }
  }

  sim_settings s_;
  fault_plan plan_;
  std::mt19937_64 rng_;
  timestamp heal_{0};
  duration bound_{0};
  timestamp end_{0};
  std::vector<cut> cuts_;

  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  caf::scheduler::test_coordinator* sched_ = nullptr;

  std::vector<el::node_id> ids_;
  std::vector<slot> slots_;
  std::vector<queued> heap_;
  std::deque<sim_event> pool_; ///< a deque: growing it never moves events
  std::vector<uint32_t> free_;
  uint64_t seq_ = 0;
  timestamp now_{0};

  std::array<uint64_t, el::message_type_count> sent_by_type_{};
  std::vector<uint32_t> follow_count_;
  size_t live_ = 0;
  uint32_t last_changed_ = none;
  std::vector<uint32_t> acting_;
  std::map<std::tuple<uint64_t, uint64_t, uint64_t>, std::pair<uint32_t, uint32_t>>
      acted_in_term_;
  std::vector<uint32_t> crashed_leaders_;

  bool agreed_ = false;
  uint32_t agreed_leader_ = none;
  bool episode_open_ = false;
  bool episode_broke_ = false;
  timestamp episode_start_{0};
  std::array<uint64_t, el::message_type_count> episode_sent_{};
  bool split_ = false;
  timestamp split_start_{0};
  bool liveness_met_ = false;

  run_report report_;
};

void sim_transport::send(caf::local_actor*, el::node_id to, const el::message& m) {
  w_.send(index_, to, m);
}

timestamp sim_clock::now(caf::local_actor*) {
  return w_.now();
}

void sim_clock::schedule(caf::local_actor*, duration after, uint64_t generation) {
  w_.schedule(index_, after, generation);
}

void sim_probe::event(const el::election_event& e, timestamp) {
  w_.on_event(index_, e);
}

void sim_probe::state(const el::candidate_core& c, timestamp) {
  w_.on_state(index_, c);
}

} // namespace

run_report run_simulation(const sim_settings& settings) {
  world w{settings};
  return w.run();
}

} // namespace conclave::sim
