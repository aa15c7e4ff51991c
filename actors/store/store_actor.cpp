#include "actors/store/store_actor.hpp"

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <unordered_map>
#include <unordered_set>

namespace conclave::store {

namespace {

struct store_state {
  std::shared_ptr<state_manager> store;
  uint64_t next_request = 1;
  std::unordered_map<uint64_t, caf::response_promise> pending;
  std::unordered_set<uint64_t> transactions;
  static inline const char* name = "conclave.store";

  ~store_state() {
    // Nobody can finish them any more.
    for (auto t : transactions)
      (void)store->abort(txn_id{t});
  }
};

using store_impl = store_actor::stateful_pointer<store_state>;

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
      [self](store_atoms::checkpoint_atom) -> caf::result<uint64_t> {
        auto r = self->state.store->checkpoint();
        if (!r)
          return to_caf_error(r.error());
        return r.value().value;
      },
      [finish](store_atoms::done_atom, uint64_t id, caf::error& err, op_result& res) {
        if (err)
          finish(id, std::move(err));
        else
          finish(id, std::move(res));
      },
      [finish](store_atoms::done_atom, uint64_t id, caf::error& err, uint64_t l) {
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
