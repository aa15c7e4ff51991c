#include "actors/workflow/scheduler.hpp"

#include "actors/workflow/host_time.hpp"

#include "actors/workflow/job_store.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

namespace conclave::workflow {

namespace {

struct scheduler_state;
using scheduler_impl = scheduler_actor::stateful_pointer<scheduler_state>;

struct scheduler_state {
  scheduler_options opts;
  std::unique_ptr<job_store<scheduler_actor::base>> store;
  workflow_probe* probe = &null_workflow_probe();
  std::map<std::string, std::vector<agent_entry>> agents;
  std::map<std::string, size_t> next_agent;
  std::set<caf::actor_addr> dead;
  bool started = false;
  bool ready = false; // collections open, resume done
  bool polling = false;
  bool poll_again = false;
  /// Where the next poll starts in the ready index: past the last full page,
  /// so that entries nobody can claim (e.g. no live agent of their kind) do
  /// not hide the ones behind them; "" after a short page.
  std::string poll_from;
  /// Outcomes waiting for the outcome batch in flight (grouped, batched).
  std::vector<job_store<scheduler_actor::base>::known_item> outcomes;
  /// Outcome batches in flight (at most outcome_batches).
  size_t outcomes_in_flight = 0;
  /// A flush_atom to self is queued: outcomes already in the mailbox join.
  bool flush_queued = false;
  uint64_t timer_generation = 0;
  /// Dispatches waiting for their agent's reply, by the instant the scheduler
  /// stops waiting (deadline + reply_slack) and the reply's message id. A
  /// dispatch is sent without a CAF request timeout (in CAF 0.17 each one is
  /// an entry in the clock thread's schedule, pushed under a mutex with a
  /// wake-up of that thread, and never removed when the reply comes); the
  /// poll tick answers the expired ones with sec::request_timeout itself,
  /// which is what CAF's clock would have sent, at most one poll_interval
  /// later.
  std::set<std::pair<timestamp, caf::message_id>> replies;
  /// Orders each poll's claims differently per instance, so that schedulers
  /// polling the same ready index do not all queue on the same job rows.
  static inline const char* name = "conclave.scheduler";
};

timestamp now_of(scheduler_impl self) {
  return host_now(self->state.opts.clock, self, self->state.opts.clock_offset);
}

/// An agent of `kind` that is alive, round robin.
std::optional<agent_entry> pick_agent(scheduler_impl self, const std::string& kind) {
  auto& st = self->state;
  auto i = st.agents.find(kind);
  if (i == st.agents.end())
    return std::nullopt;
  auto& list = i->second;
  for (size_t k = 0; k < list.size(); ++k) {
    auto& n = st.next_agent[kind];
    auto& a = list[n++ % list.size()];
    if (!st.dead.count(a.handle.address()))
      return a;
  }
  return std::nullopt;
}

/// Whether a live agent of `kind` is known here (what pick_agent needs).
bool serves(scheduler_impl self, std::string_view kind) {
  auto& st = self->state;
  auto i = st.agents.find(std::string{kind});
  if (i == st.agents.end())
    return false;
  for (auto& a : i->second)
    if (!st.dead.count(a.handle.address()))
      return true;
  return false;
}

const std::string& kind_of(const step_record& s) {
  return s.state == step_state::compensating ? s.spec.compensation->agent_kind
                                             : s.spec.agent_kind;
}

void poll(scheduler_impl self);

/// Sends the waiting outcomes as one grouped batch (at most one per job and
/// outcome_group in all; the rest wait for its answer).
void flush_outcomes(scheduler_impl self) {
  auto& st = self->state;
  if (st.outcomes_in_flight >= std::max<size_t>(1, st.opts.outcome_batches)
      || st.outcomes.empty())
    return;
  auto limit = std::max<size_t>(1, st.opts.outcome_group);
  std::vector<job_store<scheduler_actor::base>::known_item> now, later;
  std::set<std::string> jobs;
  for (auto& it : st.outcomes) {
    if (now.size() < limit && jobs.insert(it.known->job.id.value).second)
      now.push_back(std::move(it));
    else
      later.push_back(std::move(it));
  }
  st.outcomes = std::move(later);
  ++st.outcomes_in_flight;
  st.store->update_known_many(std::move(now), [self] {
    --self->state.outcomes_in_flight;
    flush_outcomes(self);
  });
}

void send(scheduler_impl self, const dispatch& d, const agent_entry& a,
          std::shared_ptr<const job_view> known);

/// Records an agent's outcome (fenced by the attempt) and, after a success,
/// claims the job's next claimable step in the same transaction (one
/// transaction for two transitions: the job row is locked anyway).
void record(scheduler_impl self, dispatch d, step_outcome o,
            std::shared_ptr<const job_view> known) {
  auto started = self->state.opts.probe ? now_of(self) : timestamp{0};
  auto chosen = std::make_shared<std::optional<agent_entry>>();
  auto mutate = [self, d, o, chosen](job_view& v) -> result<effects> {
    auto now = now_of(self);
    auto eff = complete(v, d.step, d.attempt, o, now);
    chosen->reset();
    if (!eff || eff.value().stale || !o.ok)
      return eff;
    auto next = claimable_step(v, now);
    if (!next || *next == d.step)
      return eff;
    auto agent = pick_agent(self, kind_of(v.steps[next->value]));
    if (!agent)
      return eff;
    auto claimed = claim(v, self->state.opts.self, now);
    if (!claimed)
      return eff;
    v.steps[next->value].agent = agent->id;
    *chosen = std::move(agent);
    auto& out = eff.value();
    for (auto& ev : claimed.value().events)
      out.events.push_back(std::move(ev));
    out.dispatched = std::move(claimed.value().dispatched);
    return eff;
  };
  auto done = [self, d, o, started, chosen](caf::error e, job_change c) {
    auto& st = self->state;
    if (e)
      return; // the job went away or the store failed: nothing to record
    if (c.eff.stale) {
      st.probe->stale_reply();
      return;
    }
    st.probe->step_finished(c.view.steps[d.step.value].state, now_of(self) - started);
    if (!o.ok && o.kind == failure_kind::transient)
      st.probe->recovered(recovery_cause::failure);
    if (c.eff.dispatched && *chosen) {
      auto next = *c.eff.dispatched;
      auto agent = **chosen;
      send(self, next, agent, std::make_shared<const job_view>(std::move(c.view)));
      return;
    }
    poll(self); // the next step may be ready now
  };
  auto& opts = self->state.opts;
  if (known && opts.batched && opts.outcome_group > 1) {
    self->state.outcomes.push_back(
        {std::move(known), std::move(mutate), std::move(done)});
    return flush_outcomes(self);
  }
  if (known && opts.batched)
    self->state.store->update_known(*known, mutate, done);
  else
    self->state.store->update(d.job, std::nullopt, mutate, done);
}

void send(scheduler_impl self, const dispatch& d, const agent_entry& a,
          std::shared_ptr<const job_view> known) {
  auto& st = self->state;
  st.probe->dispatched(d.compensation);
  st.probe->dispatched_attempt(d);
  auto now = now_of(self);
  auto until = std::max(d.deadline, now) + st.opts.reply_slack;
  auto h = self->request(a.handle, caf::infinite, d);
  auto waiting = std::make_pair(until, h.id());
  st.replies.insert(waiting);
  h.then(
      [self, d, known, waiting](step_outcome& o) {
        self->state.replies.erase(waiting);
        record(self, d, std::move(o), known);
      },
      [self, d, known, waiting](caf::error& e) {
        self->state.replies.erase(waiting);
        if (e != caf::sec::request_receiver_down)
          return; // no reply by the deadline (the agent gave up, or the
                  // message was lost): the supervisor recovers the step
        // The agent was dead before it got the dispatch: it died after
        // the claim picked it, possibly before the supervisor's scan of
        // its running steps could see the claim. This attempt is lost:
        // record it as a transient failure now (fenced by the attempt,
        // so a supervisor that did recover it makes this stale). The
        // handle is not marked dead here: it may be a relay whose agent
        // comes back behind it (the down handler marks real deaths).
        step_outcome o;
        o.ok = false;
        o.kind = failure_kind::transient;
        o.error_kind = "agent_down";
        o.message = "the agent was gone before the dispatch reached it";
        record(self, d, std::move(o), known);
      });
}

/// Claims (or resumes) a step of `job` and dispatches it.
void claim_job(scheduler_impl self, const job_id& job, bool resuming,
               std::function<void()> next) {
  auto chosen = std::make_shared<std::optional<agent_entry>>();
  auto mutate = [self, chosen, resuming](job_view& v) -> result<effects> {
    auto now = now_of(self);
    auto me = self->state.opts.self;
    std::optional<step_index> target;
    if (resuming) {
      for (auto& s : v.steps)
        if (!s.locked_by.empty() && s.locked_by.instance == me.instance
            && s.locked_by.incarnation < me.incarnation)
          target = s.index;
    } else {
      target = claimable_step(v, now);
    }
    if (!target)
      return errc::not_claimable;
    *chosen = pick_agent(self, kind_of(v.steps[target->value]));
    if (!*chosen)
      return errc::unknown_agent_kind;
    auto e = resuming ? resume(v, *target, me, now) : claim(v, me, now);
    if (e)
      v.steps[target->value].agent = (*chosen)->id;
    return e;
  };
  self->state.store->update(
      job, std::nullopt, mutate, [self, chosen, next](caf::error e, job_change c) {
        if (!e && c.eff.dispatched && *chosen) {
          auto d = *c.eff.dispatched;
          send(self, d, **chosen, std::make_shared<const job_view>(std::move(c.view)));
        }
        next();
      });
}

/// The agent of `kind` with `id`, if the scheduler knows it.
std::optional<agent_entry> agent_by_id(scheduler_impl self, const std::string& kind,
                                       uint64_t id) {
  auto i = self->state.agents.find(kind);
  if (i == self->state.agents.end())
    return std::nullopt;
  for (auto& a : i->second)
    if (a.id == id)
      return a;
  return std::nullopt;
}

/// Claims a step of each job of `group` in ONE transaction (job_store::
/// update_many) and dispatches them; jobs with nothing claimable are skipped.
void claim_group(scheduler_impl self, std::vector<job_id> group,
                 std::function<void()> next) {
  auto mutate = [self](job_view& v) -> result<effects> {
    auto now = now_of(self);
    auto target = claimable_step(v, now);
    if (!target)
      return errc::not_claimable;
    auto agent = pick_agent(self, kind_of(v.steps[target->value]));
    if (!agent)
      return errc::unknown_agent_kind;
    auto e = claim(v, self->state.opts.self, now);
    if (e)
      v.steps[target->value].agent = agent->id;
    return e;
  };
  self->state.store->update_many(
      std::move(group), mutate,
      [self, next](std::vector<std::pair<caf::error, job_change>> results) {
        for (auto& [e, c] : results) {
          if (e || !c.eff.dispatched)
            continue;
          auto d = *c.eff.dispatched;
          auto& step = c.view.steps[d.step.value];
          if (auto a = agent_by_id(self, kind_of(step), step.agent))
            send(self, d, *a, std::make_shared<const job_view>(std::move(c.view)));
        }
        next();
      });
}

/// Claims the jobs with up to `claims_in_flight` jobs in flight, in groups
/// of `claim_group` jobs per transaction (resumes: one per transaction);
/// `done` runs when all are answered. Transactions of different groups lock
/// job rows in id order, so they can wait for each other but not deadlock.
void claim_all(scheduler_impl self, std::shared_ptr<std::vector<job_id>> jobs,
               bool resuming, std::function<void()> done) {
  if (jobs->empty())
    return done();
  auto& opts = self->state.opts;
  size_t group = resuming || !opts.batched ? 1 : std::max<size_t>(1, opts.claim_group);
  struct progress {
    size_t next = 0;
    size_t left = 0;
  };
  auto p = std::make_shared<progress>();
  p->left = (jobs->size() + group - 1) / group;
  auto launch = std::make_shared<std::function<void()>>();
  *launch = [self, jobs, resuming, done, p, launch, group] {
    auto from = p->next;
    auto to = std::min(jobs->size(), from + group);
    p->next = to;
    auto after = [jobs, done, p, launch] {
      if (p->next < jobs->size())
        (*launch)();
      if (--p->left == 0) {
        done();
        *launch = nullptr; // break the cycle
      }
    };
    if (to - from == 1)
      return claim_job(self, (*jobs)[from], resuming, after);
    claim_group(self,
                {jobs->begin() + static_cast<std::ptrdiff_t>(from),
                 jobs->begin() + static_cast<std::ptrdiff_t>(to)},
                after);
  };
  auto width = std::max<size_t>(1, opts.claims_in_flight / group);
  width = std::min(width, static_cast<size_t>(p->left));
  for (size_t k = 0; k < width; ++k)
    (*launch)();
}

void poll(scheduler_impl self) {
  auto& st = self->state;
  if (!st.ready)
    return;
  if (st.polling) {
    st.poll_again = true;
    return;
  }
  st.polling = true;
  auto limit = st.opts.batched ? st.opts.poll_limit : 0;
  auto now = now_of(self);
  auto bound = layout::ready_bound(now);
  if (st.poll_from >= bound)
    st.poll_from.clear();
  // Ready since before this: any scheduler takes it (see scheduler_options::mine).
  auto stale = layout::ready_bound(now - st.opts.takeover_after);
  st.store->scan(
      layout::ready, st.poll_from, std::move(bound),
      [self, limit, stale](caf::error e, kv_items items) {
        auto& st = self->state;
        bool full = !e && limit > 0 && items.size() >= limit;
        auto jobs = std::make_shared<std::vector<job_id>>();
        auto& mine = self->state.opts.mine;
        if (!e)
          for (auto& kv : items) {
            // A kind no live agent here serves: skipped without reading the
            // document (a row without a kind is read as before).
            if (auto k = layout::ready_kind(kv.second); k && !serves(self, *k))
              continue;
            if (auto j = layout::decode_ready_key(kv.first))
              if (!mine || kv.first < stale || mine(j.value()))
                jobs->push_back(j.value());
          }
        // A full page: more may be ready behind it. The next page follows at
        // once if this one had work here, else at the next poll tick, so that
        // a backlog of jobs that other nodes serve is walked one page per
        // tick instead of in a loop of store requests.
        if (full) {
          st.poll_from = items.back().first + std::string(1, '\0');
          if (!jobs->empty())
            st.poll_again = true;
        } else {
          st.poll_from.clear();
        }
        if (self->state.opts.pipelined && !jobs->empty()) {
          // Every scheduler reads the same page; each starts claiming at its
          // own offset (instance x golden ratio, mod 1) and goes on in
          // order, so two schedulers' groups meet only where their runs
          // join instead of colliding throughout (a random order overlapped
          // on every group, and a claim waits for the other's Update locks
          // only to find the job taken).
          auto frac = std::fmod(static_cast<double>(self->state.opts.self.instance)
                                    * 0.6180339887498949,
                                1.0);
          auto at = static_cast<size_t>(frac * static_cast<double>(jobs->size()));
          std::rotate(jobs->begin(), jobs->begin() + static_cast<std::ptrdiff_t>(at),
                      jobs->end());
        }
        claim_all(self, jobs, false, [self] {
          auto& st = self->state;
          st.polling = false;
          if (st.poll_again) {
            st.poll_again = false;
            poll(self);
          }
        });
      },
      limit);
}

/// Answers the dispatches whose reply did not come in time with
/// sec::request_timeout (see scheduler_state::replies): their response
/// handlers run with that error and a later reply is dropped.
void expire_replies(scheduler_impl self) {
  auto& st = self->state;
  auto now = now_of(self);
  while (!st.replies.empty() && st.replies.begin()->first <= now) {
    auto id = st.replies.begin()->second;
    st.replies.erase(st.replies.begin());
    self->eq_impl(id, self->ctrl(), self->context(),
                  caf::make_error(caf::sec::request_timeout));
  }
}

void arm_poll(scheduler_impl self) {
  auto& st = self->state;
  send_later(self, st.opts.clock, st.opts.poll_interval, workflow_atoms::poll_atom_v,
             ++st.timer_generation);
}

void start(scheduler_impl self) {
  auto& st = self->state;
  if (st.started)
    return;
  st.started = true;
  st.store->open_all([self](caf::error e) {
    if (e)
      return self->quit(e);
    // Resume what a previous life of this instance had locked.
    self->state.store->scan(layout::due, std::string{}, std::string{},
                            [self](caf::error e, kv_items items) {
                              auto jobs = std::make_shared<std::vector<job_id>>();
                              std::set<std::string> seen;
                              if (!e)
                                for (auto& [k, v] : items)
                                  if (auto d = decode_due_key(k);
                                      d && seen.insert(d.value().job.value).second)
                                    jobs->push_back(d.value().job);
                              claim_all(self, jobs, true, [self] {
                                self->state.ready = true;
                                poll(self);
                                arm_poll(self);
                              });
                            });
  });
}

scheduler_actor::behavior_type make_scheduler(scheduler_impl self,
                                              scheduler_options opts) {
  auto& st = self->state;
  st.opts = std::move(opts);
  // Unexpected messages are dropped, not printed (stdout may carry --json).
  self->set_default_handler(caf::drop);
  if (st.opts.probe)
    st.probe = st.opts.probe.get();
  st.store = std::make_unique<job_store<scheduler_actor::base>>(
      self, st.opts.store, st.opts.pipelined, 1000, st.opts.batched);
  st.store->set_probe(st.probe);
  st.store->set_events(st.opts.events);
  for (auto& a : st.opts.agents) {
    st.agents[a.kind].push_back(a);
    self->monitor(a.handle);
  }
  self->set_down_handler([self](caf::down_msg& m) { self->state.dead.insert(m.source); });
  if (st.opts.start_immediately)
    start(self);
  return {
      [self](workflow_atoms::start_atom) { start(self); },
      [self](workflow_atoms::flush_atom) {
        self->state.flush_queued = false;
        flush_outcomes(self);
      },
      [self](workflow_atoms::poll_atom, uint64_t gen) {
        if (gen != self->state.timer_generation)
          return;
        expire_replies(self);
        poll(self);
        arm_poll(self);
      },
  };
}

} // namespace

scheduler_actor spawn_scheduler(caf::actor_system& sys, scheduler_options opts) {
  return sys.spawn(make_scheduler, std::move(opts));
}

} // namespace conclave::workflow
