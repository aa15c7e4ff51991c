#include "actors/workflow/replicated_store.hpp"

#include "actors/replication/interactive.hpp"
#include "actors/replication/messages.hpp"
#include "actors/replication/type_ids.hpp"
#include "protocols/store/batch.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace conclave::workflow {

namespace {

namespace rp = conclave::replication;
namespace st = conclave::store;

/// Open transactions kept at most; beyond, the oldest is dropped (its
/// caller died or forgot it: nothing of it was written).
constexpr size_t max_open_txns = 100'000;

using value = std::optional<std::string>;

struct adapter_state {
  replicated_store_options opts;
  std::map<uint64_t, rp::txn_buffer> txns;
  uint64_t next_txn = 1;
  static inline const char* name = "conclave.replicated_store";
};

using impl = st::store_actor::stateful_pointer<adapter_state>;

caf::error store_error(st::errc e) {
  return st::make_error(e);
}

/// The store error for a replication answer that is not ok. A conflict, a
/// timeout or an unknown outcome is lock_timeout: "abort and run the
/// transaction again" (what the workflow actors do after a lock timeout).
caf::error store_error(rp::errc e) {
  switch (e) {
  case rp::errc::too_large:
    return store_error(st::errc::too_large);
  case rp::errc::bad_request:
    return store_error(st::errc::bad_argument);
  case rp::errc::wrong_kind:
    return store_error(st::errc::wrong_type);
  case rp::errc::unknown_collection:
    return store_error(st::errc::unknown_collection);
  default:
    return store_error(st::errc::lock_timeout);
  }
}

/// A failed request to the client actor (no answer in time, client gone).
caf::error store_error(const caf::error&) {
  return store_error(st::errc::lock_timeout);
}

bool is_read(st::operation op) {
  return op == st::operation::try_get || op == st::operation::contains;
}

bool is_write(st::operation op) {
  return op == st::operation::add || op == st::operation::add_or_update
         || op == st::operation::try_update || op == st::operation::try_remove
         || op == st::operation::enqueue;
}

/// Writes that decide on the current value (read first).
bool reads_before_write(st::operation op) {
  return op == st::operation::add || op == st::operation::try_update;
}

// -- requests to the client actor ---------------------------------------------

void read_key(impl self, const std::string& c, const std::string& k,
              std::function<void(caf::error, value)> done) {
  self->request(self->state.opts.client, self->state.opts.request_timeout,
                rp::read_request{c, k})
      .then(
          [done](rp::read_result& r) {
            if (r.code != rp::errc::ok)
              return done(store_error(r.code), std::nullopt);
            done(caf::error{}, r.found ? value{std::move(r.value)} : std::nullopt);
          },
          [done](caf::error& e) { done(store_error(e), std::nullopt); });
}

using items = std::vector<std::pair<std::string, std::string>>;

struct scan_ctx {
  st::op_request req;
  std::string prefix;
  std::string start_after;
  items out;
  std::function<void(caf::error, items)> done;
};

/// The longest common prefix of a and b.
std::string common_prefix(const std::string& a, const std::string& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n])
    ++n;
  return a.substr(0, n);
}

void scan_page(impl self, std::shared_ptr<scan_ctx> c) {
  rp::list_request lr;
  lr.collection = c->req.collection;
  lr.prefix = c->prefix;
  lr.start_after = c->start_after;
  lr.limit = self->state.opts.page;
  self->request(self->state.opts.client, self->state.opts.request_timeout, std::move(lr))
      .then(
          [self, c](rp::list_result& r) {
            if (r.code != rp::errc::ok)
              return c->done(store_error(r.code), {});
            auto& q = c->req;
            auto last = r.items.empty() ? std::string{} : r.items.back().key;
            for (auto& it : r.items) {
              if (q.has_to && it.key >= q.to)
                return c->done(caf::error{}, std::move(c->out));
              if (q.has_from && it.key < q.from)
                continue;
              c->out.emplace_back(std::move(it.key), std::move(it.value));
              if (q.limit != 0 && c->out.size() >= q.limit)
                return c->done(caf::error{}, std::move(c->out));
            }
            if (!r.more || r.items.empty())
              return c->done(caf::error{}, std::move(c->out));
            c->start_after = std::move(last);
            scan_page(self, c);
          },
          [c](caf::error& e) { c->done(store_error(e), {}); });
}

/// enumerate [from, to) as list requests: the keys of the range share the
/// bounds' common prefix; paging starts just below `from` (at a strict prefix
/// of it) and keys below `from` are skipped.
void scan(impl self, st::op_request req, std::function<void(caf::error, items)> done) {
  auto c = std::make_shared<scan_ctx>();
  if (req.has_from && req.has_to)
    c->prefix = common_prefix(req.from, req.to);
  if (req.has_from && !req.from.empty())
    c->start_after = req.from.substr(0, req.from.size() - 1);
  if (c->start_after.size() < c->prefix.size())
    c->start_after.clear(); // the prefix bounds it already
  c->req = std::move(req);
  c->done = std::move(done);
  scan_page(self, std::move(c));
}

// -- transactions ---------------------------------------------------------------

rp::txn_buffer* find_txn(impl self, st::txn_id t) {
  auto i = self->state.txns.find(t.value);
  return i == self->state.txns.end() ? nullptr : &i->second;
}

st::txn_id begin_txn(impl self) {
  auto& s = self->state;
  if (s.txns.size() >= max_open_txns)
    s.txns.erase(s.txns.begin());
  auto id = s.next_txn++;
  s.txns.emplace(id, rp::txn_buffer{});
  return st::txn_id{id};
}

/// The key as transaction `t` sees it (its own write, else its first read,
/// else a read now, which it remembers). `t` 0: a committed read.
void txn_get(impl self, st::txn_id t, const std::string& c, const std::string& k,
             std::function<void(caf::error, value)> done) {
  if (t.value != 0) {
    auto* buf = find_txn(self, t);
    if (!buf)
      return done(store_error(st::errc::unknown_transaction), std::nullopt);
    if (auto v = buf->local(c, k))
      return done(caf::error{}, std::move(*v));
  }
  read_key(self, c, k, [self, t, c, k, done](caf::error e, value v) {
    if (e || t.value == 0)
      return done(std::move(e), std::move(v));
    auto* buf = find_txn(self, t);
    if (!buf) // aborted meanwhile
      return done(store_error(st::errc::transaction_finished), std::nullopt);
    buf->record_read(c, k, v);
    done(caf::error{}, *buf->local(c, k));
  });
}

/// Applies one operation to transaction `t` whose keys it reads are known
/// locally already (see prefetch). Reads, writes; never a request.
st::op_result apply_local(rp::txn_buffer& buf, const st::op_request& r, caf::error& err) {
  st::op_result out;
  auto known = [&]() -> value {
    auto v = buf.local(r.collection, r.key);
    return v ? *v : std::nullopt;
  };
  switch (r.op) {
  case st::operation::try_get:
  case st::operation::contains: {
    auto v = known();
    out.found = v.has_value();
    if (v && r.op == st::operation::try_get)
      out.value = std::move(*v);
    break;
  }
  case st::operation::add:
    if (known()) {
      err = store_error(st::errc::key_exists);
      break;
    }
    buf.put(r.collection, r.key, r.value);
    break;
  case st::operation::try_update:
    if (auto v = known(); v && *v == r.expected) {
      buf.put(r.collection, r.key, r.value);
      out.found = true;
    }
    break;
  case st::operation::add_or_update:
    // found (did the key exist) is reported only when the transaction
    // knows the key already; a blind write does not read it.
    if (auto v = buf.local(r.collection, r.key))
      out.found = v->has_value();
    buf.put(r.collection, r.key, r.value);
    break;
  case st::operation::try_remove:
    if (auto v = buf.local(r.collection, r.key); v && *v) {
      out.found = true;
      out.value = **v;
    }
    buf.remove(r.collection, r.key);
    break;
  case st::operation::enqueue:
    buf.enqueue(r.collection, r.value);
    out.found = true;
    break;
  default:
    err = store_error(st::errc::bad_argument);
  }
  return out;
}

/// Reads, in parallel, every key the requests of transaction `t` need from
/// the store (reads and read-before-write ops not known locally) and every
/// range they enumerate; then `done` with the enumerations' items by index.
void prefetch(impl self, st::txn_id t, const std::vector<st::op_request>& ops,
              std::function<void(caf::error, std::map<size_t, items>)> done) {
  struct progress {
    size_t left = 1; // released at the end of the loop
    caf::error first;
    std::map<size_t, items> scans;
    std::function<void(caf::error, std::map<size_t, items>)> done;
  };
  auto p = std::make_shared<progress>();
  p->done = std::move(done);
  auto finish = [p] {
    if (--p->left == 0)
      p->done(std::move(p->first), std::move(p->scans));
  };
  auto* buf = find_txn(self, t);
  if (!buf)
    return p->done(store_error(st::errc::unknown_transaction), {});
  for (size_t i = 0; i < ops.size(); ++i) {
    auto& r = ops[i];
    if (r.op == st::operation::enumerate) {
      ++p->left;
      scan(self, r, [p, i, finish](caf::error e, items xs) {
        if (e && !p->first)
          p->first = std::move(e);
        p->scans[i] = std::move(xs);
        finish();
      });
    } else if ((is_read(r.op) || reads_before_write(r.op))
               && !buf->local(r.collection, r.key)) {
      ++p->left;
      txn_get(self, t, r.collection, r.key, [p, finish](caf::error e, value) {
        if (e && !p->first)
          p->first = std::move(e);
        finish();
      });
    } else if (!is_read(r.op) && !is_write(r.op)) {
      if (!p->first)
        p->first = store_error(st::errc::bad_argument);
    }
  }
  finish();
}

/// The commit of transaction `t`: `extra` conditions first (a batch's
/// checks), then the buffer's conditions and writes. Nothing written:
/// nothing is sent (lsn 0). condition_failed on one of the first
/// `extra.size()` ops: `failed` gets its index; on any other: a conflict.
void commit_txn(impl self, st::txn_id t, std::vector<rp::txn_op> extra,
                std::function<void(caf::error, uint64_t, std::optional<size_t>)> done) {
  auto i = self->state.txns.find(t.value);
  if (i == self->state.txns.end())
    return done(store_error(st::errc::unknown_transaction), 0, std::nullopt);
  auto buf = std::move(i->second);
  self->state.txns.erase(i);
  if (buf.writes() == 0 && extra.empty())
    return done(caf::error{}, 0, std::nullopt); // read-only: nothing to log
  auto req = buf.commit_request();
  auto n = extra.size();
  if (n != 0)
    req.ops.insert(req.ops.begin(), std::make_move_iterator(extra.begin()),
                   std::make_move_iterator(extra.end()));
  self->request(self->state.opts.client, self->state.opts.request_timeout, std::move(req))
      .then(
          [done, n](rp::txn_result& r) {
            if (r.code == rp::errc::ok)
              return done(caf::error{}, r.at.value, std::nullopt);
            if (r.code == rp::errc::condition_failed && !r.outputs.empty()
                && r.outputs.size() <= n)
              return done(caf::error{}, 0, r.outputs.size() - 1);
            done(store_error(r.code), 0, std::nullopt);
          },
          [done](caf::error& e) { done(store_error(e), 0, std::nullopt); });
}

rp::txn_op condition_of(const st::batch_check& c) {
  rp::txn_op op;
  op.collection = c.collection;
  op.key = c.key;
  if (c.kind == st::check_kind::absent) {
    op.kind = rp::op_kind::expect_absent;
  } else {
    op.kind = rp::op_kind::expect_value;
    op.value = c.value;
  }
  return op;
}

// -- op_batch -------------------------------------------------------------------

using batch_promise = caf::typed_response_promise<st::batch_result>;

/// Runs the batch's operations on its (open) transaction and commits if
/// asked; `deferred`: the checks left to the commit as conditions.
void run_ops(impl self, st::op_batch b, std::vector<rp::txn_op> deferred,
             batch_promise prom) {
  auto t = b.txn;
  auto ops = std::make_shared<std::vector<st::op_request>>(std::move(b.ops));
  prefetch(self, t, *ops,
           [self, t, ops, commit = b.commit, deferred = std::move(deferred),
            prom](caf::error e, std::map<size_t, items> scans) mutable {
             auto* buf = find_txn(self, t);
             if (!e && !buf)
               e = store_error(st::errc::transaction_finished);
             if (e) {
               self->state.txns.erase(t.value);
               {
                 prom.deliver(std::move(e));
                 return;
               }
             }
             st::batch_result out;
             out.txn = t;
             for (size_t i = 0; i < ops->size(); ++i) {
               auto& r = (*ops)[i];
               if (r.op == st::operation::enumerate) {
                 st::op_result x;
                 x.items = std::move(scans[i]);
                 out.results.push_back(std::move(x));
                 continue;
               }
               caf::error err;
               out.results.push_back(apply_local(*buf, r, err));
               if (err) {
                 self->state.txns.erase(t.value);
                 {
                   prom.deliver(std::move(err));
                   return;
                 }
               }
             }
             if (!commit) {
               prom.deliver(std::move(out));
               return;
             }
             auto res = std::make_shared<st::batch_result>(std::move(out));
             commit_txn(self, t, std::move(deferred),
                        [res, prom](caf::error e, uint64_t lsn,
                                    std::optional<size_t> failed) mutable {
                          if (e) {
                            prom.deliver(std::move(e));
                            return;
                          }
                          if (failed) {
                            res->failed_check = static_cast<uint32_t>(*failed + 1);
                            res->results.clear();
                            {
                              prom.deliver(std::move(*res));
                              return;
                            }
                          }
                          res->lsn = lsn;
                          prom.deliver(std::move(*res));
                        });
           });
}

/// Checks that cannot wait for the commit are read now, in order; the first
/// that fails aborts the transaction.
void run_checks(impl self, std::shared_ptr<st::op_batch> b, size_t i,
                std::vector<rp::txn_op> deferred, batch_promise prom) {
  if (i == b->checks.size())
    return run_ops(self, std::move(*b), std::move(deferred), std::move(prom));
  auto& c = b->checks[i];
  if (b->commit && c.kind != st::check_kind::at_most) {
    deferred.push_back(condition_of(c));
    return run_checks(self, b, i + 1, std::move(deferred), std::move(prom));
  }
  txn_get(
      self, b->txn, c.collection, c.key,
      [self, b, i, deferred = std::move(deferred), prom](caf::error e, value v) mutable {
        if (e) {
          self->state.txns.erase(b->txn.value);
          {
            prom.deliver(std::move(e));
            return;
          }
        }
        st::op_result read;
        read.found = v.has_value();
        if (v)
          read.value = std::move(*v);
        if (!st::check_holds(b->checks[i], read)) {
          self->state.txns.erase(b->txn.value);
          st::batch_result out;
          out.txn = b->txn;
          out.failed_check = static_cast<uint32_t>(i + 1);
          {
            prom.deliver(std::move(out));
            return;
          }
        }
        run_checks(self, b, i + 1, std::move(deferred), std::move(prom));
      });
}

/// A grouped batch (independent items in one commit): only checks equals /
/// absent and writes, in a new transaction that commits. A group whose check
/// fails is left out and the rest is sent again.
void run_grouped(impl self, std::shared_ptr<st::op_batch> b,
                 std::shared_ptr<std::vector<bool>> failed, batch_promise prom) {
  std::vector<rp::txn_op> conds;
  std::vector<uint32_t> cond_group;
  rp::txn_buffer buf;
  size_t ci = 0;
  size_t oi = 0;
  for (uint32_t g = 0; g < b->groups.size(); ++g) {
    auto& grp = b->groups[g];
    if (!(*failed)[g]) {
      for (size_t k = 0; k < grp.checks; ++k) {
        conds.push_back(condition_of(b->checks[ci + k]));
        cond_group.push_back(g);
      }
      for (size_t k = 0; k < grp.ops; ++k) {
        caf::error err;
        apply_local(buf, b->ops[oi + k], err);
      }
    }
    ci += grp.checks;
    oi += grp.ops;
  }
  auto finish = [b, failed, prom](uint64_t lsn) mutable {
    st::batch_result out;
    out.lsn = lsn;
    out.results.resize(b->ops.size());
    for (uint32_t g = 0; g < failed->size(); ++g)
      if ((*failed)[g])
        out.failed_groups.push_back(g);
    prom.deliver(std::move(out));
  };
  if (buf.writes() == 0)
    return finish(0);
  auto t = begin_txn(self);
  self->state.txns[t.value] = std::move(buf);
  commit_txn(self, t, std::move(conds),
             [self, b, failed, prom, cond_group,
              finish](caf::error e, uint64_t lsn, std::optional<size_t> bad) mutable {
               if (e) {
                 prom.deliver(std::move(e));
                 return;
               }
               if (bad) {
                 (*failed)[cond_group[*bad]] = true;
                 return run_grouped(self, b, failed, std::move(prom));
               }
               finish(lsn);
             });
}

bool groupable(const st::op_batch& b) {
  if (b.txn.value != 0 || !b.commit)
    return false;
  for (auto& c : b.checks)
    if (c.kind == st::check_kind::at_most)
      return false;
  for (auto& r : b.ops)
    if (r.op != st::operation::add_or_update && r.op != st::operation::try_remove
        && r.op != st::operation::enqueue)
      return false;
  return true;
}

} // namespace

store::store_actor spawn_replicated_store(caf::actor_system& sys,
                                          replicated_store_options opts) {
  return sys.spawn([opts = std::move(opts)](impl self) -> st::store_actor::behavior_type {
    self->state.opts = opts;
    return {
        [](store_atoms::open_atom, const std::string&, st::collection_kind,
           const std::string&, const std::string&) { return true; },
        [self](store_atoms::begin_atom) { return begin_txn(self); },
        [self](st::op_request& r, uint32_t) -> caf::result<st::op_result> {
          auto promise = self->make_response_promise<st::op_result>();
          if (r.op == st::operation::enumerate) {
            scan(self, std::move(r), [promise](caf::error e, items xs) mutable {
              if (e) {
                promise.deliver(std::move(e));
                return;
              }
              st::op_result out;
              out.items = std::move(xs);
              promise.deliver(std::move(out));
            });
            return promise;
          }
          if (r.txn.value == 0 || !find_txn(self, r.txn)) {
            if (r.txn.value == 0 && is_read(r.op)) {
              auto op = r.op;
              read_key(self, r.collection, r.key,
                       [promise, op](caf::error e, value v) mutable {
                         if (e) {
                           promise.deliver(std::move(e));
                           return;
                         }
                         st::op_result out;
                         out.found = v.has_value();
                         if (v && op == st::operation::try_get)
                           out.value = std::move(*v);
                         promise.deliver(std::move(out));
                       });
              return promise;
            }
            promise.deliver(store_error(r.txn.value == 0
                                            ? st::errc::bad_argument
                                            : st::errc::unknown_transaction));
            return promise;
          }
          auto t = r.txn;
          auto req = std::make_shared<st::op_request>(std::move(r));
          prefetch(
              self, t, {*req},
              [self, t, req, promise](caf::error e, std::map<size_t, items>) mutable {
                auto* buf = find_txn(self, t);
                if (!e && !buf)
                  e = store_error(st::errc::transaction_finished);
                if (e) {
                  promise.deliver(std::move(e));
                  return;
                }
                caf::error err;
                auto out = apply_local(*buf, *req, err);
                if (err) {
                  promise.deliver(std::move(err));
                  return;
                }
                promise.deliver(std::move(out));
              });
          return promise;
        },
        [self](store_atoms::commit_atom, st::txn_id t) -> caf::result<uint64_t> {
          auto promise = self->make_response_promise<uint64_t>();
          commit_txn(
              self, t, {},
              [promise](caf::error e, uint64_t lsn, std::optional<size_t>) mutable {
                if (e) {
                  promise.deliver(std::move(e));
                  return;
                }
                promise.deliver(lsn);
              });
          return promise;
        },
        [self](store_atoms::abort_atom, st::txn_id t) {
          return self->state.txns.erase(t.value) > 0;
        },
        [self](st::op_batch& b, uint32_t) -> caf::result<st::batch_result> {
          auto promise = self->make_response_promise<st::batch_result>();
          if (!st::groups_valid(b)) {
            promise.deliver(store_error(st::errc::bad_argument));
            return promise;
          }
          if (!b.groups.empty()) {
            if (!groupable(b)) {
              promise.deliver(store_error(st::errc::bad_argument));
              return promise;
            }
            auto failed = std::make_shared<std::vector<bool>>(b.groups.size(), false);
            run_grouped(self, std::make_shared<st::op_batch>(std::move(b)), failed,
                        promise);
            return promise;
          }
          if (b.txn.value == 0)
            b.txn = begin_txn(self);
          else if (!find_txn(self, b.txn)) {
            promise.deliver(store_error(st::errc::unknown_transaction));
            return promise;
          }
          run_checks(self, std::make_shared<st::op_batch>(std::move(b)), 0, {}, promise);
          return promise;
        },
        [](store_atoms::checkpoint_atom) { return uint64_t{0}; },
        [](store_atoms::done_atom, uint64_t, caf::error&, st::op_result&) {},
        [](store_atoms::done_atom, uint64_t, caf::error&, uint64_t) {},
    };
  });
}

} // namespace conclave::workflow
