#include "actors/election/candidate_actor.hpp"

#include "actors/election/election_probe.hpp"
#include "actors/election/host.hpp"
#include "actors/election/leader_task.hpp"
#include "protocols/election/core_factory.hpp"

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <set>

namespace conclave::election {

namespace {

/// The leader task of the current leadership, shared with a functor attached to
/// the candidate so that the task is cancelled however the candidate ends.
struct task_slot {
  caf::actor running;
  std::shared_ptr<std::atomic<bool>> cancelled;
  /// Cancelled tasks that have not returned yet (monitored): a new one waits
  /// for them, so this node never runs two leader tasks at once.
  std::set<caf::actor_addr> stopping;
  /// The task to start once `stopping` is empty (this node acts again).
  std::optional<leader_context> pending;

  void cancel() {
    if (cancelled)
      cancelled->store(true, std::memory_order_release);
    if (running) {
      stopping.insert(running.address());
      caf::anon_send_exit(running, caf::exit_reason::user_shutdown);
    }
    running = nullptr;
    cancelled = nullptr;
    pending.reset();
  }
};

struct candidate_state {
  static inline const char* name = "conclave.candidate";

  candidate_options opts;
  std::unique_ptr<candidate_core> core;
  uint64_t timer_generation = 0;
  std::optional<timestamp> armed; ///< deadline of the pending current timer
  std::vector<caf::actor> subscribers;
  std::shared_ptr<task_slot> task = std::make_shared<task_slot>();
};

using self_pointer = candidate_actor::stateful_pointer<candidate_state>;

timestamp now_of(self_pointer self) {
  return self->state.opts.clock->now(self);
}

std::optional<leadership_event::kind> leadership_kind(event_kind k) {
  switch (k) {
  case event_kind::became_leader:
    return leadership_event::kind::became_leader;
  case event_kind::lost_leadership:
    return leadership_event::kind::lost_leadership;
  case event_kind::leader_changed:
    return leadership_event::kind::leader_changed;
  case event_kind::acting_started:
    return leadership_event::kind::acting_started;
  case event_kind::acting_stopped:
    return leadership_event::kind::acting_stopped;
  default:
    return std::nullopt;
  }
}

void start_task(self_pointer self, const leader_context& ctx) {
  auto& st = self->state;
  st.task->running = st.opts.task->start(self->system(), ctx);
  if (st.task->running)
    self->monitor(st.task->running);
}

void on_event(self_pointer self, const election_event& e, timestamp now) {
  auto& st = self->state;
  st.opts.probe->event(e, now);
  if (e.kind == event_kind::acting_started && st.opts.task) {
    st.task->cancel();
    st.task->cancelled = std::make_shared<std::atomic<bool>>(false);
    leader_context ctx{st.core->id(), e.t, st.task->cancelled};
    if (st.task->stopping.empty())
      start_task(self, ctx);
    else
      st.task->pending = ctx; // once the cancelled one has returned
  } else if (e.kind == event_kind::acting_stopped) {
    st.task->cancel();
  }
  if (auto k = leadership_kind(e.kind)) {
    leadership_event ev{*k, st.core->id(), st.core->leader(), e.t};
    for (auto& s : st.subscribers)
      caf::anon_send(s, ev);
  }
}

void arm_timer(self_pointer self, timestamp now) {
  auto& st = self->state;
  auto due = st.core->next_deadline();
  if (!due || (st.armed && *st.armed <= *due))
    return; // nothing to do, or a timer at least as early is pending
  st.armed = due;
  st.opts.clock->send_later(
      self, std::max(duration{0}, *due - now),
      caf::make_message(election_atoms::timer_atom::value, ++st.timer_generation));
}

/// Hands the core's outputs to the world. Called after every input.
void flush(self_pointer self, timestamp now) {
  auto& st = self->state;
  auto& core = *st.core;
  if (auto v = core.take_promise_record(); v && st.opts.record) {
    // Synchronous, and rare (a raise, or a lowering 30 s after the last long
    // promise): the promises sent below stay within what the record held.
    if (st.opts.record->store(*v))
      core.promise_recorded(*v, now);
    else
      core.promise_record_failed(now);
  }
  for (auto& o : core.outbox()) {
    st.opts.probe->message_sent(o.msg.index());
    st.opts.net->send(self, o.to, o.msg);
  }
  core.outbox().clear();
  // Handlers may not append events, but keep the loop index-based to be safe.
  auto& events = core.events();
  for (size_t i = 0; i < events.size(); ++i)
    on_event(self, events[i], now);
  events.clear();
  st.opts.probe->state(core, now);
  arm_timer(self, now);
}

template <class Message>
void deliver(self_pointer self, const Message& m) {
  if (!self->state.opts.net->admits(self->current_sender(), m.from)) {
    // Sent by an actor that does not speak for m.from (directory_transport.hpp).
    self->state.opts.probe->message_rejected("unverified_sender");
    return;
  }
  auto now = now_of(self);
  self->state.opts.probe->message_received(message_index<Message>);
  self->state.core->handle(message{m}, now);
  flush(self, now);
}

void start(self_pointer self) {
  auto& st = self->state;
  for (auto p : st.opts.peers)
    if (p != st.opts.id)
      st.opts.net->watch(self, p);
  auto now = now_of(self);
  st.core->start(now, st.opts.incarnation);
  flush(self, now);
}

candidate_actor::behavior_type candidate_impl(self_pointer self, candidate_options opts) {
  auto& st = self->state;
  if (!opts.clock)
    opts.clock = std::make_shared<caf_host_clock>();
  if (!opts.probe)
    opts.probe = std::make_shared<election_probe>();
  st.core = make_core(opts.id, opts.peers, opts.config);
  st.opts = std::move(opts);
  // Read now, before the host starts the candidate (the node first waits to
  // link with its peers): its start promise counts from this read.
  if (st.opts.record)
    st.core->use_promise_record(st.opts.record->load(), now_of(self));
  self->attach_functor([slot = st.task] { slot->cancel(); });
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.task->stopping.erase(dm.source) > 0) { // a cancelled task returned
      if (st.task->stopping.empty() && st.task->pending) {
        auto ctx = *st.task->pending;
        st.task->pending.reset();
        start_task(self, ctx);
      }
      return;
    }
    if (st.task->running && dm.source == st.task->running.address()) {
      st.task->running = nullptr; // the task ended by itself
      return;
    }
    auto& subs = st.subscribers;
    auto before = subs.size();
    subs.erase(
        std::remove_if(subs.begin(), subs.end(),
                       [&](const caf::actor& s) { return s.address() == dm.source; }),
        subs.end());
    if (subs.size() != before)
      return;
    if (auto id = st.opts.net->node_of(dm.source)) {
      auto now = now_of(self);
      st.core->peer_down(*id, now);
      flush(self, now);
    }
  });
  self->set_exit_handler([self](caf::exit_msg& em) {
    auto now = now_of(self);
    self->state.core->stop(now); // a leader resigns so the others elect at once
    flush(self, now);
    self->state.task->cancel();
    self->quit(em.reason);
  });
  self->set_default_handler([self](caf::scheduled_actor*, caf::message_view&) {
    self->state.opts.probe->message_rejected("unexpected_message");
    return caf::result<caf::message>{caf::sec::unexpected_message};
  });
  if (st.opts.start_immediately)
    start(self);
  return {
      [self](const election_msg& m) { deliver(self, m); },
      [self](const answer_msg& m) { deliver(self, m); },
      [self](const coordinator_msg& m) { deliver(self, m); },
      [self](const ring_election_msg& m) { deliver(self, m); },
      [self](const ring_coordinator_msg& m) { deliver(self, m); },
      [self](const ring_ack_msg& m) { deliver(self, m); },
      [self](const heartbeat_msg& m) { deliver(self, m); },
      [self](const heartbeat_ack_msg& m) { deliver(self, m); },
      [self](const resign_msg& m) { deliver(self, m); },
      [self](const pre_vote_msg& m) { deliver(self, m); },
      [self](const pre_vote_reply_msg& m) { deliver(self, m); },
      [self](election_atoms::timer_atom, uint64_t generation) {
        auto& st = self->state;
        if (generation != st.timer_generation)
          return; // superseded by an earlier timer
        auto now = now_of(self);
        if (st.armed)
          st.opts.probe->timer_fired(now - *st.armed, st.core->is_leader());
        st.armed.reset();
        st.core->tick(now);
        flush(self, now);
      },
      [self](election_atoms::start_atom) { start(self); },
      [self](election_atoms::peer_down_atom, node_id peer) {
        auto now = now_of(self);
        self->state.core->peer_down(peer, now);
        flush(self, now);
      },
      [self](election_atoms::peer_dead_atom, node_id peer, uint64_t incarnation) {
        auto now = now_of(self);
        self->state.core->peer_dead(peer, incarnation, now);
        flush(self, now);
      },
      [self](election_atoms::peer_up_atom, node_id peer) {
        auto now = now_of(self);
        self->state.core->peer_up(peer, now);
        flush(self, now);
      },
      [self](election_atoms::elect_atom) {
        auto now = now_of(self);
        self->state.core->request_election(now);
        flush(self, now);
      },
      [self](election_atoms::observe_atom, uint64_t epoch) {
        auto now = now_of(self);
        self->state.core->observe_external_epoch(epoch, now);
        flush(self, now);
      },
      [self](election_atoms::resign_atom) {
        auto now = now_of(self);
        bool ok = self->state.core->resign(now);
        flush(self, now);
        return ok;
      },
      [self](caf::get_atom, election_atoms::leader_atom) {
        auto& core = *self->state.core;
        return leader_info{core.id(), core.leader(), core.current_term(),
                           core.is_leader(), core.acting()};
      },
      [self](caf::get_atom, election_atoms::members_atom) {
        return self->state.core->participants(now_of(self));
      },
      [self](caf::subscribe_atom, caf::actor subscriber) {
        auto& core = *self->state.core;
        self->monitor(subscriber);
        caf::anon_send(subscriber,
                       leadership_event{leadership_event::kind::leader_changed, core.id(),
                                        core.leader(), core.current_term()});
        self->state.subscribers.push_back(std::move(subscriber));
      },
  };
}

} // namespace

candidate_actor spawn_candidate(caf::actor_system& sys, candidate_options opts) {
  return sys.spawn(candidate_impl, std::move(opts));
}

} // namespace conclave::election
