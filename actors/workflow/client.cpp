#include "actors/workflow/client.hpp"

#include "actors/workflow/host_time.hpp"

#include "actors/workflow/job_store.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <set>

namespace conclave::workflow {

namespace {

/// One subscriber of one job: events are pushed in sequence order, once
/// each; those that arrive early (live ones before the stored backlog was
/// read) wait in `held`.
struct subscription {
  uint64_t id = 0;
  caf::actor who;
  uint64_t next = 1;
  bool backfilled = false;
  std::map<uint64_t, job_event> held;
};

struct client_state {
  client_options opts;
  std::unique_ptr<job_store<client_actor::base>> store;
  bool ready = false;
  /// Requests that arrived before the collections were open.
  std::vector<std::function<void()>> waiting;
  uint64_t next_id = 1;
  /// Subscriptions per job id.
  std::map<std::string, std::vector<subscription>> subscriptions;
  uint64_t next_subscription = 1;
  /// Submissions waiting for the submission batch in flight.
  std::deque<job_store<client_actor::base>::create_item> creating;
  bool create_in_flight = false;
  static inline const char* name = "conclave.workflow_client";
};

using client_impl = client_actor::stateful_pointer<client_state>;

/// Removes the subscriptions of `who` to job `job` (every job if null);
/// returns how many.
size_t unsubscribe(client_impl self, const caf::actor_addr& who, const std::string* job) {
  auto& all = self->state.subscriptions;
  size_t removed = 0;
  for (auto i = job ? all.find(*job) : all.begin(); i != all.end();) {
    auto& subs = i->second;
    auto before = subs.size();
    subs.erase(
        std::remove_if(subs.begin(), subs.end(),
                       [&](const subscription& s) { return s.who.address() == who; }),
        subs.end());
    removed += before - subs.size();
    i = subs.empty() ? all.erase(i) : std::next(i);
    if (job)
      break;
  }
  return removed;
}

/// The subscription `id` of `job`, if it still exists.
subscription* find_subscription(client_impl self, const std::string& job, uint64_t id) {
  auto i = self->state.subscriptions.find(job);
  if (i == self->state.subscriptions.end())
    return nullptr;
  for (auto& s : i->second)
    if (s.id == id)
      return &s;
  return nullptr;
}

void offer(client_impl self, subscription& sub, const job_event& ev) {
  if (ev.seq >= sub.next)
    sub.held.emplace(ev.seq, ev);
  if (!sub.backfilled)
    return;
  while (!sub.held.empty() && sub.held.begin()->first <= sub.next) {
    auto node = sub.held.extract(sub.held.begin());
    if (node.key() == sub.next) {
      caf::anon_send(sub.who, workflow_atoms::events_atom_v, node.mapped());
      ++sub.next;
    }
  }
}

timestamp now_of(client_impl self) {
  return host_now(self->state.opts.clock, self, self->state.opts.clock_offset);
}

/// The jobs with a wf.state row in the class of `s`, in key order.
void class_members(client_impl self, step_state s,
                   std::function<void(caf::error, std::vector<job_id>)> done) {
  auto [from, to] = layout::state_range(s);
  self->state.store->scan(layout::state, from, to, [done](caf::error e, kv_items items) {
    std::vector<job_id> ids;
    if (!e)
      for (auto& [k, v] : items)
        if (auto j = layout::decode_state_key(k))
          ids.push_back(j.value());
    done(std::move(e), std::move(ids));
  });
}

/// Runs f once the collections exist.
void when_ready(client_impl self, std::function<void()> f) {
  if (self->state.ready)
    f();
  else
    self->state.waiting.push_back(std::move(f));
}

template <class T, class Mutate>
caf::result<T> change(client_impl self, const job_id& id, Mutate m) {
  auto rp = self->make_response_promise<T>();
  when_ready(self, [self, id, m, rp]() mutable {
    self->state.store->update(
        id, std::nullopt, [self, m](job_view& v) { return m(v, now_of(self)); },
        [rp](caf::error e, job_change c) mutable {
          if (e)
            rp.deliver(std::move(e));
          else
            rp.deliver(c.view.job.state);
        });
  });
  return rp;
}

/// Sends the waiting submissions as one grouped batch (at most one per job
/// id and submit_group in all; the rest wait for its answer).
void flush_creates(client_impl self) {
  auto& st = self->state;
  if (st.create_in_flight || st.creating.empty())
    return;
  auto limit = std::max<size_t>(1, st.opts.submit_group);
  // Taken from the front: O(batch + skipped), not O(waiting) (a flood of
  // submissions made every flush move all of them).
  std::vector<job_store<client_actor::base>::create_item> now, skipped;
  std::set<std::string> ids;
  while (now.size() < limit && !st.creating.empty()) {
    auto& it = st.creating.front();
    if (ids.insert(it.view.job.id.value).second)
      now.push_back(std::move(it));
    else
      skipped.push_back(std::move(it)); // the same id as one in this batch
    st.creating.pop_front();
  }
  for (auto i = skipped.rbegin(); i != skipped.rend(); ++i)
    st.creating.push_front(std::move(*i));
  st.create_in_flight = true;
  st.store->create_many(std::move(now), [self] {
    self->state.create_in_flight = false;
    flush_creates(self);
  });
}

client_actor::behavior_type make_client(client_impl self, client_options opts) {
  auto& st = self->state;
  st.opts = std::move(opts);
  // Unexpected messages are dropped, not printed (stdout may carry --json).
  self->set_default_handler(caf::drop);
  self->set_down_handler(
      [self](caf::down_msg& m) { unsubscribe(self, m.source, nullptr); });
  st.store = std::make_unique<job_store<client_actor::base>>(
      self, st.opts.store, st.opts.pipelined, 1000, st.opts.batched);
  if (st.opts.probe)
    st.store->set_probe(st.opts.probe.get());
  st.store->set_events(caf::actor_cast<caf::actor>(self));
  st.store->open_all([self](caf::error e) {
    if (e)
      return self->quit(e);
    auto& st = self->state;
    st.ready = true;
    auto w = std::move(st.waiting);
    for (auto& f : w)
      f();
  });
  return {
      [self](workflow_atoms::submit_atom, job_spec& spec) -> caf::result<job_id> {
        auto& st = self->state;
        if (spec.id.value.empty())
          spec.id.value = st.opts.id_prefix + "-" + std::to_string(st.next_id++);
        auto known = [self](const std::string& k) {
          return self->state.opts.any_kind || self->state.opts.known_kinds.count(k) > 0;
        };
        if (auto ok = validate(spec, st.opts.limits, known); !ok)
          return to_caf_error(ok.error());
        auto rp = self->make_response_promise<job_id>();
        when_ready(self, [self, spec, rp]() mutable {
          effects e;
          auto v = make_job(spec, now_of(self), e);
          auto done = [rp, id = spec.id](caf::error err) mutable {
            if (err)
              rp.deliver(std::move(err));
            else
              rp.deliver(id);
          };
          auto& st = self->state;
          if (!st.opts.batched || st.opts.submit_group <= 1)
            return st.store->create(std::move(v), std::move(e), std::move(done));
          st.creating.push_back({std::move(v), std::move(e), std::move(done)});
          flush_creates(self);
        });
        return rp;
      },
      [self](caf::get_atom, const job_id& id) -> caf::result<job_view> {
        auto rp = self->make_response_promise<job_view>();
        when_ready(self, [self, id, rp]() mutable {
          self->state.store->read(id, [rp](caf::error e, job_view v) mutable {
            if (e)
              rp.deliver(std::move(e));
            else
              rp.deliver(std::move(v));
          });
        });
        return rp;
      },
      [self](workflow_atoms::list_atom,
             step_state s) -> caf::result<std::vector<job_id>> {
        auto rp = self->make_response_promise<std::vector<job_id>>();
        when_ready(self, [self, s, rp]() mutable {
          class_members(self, s,
                        [self, s, rp](caf::error e, std::vector<job_id> ids) mutable {
                          if (e) {
                            rp.deliver(std::move(e));
                            return;
                          }
                          if (layout::class_is_exact(s) || ids.empty()) {
                            rp.deliver(std::move(ids));
                            return;
                          }
                          // The active class (pending, processing, compensating): keep
                          // the jobs whose document is in state `s`, in key order.
                          self->state.store->read_many(
                              std::move(ids),
                              [rp, s](caf::error e,
                                      std::vector<std::optional<job_view>> vs) mutable {
                                if (e) {
                                  rp.deliver(std::move(e));
                                  return;
                                }
                                std::vector<job_id> out;
                                for (auto& v : vs)
                                  if (v && v->job.state == s)
                                    out.push_back(std::move(v->job.id));
                                rp.deliver(std::move(out));
                              });
                        });
        });
        return rp;
      },
      [self](workflow_atoms::events_atom, const job_id& id,
             uint64_t from) -> caf::result<std::vector<job_event>> {
        auto rp = self->make_response_promise<std::vector<job_event>>();
        when_ready(self, [self, id, from, rp]() mutable {
          self->state.store->events(
              id, from, [rp](caf::error e, std::vector<job_event> evs) mutable {
                if (e)
                  rp.deliver(std::move(e));
                else
                  rp.deliver(std::move(evs));
              });
        });
        return rp;
      },
      [self](workflow_atoms::events_atom, const job_id& id,
             caf::actor& who) -> caf::result<bool> {
        auto sid = self->state.next_subscription++;
        self->state.subscriptions[id.value].push_back(
            subscription{sid, who, 1, false, {}});
        self->monitor(who); // a dead subscriber is unsubscribed
        auto rp = self->make_response_promise<bool>();
        // Live events are held from now on; the backlog read next covers
        // everything committed before, duplicates are dropped by sequence.
        when_ready(self, [self, id, sid, rp]() mutable {
          self->state.store->events(
              id, 1,
              [self, id, sid, rp](caf::error e, std::vector<job_event> backlog) mutable {
                auto* sub = find_subscription(self, id.value, sid);
                if (!sub) { // unsubscribed meanwhile
                  rp.deliver(false);
                  return;
                }
                if (e) {
                  auto& subs = self->state.subscriptions[id.value];
                  subs.erase(std::remove_if(
                                 subs.begin(), subs.end(),
                                 [sid](const subscription& s) { return s.id == sid; }),
                             subs.end());
                  if (subs.empty())
                    self->state.subscriptions.erase(id.value);
                  rp.deliver(std::move(e));
                  return;
                }
                sub->backfilled = true;
                for (auto& ev : backlog)
                  offer(self, *sub, ev);
                if (backlog.empty()) {
                  auto held = sub->held;
                  sub->held.clear();
                  for (auto& [seq, ev] : held)
                    offer(self, *sub, ev);
                }
                rp.deliver(true);
              });
        });
        return rp;
      },
      [self](workflow_atoms::unsubscribe_atom, const job_id& id, caf::actor& who) {
        return unsubscribe(self, who.address(), &id.value) > 0;
      },
      [self](workflow_atoms::events_atom, std::vector<job_event>& evs) {
        auto& st = self->state;
        for (auto& ev : evs) {
          auto i = st.subscriptions.find(ev.job.value);
          if (i == st.subscriptions.end())
            continue;
          for (auto& sub : i->second)
            offer(self, sub, ev);
        }
      },
      [self](workflow_atoms::cancel_atom, const job_id& id) -> caf::result<step_state> {
        return change<step_state>(
            self, id, [](job_view& v, timestamp now) { return cancel(v, now); });
      },
      [self](workflow_atoms::resubmit_atom, const job_id& id) -> caf::result<step_state> {
        return change<step_state>(
            self, id, [](job_view& v, timestamp now) { return resubmit(v, now); });
      },
      [self](workflow_atoms::explain_atom,
             const job_id& id) -> caf::result<stuck_report> {
        auto rp = self->make_response_promise<stuck_report>();
        when_ready(self, [self, id, rp]() mutable {
          self->state.store->read(id, [self, rp](caf::error e, job_view v) mutable {
            if (e)
              rp.deliver(std::move(e));
            else
              rp.deliver(explain(v, now_of(self)));
          });
        });
        return rp;
      },
      [self](workflow_atoms::explain_atom) -> caf::result<std::vector<stuck_report>> {
        auto rp = self->make_response_promise<std::vector<stuck_report>>();
        when_ready(self, [self, rp]() mutable {
          // Every job in a non-final state: pending, processing, compensating
          // (one index class).
          class_members(
              self, step_state::pending,
              [self, rp](caf::error e, std::vector<job_id> ids) mutable {
                if (e) {
                  rp.deliver(std::move(e));
                  return;
                }
                self->state.store->read_many(
                    std::move(ids),
                    [self, rp](caf::error e,
                               std::vector<std::optional<job_view>> vs) mutable {
                      if (e) {
                        rp.deliver(std::move(e));
                        return;
                      }
                      std::vector<stuck_report> out;
                      // A job that ended since the scan is not stuck.
                      for (auto& v : vs)
                        if (v && !is_final(v->job.state))
                          out.push_back(explain(*v, now_of(self)));
                      rp.deliver(std::move(out));
                    });
              });
        });
        return rp;
      },
  };
}

} // namespace

client_actor spawn_client(caf::actor_system& sys, client_options opts) {
  return sys.spawn(make_client, std::move(opts));
}

} // namespace conclave::workflow
