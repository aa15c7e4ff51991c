#include "actors/store/store_host.hpp"

#include "actors/timer/deadline_timer.hpp"

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <map>
#include <unordered_map>
#include <unordered_set>

namespace conclave::store {

namespace {

using lock_timer_atom = caf::atom_constant<caf::atom("st_ltimer")>;

using host_actor = store_actor::extend<caf::reacts_to<lock_timer_atom, uint64_t>>;

struct parked_op {
  op_request req;
  timestamp deadline;
  caf::typed_response_promise<op_result> rp;
};

/// A batch that is running or parked on a lock (see batch.hpp).
struct batch_job {
  batch_run run;
  timestamp deadline;
  caf::typed_response_promise<batch_result> rp;
};

/// A reply that waits for an lsn to be durable.
struct durable_wait {
  caf::typed_response_promise<uint64_t> commit;
  caf::typed_response_promise<bool> open;
  bool is_open = false;
  /// A committing batch: its answer.
  std::shared_ptr<batch_job> batch;
};

struct host_state {
  store_host_options opts;
  std::unique_ptr<store_core> core;
  /// Non-ok: the host stopped (failure or corrupt device).
  errc stopped = errc::ok;
  std::unordered_map<uint64_t, parked_op> parked;
  /// Batches waiting for a lock, by transaction.
  std::unordered_map<uint64_t, std::shared_ptr<batch_job>> parked_batches;
  std::unordered_set<uint64_t> transactions;
  std::multimap<uint64_t, durable_wait> waiting;
  lsn durable;
  bool sync_in_flight = false;
  uint64_t next_sync = 1;
  deadline_timer timer;
  uint32_t commits_since_gc = 0;
  static inline const char* name = "conclave.store_host";

  ~host_state() {
    if (!core)
      return;
    for (auto t : transactions)
      (void)core->abort(txn_id{t});
  }
};

using host_impl = host_actor::stateful_pointer<host_state>;

/// Stops the host: waiting commits fail, nothing is accepted any more.
void stop(host_impl self, errc why) {
  auto& st = self->state;
  if (st.stopped != errc::ok)
    return;
  st.stopped = why;
  for (auto& [l, w] : st.waiting) {
    if (w.batch)
      w.batch->rp.deliver(make_error(errc::io_failure));
    else if (w.is_open)
      w.open.deliver(make_error(errc::io_failure));
    else
      w.commit.deliver(make_error(errc::io_failure));
  }
  st.waiting.clear();
  for (auto& [t, p] : st.parked)
    p.rp.deliver(make_error(errc::store_failed));
  st.parked.clear();
  for (auto& [t, b] : st.parked_batches)
    b->rp.deliver(make_error(errc::store_failed));
  st.parked_batches.clear();
}

/// Asks the device for a sync unless one is in flight (then the next one
/// covers what was appended meanwhile: group commit).
void request_sync(host_impl self) {
  auto& st = self->state;
  if (st.sync_in_flight || st.stopped != errc::ok)
    return;
  st.sync_in_flight = true;
  auto ticket = st.next_sync++;
  auto me = caf::actor_cast<caf::actor>(self);
  st.opts.device->sync([me, ticket](result<lsn> r) {
    if (r)
      caf::anon_send(me, store_atoms::done_atom_v, ticket, caf::error{}, r.value().value);
    else
      caf::anon_send(me, store_atoms::done_atom_v, ticket, to_caf_error(r.error()),
                     uint64_t{0});
  });
}

/// Logs a record; the reply waits for its durability.
bool log(host_impl self, const log_record& rec) {
  auto& st = self->state;
  if (auto a = st.opts.device->append(rec); !a) {
    stop(self, errc::store_failed);
    return false;
  }
  request_sync(self);
  return true;
}

/// Arms the lock timer for the core's next deadline if it is earlier than the
/// armed one (a newer generation makes the older timer a no-op).
void arm_timer(host_impl self) {
  self->state.timer.arm(self, self->state.core->next_deadline(), lock_timer_atom::value);
}

void run_batch(host_impl self, std::shared_ptr<batch_job> b,
               std::optional<op_result> granted);

/// Runs again the parked operations whose lock was granted.
void wake(host_impl self) {
  auto& st = self->state;
  for (auto t : st.core->take_woken()) {
    if (auto b = st.parked_batches.find(t.value); b != st.parked_batches.end()) {
      auto job = b->second;
      auto res = st.core->execute_consuming(job->run.next(), job->deadline);
      if (res && res.value().waiting)
        continue;
      st.parked_batches.erase(b);
      if (!res) {
        st.transactions.erase(t.value);
        (void)st.core->abort(t);
        job->rp.deliver(to_caf_error(res.error()));
        wake(self);
        continue;
      }
      run_batch(self, std::move(job), std::move(res.value()));
      continue;
    }
    auto p = st.parked.find(t.value);
    if (p == st.parked.end())
      continue;
    auto res = st.core->execute(p->second.req, p->second.deadline);
    if (res && res.value().waiting)
      continue; // granted one lock, waits for the next (queues)
    auto rp = std::move(p->second.rp);
    st.parked.erase(p);
    if (res)
      rp.deliver(std::move(res.value()));
    else
      rp.deliver(to_caf_error(res.error()));
  }
}

void fail_parked(host_impl self, txn_id t, errc why) {
  auto& st = self->state;
  if (auto b = st.parked_batches.find(t.value); b != st.parked_batches.end()) {
    // A failed batch aborts its transaction (nothing of it is written).
    auto job = std::move(b->second);
    st.parked_batches.erase(b);
    st.transactions.erase(t.value);
    (void)st.core->abort(t);
    job->rp.deliver(make_error(why));
    wake(self);
    return;
  }
  auto p = st.parked.find(t.value);
  if (p == st.parked.end())
    return;
  auto rp = std::move(p->second.rp);
  st.parked.erase(p);
  rp.deliver(make_error(why));
}

/// Commits `t` (logs its record, collects garbage now and then). Returns the
/// lsn (0: nothing changed) or the error. The record is logged before the
/// operations parked on its locks run again: one of them may commit at once
/// with the next lsn, and the device must get the records in lsn order.
result<uint64_t> commit_txn(host_impl self, txn_id t) {
  auto& st = self->state;
  st.transactions.erase(t.value);
  auto r = st.core->commit(t);
  if (!r) {
    wake(self);
    return r.error();
  }
  auto at = r.value().lsn.value;
  if (at == 0) {
    wake(self);
    return uint64_t{0};
  }
  if (!log(self, r.value())) {
    wake(self);
    return make_error_code(errc::io_failure);
  }
  if (++st.commits_since_gc >= st.opts.gc_every_commits) {
    st.commits_since_gc = 0;
    st.core->collect_garbage();
  }
  wake(self);
  return at;
}

/// Runs a batch from its next request on; `granted`: the result of the
/// request that waited for its lock. Parks it again on the next wait; ends
/// it with the answer (after the commit's sync in strong mode) or an error
/// (its transaction aborted).
void run_batch(host_impl self, std::shared_ptr<batch_job> b,
               std::optional<op_result> granted) {
  auto& st = self->state;
  auto t = b->run.txn();
  auto fail = [&](caf::error e) {
    st.transactions.erase(t.value);
    (void)st.core->abort(t);
    b->rp.deliver(std::move(e));
    wake(self);
  };
  if (granted)
    b->run.accept(std::move(*granted));
  while (!b->run.finished()) {
    auto res = st.core->execute_consuming(b->run.next(), b->deadline);
    if (!res)
      return fail(to_caf_error(res.error()));
    if (res.value().waiting) {
      st.parked_batches[t.value] = std::move(b);
      arm_timer(self);
      return;
    }
    b->run.accept(std::move(res.value()));
  }
  if (b->run.check_failed()) {
    st.transactions.erase(t.value);
    (void)st.core->abort(t);
    b->rp.deliver(b->run.take());
    wake(self);
    return;
  }
  if (!b->run.commit_requested()) {
    b->rp.deliver(b->run.take());
    return;
  }
  auto l = commit_txn(self, t);
  if (!l) {
    b->rp.deliver(to_caf_error(l.error()));
    return;
  }
  b->run.set_lsn(l.value());
  if (!st.opts.strong || l.value() == 0) {
    b->rp.deliver(b->run.take());
    return;
  }
  durable_wait w;
  w.batch = std::move(b);
  st.waiting.emplace(l.value(), std::move(w));
}

host_actor::behavior_type make_host(host_impl self, store_host_options opts) {
  auto& st = self->state;
  st.opts = std::move(opts);
  st.core = std::make_unique<store_core>(st.opts.limits);
  // Replay what the device kept.
  auto rec = st.opts.device->recover();
  if (!rec) {
    st.stopped = errc::corrupt_data;
  } else {
    if (!rec.value().checkpoint.empty())
      if (auto r = st.core->load_checkpoint(rec.value().checkpoint); !r)
        st.stopped = errc::corrupt_data;
    for (auto& r : rec.value().records) {
      if (st.stopped != errc::ok || r.lsn <= st.core->last_lsn())
        continue;
      if (auto a = st.core->apply(r); !a)
        st.stopped = errc::corrupt_data;
    }
    st.durable = st.core->last_lsn();
  }
  self->set_default_handler(caf::drop);
  auto check = [self]() -> std::optional<caf::error> {
    if (self->state.stopped != errc::ok)
      return make_error(self->state.stopped == errc::corrupt_data ? errc::corrupt_data
                                                                  : errc::store_failed);
    return std::nullopt;
  };
  return {
      [self, check](store_atoms::open_atom, const std::string& name, collection_kind kind,
                    const std::string& key_type,
                    const std::string& value_type) -> caf::result<bool> {
        if (auto e = check())
          return *e;
        auto& st = self->state;
        auto r = st.core->ensure_collection(name, kind, key_type, value_type);
        if (!r)
          return to_caf_error(r.error());
        if (!r.value())
          return true;
        auto l = r.value()->lsn;
        if (!log(self, *r.value()))
          return make_error(errc::store_failed);
        durable_wait w;
        w.is_open = true;
        w.open = self->make_response_promise<bool>();
        auto rp = w.open;
        st.waiting.emplace(l.value, std::move(w));
        return rp;
      },
      [self, check](store_atoms::begin_atom) -> caf::result<txn_id> {
        if (auto e = check())
          return *e;
        auto t = self->state.core->begin();
        self->state.transactions.insert(t.value);
        return t;
      },
      [self, check](op_request& req, uint32_t timeout_ms) -> caf::result<op_result> {
        if (auto e = check())
          return *e;
        auto& st = self->state;
        auto timeout = timeout_ms == 0 ? st.opts.default_timeout
                                       : std::chrono::milliseconds{timeout_ms};
        auto deadline = now_of(self) + timeout;
        auto res = st.core->execute(req, deadline);
        if (!res)
          return to_caf_error(res.error());
        if (!res.value().waiting)
          return std::move(res.value());
        auto rp = self->make_response_promise<op_result>();
        auto id = req.txn.value;
        st.parked[id] = parked_op{std::move(req), deadline, rp};
        arm_timer(self);
        return rp;
      },
      [self, check](store_atoms::commit_atom, txn_id t) -> caf::result<uint64_t> {
        if (auto e = check())
          return *e;
        auto& st = self->state;
        auto l = commit_txn(self, t);
        if (!l)
          return to_caf_error(l.error());
        if (l.value() == 0 || !st.opts.strong)
          return l.value();
        durable_wait w;
        w.commit = self->make_response_promise<uint64_t>();
        auto rp = w.commit;
        st.waiting.emplace(l.value(), std::move(w));
        return rp;
      },
      [self, check](op_batch& b, uint32_t timeout_ms) -> caf::result<batch_result> {
        if (auto e = check())
          return *e;
        auto& st = self->state;
        if (!groups_valid(b))
          return make_error(errc::bad_argument);
        txn_id t = b.txn;
        if (t.value == 0) {
          t = st.core->begin();
          st.transactions.insert(t.value);
        }
        auto timeout = timeout_ms == 0 ? st.opts.default_timeout
                                       : std::chrono::milliseconds{timeout_ms};
        auto job = std::make_shared<batch_job>(
            batch_job{batch_run{std::move(b), t}, now_of(self) + timeout,
                      self->make_response_promise<batch_result>()});
        auto rp = job->rp;
        run_batch(self, std::move(job), std::nullopt);
        return rp;
      },
      [self, check](store_atoms::abort_atom, txn_id t) -> caf::result<bool> {
        if (auto e = check())
          return *e;
        auto& st = self->state;
        st.transactions.erase(t.value);
        if (st.parked_batches.count(t.value)) {
          fail_parked(self, t, errc::transaction_finished); // aborts it
          return true;
        }
        fail_parked(self, t, errc::transaction_finished);
        auto r = st.core->abort(t);
        wake(self);
        if (!r)
          return to_caf_error(r.error());
        return true;
      },
      [self, check](store_atoms::checkpoint_atom) -> caf::result<uint64_t> {
        if (auto e = check())
          return *e;
        auto& st = self->state;
        // Only durable state may be checkpointed: wait until the log caught up.
        if (st.durable < st.core->last_lsn())
          return make_error(errc::transaction_busy);
        st.core->collect_garbage();
        auto at = st.core->last_lsn();
        if (auto r = st.opts.device->checkpoint(st.core->encode_checkpoint(), at); !r)
          return to_caf_error(r.error());
        return at.value;
      },
      [](store_atoms::done_atom, uint64_t, caf::error&, op_result&) {
        // Completions of a threaded store; this host has none.
      },
      [self](store_atoms::done_atom, uint64_t, caf::error& err, uint64_t durable) {
        auto& st = self->state;
        st.sync_in_flight = false;
        if (err) {
          stop(self, errc::store_failed);
          return;
        }
        if (st.durable.value < durable)
          st.durable = lsn{durable};
        auto end = st.waiting.upper_bound(st.durable.value);
        for (auto i = st.waiting.begin(); i != end; ++i) {
          if (i->second.batch)
            i->second.batch->rp.deliver(i->second.batch->run.take());
          else if (i->second.is_open)
            i->second.open.deliver(true);
          else
            i->second.commit.deliver(i->first);
        }
        st.waiting.erase(st.waiting.begin(), end);
        if (st.durable < st.core->last_lsn())
          request_sync(self);
      },
      [self](lock_timer_atom, uint64_t gen) {
        auto& st = self->state;
        if (!st.timer.fire(gen))
          return; // superseded by an earlier deadline
        for (auto t : st.core->expire(now_of(self)))
          fail_parked(self, t, errc::lock_timeout);
        wake(self);
        arm_timer(self);
      },
  };
}

} // namespace

store_actor spawn_store_host(caf::actor_system& sys, store_host_options opts) {
  return sys.spawn(make_host, std::move(opts));
}

} // namespace conclave::store
