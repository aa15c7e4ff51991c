#include "actors/workflow/supervisor.hpp"

#include "actors/workflow/host_time.hpp"

#include "actors/workflow/job_store.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <map>

#include <set>

namespace conclave::workflow {

namespace {

struct watched {
  uint64_t id = 0;
  bool scheduler = false;

  friend bool operator<(const watched& a, const watched& b) {
    return a.scheduler != b.scheduler ? a.scheduler < b.scheduler : a.id < b.id;
  }
};

struct supervisor_state {
  supervisor_options opts;
  std::unique_ptr<job_store<supervisor_actor::base>> store;
  workflow_probe* probe = &null_workflow_probe();
  bool ready = false;
  bool leading = false;
  term leader_term;
  bool scanning = false;
  uint64_t timer_generation = 0;
  std::map<caf::actor_addr, watched> watching;
  /// Watched agents and schedulers that died and whose running steps were
  /// not all recovered yet (this supervisor did not lead, or the store
  /// failed meanwhile): swept again while leading until a sweep succeeds.
  std::set<watched> dead;
  static inline const char* name = "conclave.supervisor";
};

using supervisor_impl = supervisor_actor::stateful_pointer<supervisor_state>;

timestamp now_of(supervisor_impl self) {
  return host_now(self->state.opts.clock, self, self->state.opts.clock_offset);
}

/// After a stale_term refusal: reads the recorded term and tells the candidate
/// that a leader already held its epoch (see supervisor.hpp).
void report_recorded_term(supervisor_impl self) {
  auto& st = self->state;
  if (!st.opts.candidate)
    return;
  std::string key = layout::term_key;
  st.store->scan(layout::meta, key, key + '\0', [self](caf::error e, kv_items items) {
    if (e || items.size() != 1)
      return;
    auto recorded = decode_term(items.front().second);
    if (!recorded)
      return;
    self->send(self->state.opts.candidate, election_atoms::observe_atom_v,
               recorded.value().epoch);
  });
}

/// A step to recover, as the scan saw it.
struct target {
  job_id job;
  step_index step;
  workflow::attempt attempt;
};

void recover_all(supervisor_impl self, std::shared_ptr<std::vector<target>> ts, size_t i,
                 recovery_cause cause, std::function<void()> done,
                 std::shared_ptr<bool> failed = nullptr) {
  auto& st = self->state;
  if (i == ts->size() || !st.leading) {
    if (failed && i != ts->size())
      *failed = true;
    return done();
  }
  auto t = (*ts)[i];
  auto fence = st.leader_term;
  st.store->update(
      t.job, fence,
      [self, t, cause](job_view& v) {
        return recover(v, t.step, t.attempt, cause, now_of(self),
                       self->state.opts.unsafe_ignore_attempt_fence);
      },
      [self, ts, i, cause, done, fence, failed](caf::error e, job_change c) {
        auto& st = self->state;
        if (e && failed && to_errc(e) != errc::unknown_job)
          *failed = true;
        if (e && to_errc(e) == errc::stale_term) {
          st.probe->fenced_off();
          // A refusal of a term this supervisor already left behind (a newer
          // became_leader arrived meanwhile) says nothing about the current one.
          if (st.leading && st.leader_term == fence) {
            st.leading = false; // a higher term is recorded: stop acting under this one
            report_recorded_term(self);
          }
        } else if (!e && !c.eff.stale) {
          st.probe->recovered(cause);
        }
        recover_all(self, ts, i + 1, cause, done, failed);
      });
}

/// Reads the running steps (the whole CompleteBy index, or its due prefix)
/// and recovers those `pick` selects.
/// `finished` (if any) learns whether every step picked was read and
/// recovered (false: not leading, or the store failed; sweep again).
void sweep(supervisor_impl self, bool due_only, recovery_cause cause,
           std::function<bool(const step_record&)> pick,
           std::function<void(bool)> finished = nullptr) {
  auto& st = self->state;
  if (!st.ready || !st.leading) {
    if (finished)
      finished(false);
    return;
  }
  auto failed = std::make_shared<bool>(false);
  auto started = now_of(self);
  auto to = due_only ? due_bound(started) : std::string{};
  st.store->scan(
      layout::due, std::string{}, to,
      [self, cause, pick, started, failed, finished](caf::error e, kv_items items) {
        if (e) {
          if (finished)
            finished(false);
          return;
        }
        if (items.empty()) {
          if (finished)
            finished(true);
          return self->state.probe->scanned(now_of(self) - started);
        }
        // The index names job and step; the attempt comes from the
        // step record, read in one snapshot.
        auto ts = std::make_shared<std::vector<target>>();
        auto left = std::make_shared<size_t>(items.size());
        // Once every entry was read: recover what was found.
        auto entry_done = [self, ts, left, cause, started, failed, finished] {
          if (--*left != 0)
            return;
          recover_all(
              self, ts, 0, cause,
              [self, started, failed, finished] {
                if (finished)
                  finished(!*failed);
                self->state.probe->scanned(now_of(self) - started);
              },
              failed);
        };
        for (auto& [k, v] : items) {
          auto d = decode_due_key(k);
          if (!d) {
            entry_done();
            continue;
          }
          auto entry = d.value();
          self->state.store->read(
              entry.job, [ts, entry, pick, failed, entry_done](caf::error e, job_view v) {
                if (e && to_errc(e) != errc::unknown_job)
                  *failed = true;
                if (!e && entry.step.value < v.steps.size()) {
                  auto& s = v.steps[entry.step.value];
                  if (!s.locked_by.empty() && pick(s))
                    ts->push_back(target{entry.job, entry.step, s.attempt});
                }
                entry_done();
              });
        }
      });
}

/// Recovers the running steps of dead agent or scheduler `w`; forgets it
/// once every one of them was recovered.
void sweep_one(supervisor_impl self, watched w) {
  sweep(
      self, false, recovery_cause::monitor,
      [w](const step_record& s) {
        return w.scheduler ? s.locked_by.instance == w.id : s.agent == w.id;
      },
      [self, w](bool ok) {
        if (ok)
          self->state.dead.erase(w);
      });
}

/// Sweeps the running steps of every dead agent or scheduler not swept yet.
void sweep_dead(supervisor_impl self) {
  auto& st = self->state;
  if (!st.ready || !st.leading)
    return;
  for (auto w : st.dead)
    sweep_one(self, w);
}

void scan(supervisor_impl self) {
  auto now = now_of(self);
  sweep(self, true, recovery_cause::deadline,
        [now](const step_record& s) { return s.complete_by && *s.complete_by <= now; });
}

void arm_scan(supervisor_impl self) {
  auto& st = self->state;
  send_later(self, st.opts.clock, st.opts.scan_interval, workflow_atoms::scan_atom_v,
             ++st.timer_generation);
}

supervisor_actor::behavior_type make_supervisor(supervisor_impl self,
                                                supervisor_options opts) {
  auto& st = self->state;
  st.opts = std::move(opts);
  // Unexpected messages are dropped, not printed (stdout may carry --json).
  self->set_default_handler(caf::drop);
  if (st.opts.probe)
    st.probe = st.opts.probe.get();
  st.store = std::make_unique<job_store<supervisor_actor::base>>(self, st.opts.store);
  st.store->set_probe(st.probe);
  st.store->set_events(st.opts.events);
  st.store->open_all([self](caf::error e) {
    if (e)
      return self->quit(e);
    self->state.ready = true;
    scan(self);
  });
  arm_scan(self);
  self->set_down_handler([self](caf::down_msg& m) {
    auto& st = self->state;
    auto i = st.watching.find(m.source);
    if (i == st.watching.end())
      return;
    auto w = i->second;
    st.watching.erase(i);
    if (!st.dead.insert(w).second)
      return; // a sweep for it is pending already
    sweep_one(self, w);
  });
  return {
      [self](election::leadership_event& ev) {
        auto& st = self->state;
        using kind = election::leadership_event::kind;
        if (ev.what == kind::became_leader) {
          st.leading = true;
          st.leader_term = ev.t;
          scan(self);
          sweep_dead(self);
        } else if (ev.what == kind::lost_leadership) {
          st.leading = false;
        }
      },
      [self](workflow_atoms::scan_atom, uint64_t gen) {
        if (gen != self->state.timer_generation)
          return;
        scan(self);
        sweep_dead(self);
        arm_scan(self);
      },
      [self](workflow_atoms::watch_atom, uint64_t id, caf::actor& who, bool scheduler) {
        // Watched again (a restarted scheduler resumes what its previous
        // life had claimed; a member whose link came back runs its steps).
        self->state.dead.erase(watched{id, scheduler});
        self->state.watching[who.address()] = watched{id, scheduler};
        self->monitor(who);
      },
  };
}

} // namespace

supervisor_actor spawn_supervisor(caf::actor_system& sys, supervisor_options opts) {
  return sys.spawn(make_supervisor, std::move(opts));
}

} // namespace conclave::workflow
