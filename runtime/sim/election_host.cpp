#include "runtime/sim/election_host.hpp"

#include "runtime/sim/world_clock.hpp"

#include "actors/election/candidate_actor.hpp"
#include "actors/election/election_probe.hpp"
#include "actors/election/host.hpp"
#include "actors/election/leader_task.hpp"

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/make_message.hpp>

namespace conclave::sim {

namespace el = conclave::election;

/// Where leader tasks report; outlives the host if a task ends after it.
struct election_host::task_sink {
  election_host* host = nullptr;
};

namespace {

class sim_transport final : public el::transport {
public:
  sim_transport(election_host& h, node_id self) : h_(h), self_(self) {}
  void send(caf::local_actor*, node_id to, const el::message& m) override {
    h_.on_send(self_, to, m);
  }
  void watch(caf::local_actor*, node_id) override {
    // The world notifies every live candidate of every crash.
  }
  std::optional<node_id> node_of(const caf::actor_addr&) const override {
    return std::nullopt;
  }

private:
  election_host& h_;
  node_id self_;
};

class sim_probe final : public el::election_probe {
public:
  sim_probe(election_host& h, node_id self) : h_(h), self_(self) {}
  void event(const el::election_event& e, timestamp) override { h_.on_event(self_, e); }
  void state(const el::candidate_core& c, timestamp) override { h_.on_state(self_, c); }

private:
  election_host& h_;
  node_id self_;
};

caf::message to_caf(const el::message& m) {
  return std::visit([](const auto& x) { return caf::make_message(x); }, m);
}

} // namespace

election_host::election_host(world& w, election_host_options opts)
    : w_(w), opts_(std::move(opts)), views_(w.size()), records_(w.size()),
      sink_(std::make_shared<task_sink>()), members_(w.size()) {
  sink_->host = this;
  w_.add_observer(this);
  w_.set_notices(
      [](node_id peer, bool up) {
        return up ? caf::make_message(election_atoms::peer_up_atom::value, peer)
                  : caf::make_message(election_atoms::peer_down_atom::value, peer);
      },
      opts_.notice_delay);
}

election_host::~election_host() {
  sink_->host = nullptr;
}

void election_host::add_observer(election_observer* o) {
  observers_.push_back(o);
  auto hooks = o->frequent_hooks();
  if (hooks & election_observer::every_after_event)
    every_event_.push_back(o);
  if (hooks & election_observer::before_event_hook)
    before_event_.push_back(o);
  if (hooks & election_observer::message_sent_hook)
    message_sent_.push_back(o);
}

void election_host::before_event(timestamp now) {
  for (auto* o : before_event_)
    o->before_event(now);
}

void election_host::after_event(timestamp now) {
  // In a message storm most events change nothing a checker looks at and
  // share their instant with the previous one: the checkers' verdicts after
  // such an event are those after the previous one (a million calls of each
  // in a 1,000-node run).
  bool all = news_ || now != last_after_;
  news_ = false;
  last_after_ = now;
  for (auto* o : all ? observers_ : every_event_)
    o->after_event(now);
}

node_body election_host::make(world& w, node_id id, uint32_t incarnation) {
  el::candidate_options o;
  o.id = id;
  o.peers = w.ids();
  o.config = opts_.config;
  o.net = std::make_shared<sim_transport>(*this, id);
  o.clock = std::make_shared<world_host_clock>(w, id, port_id{0});
  o.probe = std::make_shared<sim_probe>(*this, id);
  o.incarnation = incarnation;
  auto& record = records_[id.value - 1];
  if (!record)
    record = std::make_shared<el::memory_promise_record>();
  o.record = record;
  if (opts_.leader_tasks) {
    auto sink = sink_;
    o.task = std::make_shared<el::leader_task>(el::leader_task::from_actor(
        [sink, id](caf::actor_system& sys, el::leader_context) {
          return sys.spawn([sink, id](caf::event_based_actor* self) -> caf::behavior {
            if (sink->host)
              sink->host->on_task(id, true);
            self->attach_functor([sink, id] {
              if (sink->host)
                sink->host->on_task(id, false);
            });
            return {[](caf::ok_atom) {}};
          });
        }));
  }
  auto& v = views_[id.value - 1];
  v = candidate_view{};
  v.alive = true;
  ++live_;
  changed(id);
  return {caf::actor_cast<caf::actor>(el::spawn_candidate(w.system(), std::move(o))), {}};
}

void election_host::start_all() {
  for (auto id : w_.ids())
    w_.spawn(id, [this](world& w, node_id i, uint32_t inc) { return make(w, i, inc); });
  for (auto id : w_.ids())
    w_.inject(id, caf::make_message(election_atoms::start_atom::value));
}

void election_host::elect(node_id id) {
  w_.inject(id, caf::make_message(election_atoms::elect_atom::value));
}

void election_host::crashed(node_id id, timestamp now) {
  auto& v = views_[id.value - 1];
  v.alive = false;
  v.is_leader = v.acting = false;
  v.leader = el::no_node;
  --live_;
  changed(id);
  for (auto* o : observers_)
    o->crashed(id, now);
  if (opts_.config.guard.enabled && opts_.config.guard.death_proof)
    send_death_proofs(id);
}

void election_host::send_death_proofs(node_id id) {
  uint64_t incarnation = w_.incarnation(id);
  for (auto p : w_.ids())
    if (p != id)
      w_.send(id, p,
              caf::make_message(election_atoms::peer_dead_atom::value, id, incarnation));
}

void election_host::restarted(node_id id, timestamp now) {
  news_ = true;
  // A restarted candidate is joined by start_atom; make() reset its view.
  // (Its first steps reach the observers before the restart itself does, as
  // when they were the world's observers after the host.)
  w_.inject(id, caf::make_message(election_atoms::start_atom::value));
  for (auto* o : observers_)
    o->restarted(id, now);
}

void election_host::paused(node_id id, timestamp now, timestamp until) {
  next_unpause_ = std::min(next_unpause_, until);
  changed(id);
  for (auto* o : observers_)
    o->paused(id, now, until);
  if (opts_.unsafe_silence_proofs && opts_.config.guard.enabled
      && opts_.config.guard.death_proof)
    send_death_proofs(id);
}

void election_host::changed(node_id) {
  dirty_ = true;
  news_ = true;
}

void election_host::on_send(node_id from, node_id to, const el::message& m) {
  auto type = m.index();
  for (auto* o : message_sent_)
    o->message_sent(from, to, type);
  w_.send(from, to, to_caf(m));
}

void election_host::on_event(node_id id, const el::election_event& e) {
  news_ = true;
  for (auto* o : observers_)
    o->election_event(id, e, w_.now());
}

void election_host::on_state(node_id id, const el::candidate_core& c) {
  auto& v = views_[id.value - 1];
  auto lease = c.lease_expiry();
  if (lease != timestamp::max() && lease != timestamp{0})
    lease = w_.to_true(id, lease);
  if (v.leader == c.leader() && v.is_leader == c.is_leader() && v.acting == c.acting()
      && v.lease == lease && v.t == c.current_term())
    return;
  v.leader = c.leader();
  v.is_leader = c.is_leader();
  v.acting = c.acting();
  v.lease = lease;
  v.t = c.current_term();
  changed(id);
  for (auto* o : observers_)
    o->view_changed(id, w_.now());
}

void election_host::on_task(node_id id, bool running) {
  news_ = true;
  views_[id.value - 1].task_running = running;
  for (auto* o : observers_) {
    if (running)
      o->task_started(id, w_.now());
    else
      o->task_stopped(id, w_.now());
  }
}

bool election_host::effectively_acting(node_id id) const {
  auto& v = views_[id.value - 1];
  return v.alive && v.acting && w_.now() < v.lease && !w_.paused(id);
}

node_id election_host::agreed_leader() {
  auto now = w_.now();
  if (now >= next_unpause_) {
    dirty_ = true;
    next_unpause_ = timestamp::max();
    for (auto id : w_.ids())
      if (w_.paused(id))
        next_unpause_ = std::min(next_unpause_, w_.paused_until(id));
  }
  if (!dirty_) {
    // Only time passed: the agreed leader's lease may have run out.
    if (agreed_ != el::no_node && !effectively_acting(agreed_))
      agreed_ = el::no_node;
    return agreed_;
  }
  dirty_ = false;
  for (size_t i = 0; i < views_.size(); ++i) {
    auto& v = views_[i];
    node_id id{i + 1};
    members_[i] = {v.alive, v.leader, effectively_acting(id)};
  }
  agreed_ = sim::agreed_leader(members_);
  return agreed_;
}

node_id election_host::current_leader() const {
  node_id best = el::no_node;
  for (size_t i = 0; i < views_.size(); ++i) {
    auto& v = views_[i];
    if (v.alive && v.is_leader && (best == el::no_node || views_[best.value - 1].t < v.t))
      best = node_id{i + 1};
  }
  return best;
}

} // namespace conclave::sim
