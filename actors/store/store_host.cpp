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

/// A reply that waits for an lsn to be durable.
struct durable_wait {
  caf::typed_response_promise<uint64_t> commit;
  caf::typed_response_promise<bool> open;
  bool is_open = false;
};

struct host_state {
  store_host_options opts;
  std::unique_ptr<store_core> core;
  /// Non-ok: the host stopped (failure or corrupt device).
  errc stopped = errc::ok;
  std::unordered_map<uint64_t, parked_op> parked;
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
    if (w.is_open)
      w.open.deliver(make_error(errc::io_failure));
    else
      w.commit.deliver(make_error(errc::io_failure));
  }
  st.waiting.clear();
  for (auto& [t, p] : st.parked)
    p.rp.deliver(make_error(errc::store_failed));
  st.parked.clear();
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

/// Runs again the parked operations whose lock was granted.
void wake(host_impl self) {
  auto& st = self->state;
  for (auto t : st.core->take_woken()) {
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
  auto p = st.parked.find(t.value);
  if (p == st.parked.end())
    return;
  auto rp = std::move(p->second.rp);
  st.parked.erase(p);
  rp.deliver(make_error(why));
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
        st.transactions.erase(t.value);
        auto r = st.core->commit(t);
        wake(self);
        if (!r)
          return to_caf_error(r.error());
        auto& rec = r.value();
        if (rec.lsn.value == 0)
          return uint64_t{0};
        if (!log(self, rec))
          return make_error(errc::io_failure);
        if (++st.commits_since_gc >= st.opts.gc_every_commits) {
          st.commits_since_gc = 0;
          st.core->collect_garbage();
        }
        if (!st.opts.strong)
          return rec.lsn.value;
        durable_wait w;
        w.commit = self->make_response_promise<uint64_t>();
        auto rp = w.commit;
        st.waiting.emplace(rec.lsn.value, std::move(w));
        return rp;
      },
      [self, check](store_atoms::abort_atom, txn_id t) -> caf::result<bool> {
        if (auto e = check())
          return *e;
        auto& st = self->state;
        st.transactions.erase(t.value);
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
          if (i->second.is_open)
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
