#include "actors/store/store_actor.hpp"

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace conclave::store {

namespace {

/// A batch in flight (see batch.hpp): its operations run one after the
/// other; one that waits for a lock continues when its completion arrives.
struct batch_job {
  batch_run run;
  /// Lock waits of the whole batch end here (timeout_ms from its arrival).
  std::chrono::steady_clock::time_point deadline;
  caf::typed_response_promise<batch_result> rp;
};

struct store_state {
  std::shared_ptr<state_manager> store;
  uint64_t next_request = 1;
  std::unordered_map<uint64_t, caf::response_promise> pending;
  /// Batches waiting for a completion (a lock grant or their commit), by id.
  std::unordered_map<uint64_t, std::shared_ptr<batch_job>> batches;
  std::unordered_set<uint64_t> transactions;
  static inline const char* name = "conclave.store";

  ~store_state() {
    // Nobody can finish them any more.
    for (auto t : transactions)
      (void)store->abort(txn_id{t});
  }
};

using store_impl = store_actor::stateful_pointer<store_state>;

/// Ends a batch with an error; its transaction is aborted.
void fail_batch(store_impl self, batch_job& b, caf::error e) {
  self->state.transactions.erase(b.run.txn().value);
  (void)self->state.store->abort(b.run.txn());
  b.rp.deliver(std::move(e));
}

/// Runs a batch from its next request on. A request whose result the store
/// returns at once (the usual case) continues the loop here; one that waits
/// for a lock finishes later on a store thread, whose completion message
/// (done_atom with the batch id) calls continue_batch. Exactly one of the two
/// sides takes each result: they race on `phase`.
void run_batch(store_impl self, std::shared_ptr<batch_job> b) {
  auto& st = self->state;
  struct slot {
    std::atomic<int> phase{0}; // 1: the caller returned, 2: the result is in
    std::optional<result<op_result>> r;
  };
  while (!b->run.finished()) {
    auto id = st.next_request++;
    auto sl = std::make_shared<slot>();
    auto me = caf::actor_cast<caf::actor>(self);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        b->deadline - std::chrono::steady_clock::now());
    st.store->execute_async(b->run.next(), std::max(left, std::chrono::milliseconds{0}),
                            [sl, me, id](result<op_result> r) {
                              sl->r = std::move(r);
                              if (sl->phase.exchange(2) != 1)
                                return; // the caller takes it inline
                              auto& x = *sl->r;
                              if (x)
                                caf::anon_send(me, store_atoms::done_atom_v, id,
                                               caf::error{}, std::move(x.value()));
                              else
                                caf::anon_send(me, store_atoms::done_atom_v, id,
                                               to_caf_error(x.error()), op_result{});
                            });
    if (sl->phase.exchange(1) != 2) {
      st.batches.emplace(id, std::move(b)); // continues in continue_batch
      return;
    }
    auto& r = *sl->r;
    if (!r)
      return fail_batch(self, *b, to_caf_error(r.error()));
    b->run.accept(std::move(r.value()));
  }
  auto t = b->run.txn();
  if (b->run.check_failed()) {
    st.transactions.erase(t.value);
    (void)st.store->abort(t);
    b->rp.deliver(b->run.take());
    return;
  }
  if (!b->run.commit_requested()) {
    b->rp.deliver(b->run.take());
    return;
  }
  st.transactions.erase(t.value);
  auto id = st.next_request++;
  st.batches.emplace(id, b);
  st.store->commit_async(t, [id, me = caf::actor_cast<caf::actor>(self)](result<lsn> r) {
    if (r)
      caf::anon_send(me, store_atoms::done_atom_v, id, caf::error{}, r.value().value);
    else
      caf::anon_send(me, store_atoms::done_atom_v, id, to_caf_error(r.error()),
                     uint64_t{0});
  });
}

/// A completion for batch `id`: an operation's result, or (`lsn`) its commit.
/// False if `id` is no batch.
bool continue_batch(store_impl self, uint64_t id, caf::error& err, op_result* res,
                    const uint64_t* l) {
  auto& st = self->state;
  auto i = st.batches.find(id);
  if (i == st.batches.end())
    return false;
  auto b = std::move(i->second);
  st.batches.erase(i);
  if (l) { // the commit
    if (err) {
      b->rp.deliver(std::move(err));
      return true;
    }
    b->run.set_lsn(*l);
    b->rp.deliver(b->run.take());
    return true;
  }
  if (err) {
    fail_batch(self, *b, std::move(err));
    return true;
  }
  b->run.accept(std::move(*res));
  run_batch(self, std::move(b));
  return true;
}

store_actor::behavior_type make_store(store_impl self,
                                      std::shared_ptr<state_manager> sm) {
  self->state.store = std::move(sm);
  // Completions arrive from the store's threads as messages to this actor.
  auto park = [self](caf::response_promise rp) {
    auto id = self->state.next_request++;
    self->state.pending.emplace(id, std::move(rp));
    return std::make_pair(id, caf::actor_cast<caf::actor>(self));
  };
  auto finish = [self](uint64_t id, auto&&... reply) {
    auto i = self->state.pending.find(id);
    if (i == self->state.pending.end())
      return;
    auto rp = std::move(i->second);
    self->state.pending.erase(i);
    rp.deliver(std::forward<decltype(reply)>(reply)...);
  };
  return {
      [self](store_atoms::open_atom, const std::string& name, collection_kind kind,
             const std::string& key_type,
             const std::string& value_type) -> caf::result<bool> {
        // Creating a collection waits for one fdatasync; rare enough to do inline.
        auto r = self->state.store->ensure_collection(name, kind, key_type, value_type);
        if (!r)
          return to_caf_error(r.error());
        return true;
      },
      [self](store_atoms::begin_atom) -> caf::result<txn_id> {
        auto t = self->state.store->begin_txn();
        if (!t)
          return to_caf_error(t.error());
        self->state.transactions.insert(t.value().value);
        return t.value();
      },
      [self, park](op_request& req, uint32_t timeout_ms) -> caf::result<op_result> {
        auto rp = self->make_response_promise<op_result>();
        auto [id, me] = park(rp);
        auto timeout = timeout_ms == 0 ? self->state.store->default_timeout()
                                       : std::chrono::milliseconds{timeout_ms};
        self->state.store->execute_async(
            std::move(req), timeout, [id = id, me = me](result<op_result> r) {
              if (r)
                caf::anon_send(me, store_atoms::done_atom_v, id, caf::error{},
                               std::move(r.value()));
              else
                caf::anon_send(me, store_atoms::done_atom_v, id, to_caf_error(r.error()),
                               op_result{});
            });
        return rp;
      },
      [self, park](store_atoms::commit_atom, txn_id t) -> caf::result<uint64_t> {
        auto rp = self->make_response_promise<uint64_t>();
        self->state.transactions.erase(t.value);
        auto [id, me] = park(rp);
        self->state.store->commit_async(t, [id = id, me = me](result<lsn> r) {
          if (r)
            caf::anon_send(me, store_atoms::done_atom_v, id, caf::error{},
                           r.value().value);
          else
            caf::anon_send(me, store_atoms::done_atom_v, id, to_caf_error(r.error()),
                           uint64_t{0});
        });
        return rp;
      },
      [self](store_atoms::abort_atom, txn_id t) -> caf::result<bool> {
        self->state.transactions.erase(t.value);
        auto r = self->state.store->abort(t);
        if (!r)
          return to_caf_error(r.error());
        return true;
      },
      [self](op_batch& b, uint32_t timeout_ms) -> caf::result<batch_result> {
        auto& st = self->state;
        if (!groups_valid(b))
          return make_error(errc::bad_argument);
        txn_id t = b.txn;
        if (t.value == 0) {
          auto begun = st.store->begin_txn();
          if (!begun)
            return to_caf_error(begun.error());
          t = begun.value();
          st.transactions.insert(t.value);
        }
        auto timeout = timeout_ms == 0 ? st.store->default_timeout()
                                       : std::chrono::milliseconds{timeout_ms};
        auto job = std::make_shared<batch_job>(batch_job{
            batch_run{std::move(b), t}, std::chrono::steady_clock::now() + timeout,
            self->make_response_promise<batch_result>()});
        auto rp = job->rp;
        run_batch(self, std::move(job));
        return rp;
      },
      [self](store_atoms::checkpoint_atom) -> caf::result<uint64_t> {
        auto r = self->state.store->checkpoint();
        if (!r)
          return to_caf_error(r.error());
        return r.value().value;
      },
      [self, finish](store_atoms::done_atom, uint64_t id, caf::error& err,
                     op_result& res) {
        if (continue_batch(self, id, err, &res, nullptr))
          return;
        if (err)
          finish(id, std::move(err));
        else
          finish(id, std::move(res));
      },
      [self, finish](store_atoms::done_atom, uint64_t id, caf::error& err, uint64_t l) {
        if (continue_batch(self, id, err, nullptr, &l))
          return;
        if (err)
          finish(id, std::move(err));
        else
          finish(id, l);
      },
  };
}

} // namespace

store_actor spawn_store_actor(caf::actor_system& sys,
                              std::shared_ptr<state_manager> store) {
  return sys.spawn(make_store, std::move(store));
}

} // namespace conclave::store
