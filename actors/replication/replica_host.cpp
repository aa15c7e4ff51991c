#include "actors/replication/replica_host.hpp"

#include "actors/replication/checkpoint_image.hpp"
#include "actors/replication/lease_state.hpp"
#include "actors/replication/lease_table.hpp"
#include "actors/replication/record_codec.hpp"
#include "actors/replication/session_table.hpp"
#include "actors/replication/store_reads.hpp"
#include "actors/replication/txn_apply.hpp"
#include "actors/timer/deadline_timer.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace conclave::replication {

store::result<void> memory_term_file::save(const term& t) {
  t_ = t;
  ++saves_;
  return store::outcome::success();
}

void actor_transport::deliver(node_id to, const message& m) {
  auto p = peers_.find(to);
  auto d = down_.find(to);
  if (p == peers_.end() || !p->second || (d != down_.end() && d->second)) {
    ++lost_;
    return;
  }
  std::visit([&](const auto& x) { caf::anon_send(p->second, x); }, m);
}

void actor_transport::deliver_chunk(node_id to, const snapshot_chunk& c) {
  auto p = peers_.find(to);
  auto d = down_.find(to);
  if (p == peers_.end() || !p->second || (d != down_.end() && d->second)) {
    ++lost_;
    return;
  }
  caf::anon_send(p->second, c);
}

namespace {

struct host_state {
  replica_host_options opts;
  std::unique_ptr<replica_core> core;
  std::unique_ptr<store::store_core> store;
  /// Replication lsn applied to `store`.
  lsn applied;
  /// Last lsn appended to the device (lowered by truncations).
  lsn appended;
  bool sync_in_flight = false;
  /// The most the sync in flight may report: lowered by each truncation while
  /// it is in flight. Its completion may already be queued behind the
  /// truncating message, and must not count the records that replaced the
  /// ones it synced.
  lsn sync_cap;
  bool flush_pending = false;
  uint64_t next_txn = 1;
  /// A client transaction proposed here and not answered yet.
  struct waiter {
    caf::typed_response_promise<txn_result> promise;
    lsn at;
    /// Set when this host applied the record (strong commits: before the
    /// acknowledgement).
    std::optional<apply_outcome> outcome;
    /// A lone lease_acquire that may wait for a slot until `lease_until`
    /// (lease clock): answered lease_busy only once that has passed.
    std::optional<txn_op> lease_acquire;
    timestamp lease_until{};
    /// Proposed for the head of the lease's waiters (its name is in
    /// `granting` until the record is settled).
    bool lease_grant = false;
  };
  std::map<uint64_t, waiter> waiting;
  /// The latest session stamp proposed or applied here: a primary's stamps
  /// never go back, even after a primary whose clock ran ahead.
  int64_t session_stamp = 0;
  /// Sessioned records answered from the session table (retries).
  uint64_t session_duplicates = 0;
  /// lsn -> txn ref of the waiting transactions.
  std::map<uint64_t, uint64_t> waiting_at;
  deadline_timer timer;
  /// Old versions applied transactions left since the last collect_garbage
  /// (overwritten and removed keys, dequeued items), and the keys added
  /// minus the keys removed since the host started: collect_garbage walks
  /// every row, so it runs once the garbage reaches a quarter of the rows
  /// (at least gc_min_garbage): O(1) rows walked per old version, and at
  /// most that many old versions kept. A store that only grows never walks.
  uint64_t garbage_since_gc = 0;
  uint64_t rows_added = 0;
  uint64_t unknown_messages = 0;
  uint64_t bad_payloads = 0;
  uint64_t snapshots_unsupported = 0;
  /// The newest checkpoint this host holds (written or installed), encoded
  /// (checkpoint_image.hpp): what it streams.
  lsn checkpoint_at;
  std::string checkpoint_bytes;
  uint64_t checkpoints_written = 0;
  uint64_t checkpoint_failures = 0;
  /// After a failed checkpoint, the next automatic one waits until the
  /// applied lsn passes this (a failing disk is not hammered per batch).
  lsn checkpoint_retry_after;
  /// Ask the device for a sync even if no record is waiting (a checkpoint or
  /// an install becomes durable with the next sync on some devices).
  bool sync_wanted = false;
  /// A checkpoint stream being received, per sender.
  struct incoming {
    /// The stream's first chunk without its data: every later chunk must
    /// carry the same sender term, lsn, term, stream and count.
    snapshot_chunk head;
    uint32_t next = 0;
    std::string data;
  };
  std::map<node_id, incoming> incoming_streams;
  uint64_t next_stream = 1;
  uint64_t snapshots_sent = 0;
  uint64_t snapshot_chunks_sent = 0;
  uint64_t snapshots_installed = 0;
  uint64_t snapshot_chunks_dropped = 0;
  uint64_t txns_refused = 0;
  uint64_t syncs = 0;
  int64_t last_sync_us = 0;
  /// Chained over the records applied (replica_status::digest).
  uint64_t digest = 0;
  bool failed = false;
  /// The storage's amnesia mark is still on disk (replica_host_options).
  bool amnesia_marked = false;
  // -- leases (lease_table.hpp): only while acting as a serving primary ------
  bool lease_serving = false;
  lease_table leases;
  lease_waiters lease_queue;
  /// Waiting acquires by lease_waiters::waiter::id.
  struct lease_wait {
    caf::typed_response_promise<txn_result> promise;
    txn_op op;
  };
  std::map<uint64_t, lease_wait> lease_waits;
  uint64_t next_lease_wait = 1;
  /// Leases with a grant for their head waiter in flight.
  std::set<std::string> granting;
  /// Leases whose slot an applied record freed: grant their waiters.
  std::vector<std::string> lease_freed;
  static inline const char* name = "conclave.replica_host";
};

using host_impl = caf::stateful_actor<host_state>*;

/// The host's time: its clock's, or CAF's.
timestamp host_now(host_impl self) {
  return clock_now(self->state.opts.clock.get(), self);
}

/// The device or term file failed: answer every waiting client and accept
/// nothing more (a replica that cannot keep its promises must not answer).
void fail(host_impl self, const std::string& what) {
  auto& st = self->state;
  if (st.failed)
    return;
  st.failed = true;
  if (st.opts.on_failure)
    st.opts.on_failure(what);
  for (auto& [id, w] : st.waiting)
    w.promise.deliver(txn_result{errc::primary_changed, lsn{}, no_node, {}});
  st.waiting.clear();
  st.waiting_at.clear();
  for (auto& [id, w] : st.lease_waits)
    w.promise.deliver(txn_result{errc::primary_changed, lsn{}, no_node, {}});
  st.lease_waits.clear();
  st.lease_queue.drain();
}

void request_sync(host_impl self) {
  auto& st = self->state;
  if (st.sync_in_flight || st.failed
      || (st.appended <= st.core->durable_lsn() && !st.sync_wanted))
    return;
  st.sync_in_flight = true;
  st.sync_wanted = false;
  st.sync_cap = lsn{std::numeric_limits<uint64_t>::max()};
  auto me = caf::actor_cast<caf::actor>(self);
  st.opts.device->sync([me](store::result<lsn> r) {
    if (r)
      caf::anon_send(me, replication_atoms::synced_atom_v, true, r.value().value);
    else
      caf::anon_send(me, replication_atoms::synced_atom_v, false, uint64_t{0});
  });
}

/// FNV-1a over (digest, lsn, term, kind, payload): replicas that applied the
/// same records in the same order have the same digest.
uint64_t chain_digest(uint64_t digest, const entry& e) {
  uint64_t h = digest == 0 ? 1469598103934665603ull : digest;
  auto mix = [&h](const void* p, size_t n) {
    auto b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) {
      h ^= b[i];
      h *= 1099511628211ull;
    }
  };
  uint64_t fields[] = {e.at.value, e.t.epoch, e.t.leader.value, e.t.incarnation,
                       static_cast<uint64_t>(e.kind)};
  mix(fields, sizeof(fields));
  mix(e.payload.data(), e.payload.size());
  return h;
}

/// The least garbage (old versions) worth a collect_garbage.
constexpr uint64_t gc_min_garbage = 1024;

/// Counts what a committed transaction left to collect (host_state::
/// garbage_since_gc): a put over a present key or a removed key leaves its
/// old version, a dequeue its item.
void count_garbage(host_state& st, const std::vector<txn_op>& ops,
                   const apply_outcome& outcome) {
  for (size_t i = 0; i < ops.size() && i < outcome.outputs.size(); ++i) {
    bool found = outcome.outputs[i].found;
    switch (ops[i].kind) {
    case op_kind::put:
      if (found)
        ++st.garbage_since_gc;
      else
        ++st.rows_added;
      break;
    case op_kind::remove:
      if (found) {
        ++st.garbage_since_gc;
        if (st.rows_added > 0)
          --st.rows_added;
      }
      break;
    case op_kind::dequeue:
      if (found)
        ++st.garbage_since_gc;
      break;
    default:
      break;
    }
  }
}

// -- leases ----------------------------------------------------------------------

/// The lease as this host applied it (nothing: no holder).
std::optional<lease> lease_of(host_state& st, const std::string& name) {
  auto r = read_committed(*st.store, lease_collection, name);
  if (!r || !r.value())
    return std::nullopt;
  return decode_lease(*r.value());
}

/// Every lease this host applied, by name.
std::vector<std::pair<std::string, lease>> all_leases(host_state& st) {
  std::vector<std::pair<std::string, lease>> out;
  if (!st.store->has_collection(lease_collection))
    return out;
  auto txn = st.store->begin();
  store::op_request op;
  op.txn = txn;
  op.op = store::operation::enumerate;
  op.collection = lease_collection;
  op.mode = store::read_mode::snapshot;
  if (auto r = st.store->execute(op, timestamp::max()); r)
    for (auto& [k, v] : r.value().items)
      if (auto l = decode_lease(v))
        out.emplace_back(k, std::move(*l));
  (void)st.store->abort(txn);
  return out;
}

/// A renewal (or the holder's own acquire) that reached the acting primary
/// restarts the holder's expiry at once, before it is committed. Otherwise an
/// expiry decided while the renewal is in flight would be ordered after it in
/// the log: the renewal answered ok (the holder counts from its send time),
/// then the expiry frees the slot under it. With the restart, an expiry
/// proposed after the renewal comes only once the renewal's own window has
/// passed; one proposed before it makes the renewal stale_token.
void restart_on_receipt(host_state& st, const std::vector<txn_op>& ops, timestamp now) {
  if (!st.lease_serving)
    return;
  for (auto& op : ops) {
    if (op.kind != op_kind::lease_renew && op.kind != op_kind::lease_acquire)
      continue;
    auto l = lease_of(st, op.collection);
    if (!l)
      continue;
    for (auto& h : l->holders)
      if (h.holder == op.key
          && (op.kind == op_kind::lease_acquire || format_token(h.token) == op.value))
        st.leases.held(op.collection, op.key, h.token, h.ttl, now);
  }
}

/// A primary that acts: restarts the expiry of a grant or renewal it just
/// applied, forgets a freed slot and remembers to grant it to a waiter.
void note_lease_ops(host_state& st, const std::vector<txn_op>& ops,
                    const apply_outcome& outcome, timestamp now) {
  if (!st.lease_serving || outcome.code != errc::ok)
    return;
  for (size_t i = 0; i < ops.size() && i < outcome.outputs.size(); ++i) {
    auto& op = ops[i];
    switch (op.kind) {
    case op_kind::lease_acquire:
    case op_kind::lease_renew: {
      auto token = parse_token(outcome.outputs[i].value);
      auto l = lease_of(st, op.collection);
      if (!token || !l)
        break;
      for (auto& h : l->holders)
        if (h.holder == op.key)
          st.leases.held(op.collection, op.key, *token, h.ttl, now);
      break;
    }
    case op_kind::lease_release:
    case op_kind::lease_expire:
      st.leases.gone(op.collection, op.key);
      st.lease_freed.push_back(op.collection);
      break;
    default:
      break;
    }
  }
}

/// Applies one committed transaction record to the store core
/// (txn_apply.hpp: every replica computes the same outcome) and keeps the
/// outcome for the client waiting for it here.
void apply_entry(host_state& st, const entry& e, timestamp now) {
  if (e.kind != entry_kind::transaction)
    return;
  auto ops = decode_payload(e.payload);
  if (!ops) {
    ++st.bad_payloads;
    return;
  }
  if (!ops->empty() && ops->front().kind == op_kind::session)
    if (auto c = decode_session_op(ops->front()))
      st.session_stamp = std::max(st.session_stamp, c->stamp_ms);
  // The previous values of the writes an observer watches: read before the
  // record changes them.
  auto* observer = st.opts.observer.get();
  std::vector<observed_write> watched;
  if (observer)
    for (auto& op : *ops) {
      if ((op.kind != op_kind::put && op.kind != op_kind::remove)
          || observer->collections.count(op.collection) == 0)
        continue;
      observed_write w{op.collection, op.key, std::nullopt, std::nullopt};
      if (auto r = read_committed(*st.store, op.collection, op.key); r)
        w.before = std::move(r.value());
      if (op.kind == op_kind::put)
        w.after = op.value;
      watched.push_back(std::move(w));
    }
  auto outcome = apply_txn(*st.store, *ops, e.at);
  if (observer && observer->notify && !outcome.duplicate && outcome.code == errc::ok) {
    committed_changes c{e.at, std::move(watched), lease_changes(*ops, outcome, e.at)};
    if (!c.writes.empty() || !c.leases.empty())
      observer->notify(std::move(c));
  }
  if (outcome.duplicate) {
    // A retry answered from the session table: it changed nothing.
    ++st.session_duplicates;
  } else {
    if (outcome.code != errc::ok)
      ++st.txns_refused;
    else
      count_garbage(st, *ops, outcome);
    // A sessioned record rewrites its session's row and moves its age-index
    // row: two old versions for collect_garbage (a new session adds rows
    // instead; counting it as garbage only runs the collection a bit early).
    if (!ops->empty() && ops->front().kind == op_kind::session
        && outcome.code != errc::sessions_full)
      st.garbage_since_gc += 2;
    note_lease_ops(st, *ops, outcome, now);
  }
  if (auto w = st.waiting_at.find(e.at.value); w != st.waiting_at.end())
    if (auto i = st.waiting.find(w->second); i != st.waiting.end())
      i->second.outcome = std::move(outcome);
  // Nothing but the host's own reads holds a snapshot: old versions can go.
  if (st.garbage_since_gc >= std::max(gc_min_garbage, st.rows_added / 4)) {
    st.garbage_since_gc = 0;
    st.store->collect_garbage();
  }
}

/// Answers a waiting client and forgets it.
void answer(host_state& st, std::map<uint64_t, host_state::waiter>::iterator w,
            txn_result r) {
  w->second.promise.deliver(std::move(r));
  st.waiting_at.erase(w->second.at.value);
  st.waiting.erase(w);
}

/// Sends the checkpoint at x.at to x.to in chunks (send_snapshot effect).
void stream_checkpoint(host_state& st, const send_snapshot& x) {
  if (st.checkpoint_bytes.empty() || st.checkpoint_at != x.at) {
    ++st.snapshots_unsupported;
    return;
  }
  auto chunk = std::max<size_t>(st.opts.snapshot_chunk_bytes, 1);
  auto& bytes = st.checkpoint_bytes;
  auto count = static_cast<uint32_t>((bytes.size() + chunk - 1) / chunk);
  auto stream = st.next_stream++;
  for (uint32_t i = 0; i < count; ++i) {
    snapshot_chunk c{
        st.opts.self, st.core->promised(),           x.at, x.at_term, stream, i,
        count,        bytes.substr(i * chunk, chunk)};
    st.opts.transport->deliver_chunk(x.to, c);
  }
  ++st.snapshots_sent;
  st.snapshot_chunks_sent += count;
}

/// Writes a checkpoint of the applied state if the log since the last one
/// is over a threshold (or `forced`). Returns the checkpoint's lsn, or
/// nothing if none was written.
std::optional<lsn> maybe_checkpoint(host_impl self, bool forced) {
  auto& st = self->state;
  auto& log = st.core->log();
  auto at = st.applied;
  if (st.failed || at <= log.base() || at > st.core->durable_lsn()
      || at > st.core->commit_lsn())
    return std::nullopt;
  if (!forced) {
    if (at <= st.checkpoint_retry_after)
      return std::nullopt;
    auto records = at.value - log.base().value;
    bool due =
        (st.opts.checkpoint_every_records != 0
         && records >= st.opts.checkpoint_every_records)
        || (st.opts.checkpoint_every_bytes != 0
            && log.bytes_between(log.base(), at) >= st.opts.checkpoint_every_bytes);
    if (!due)
      return std::nullopt;
  }
  auto t = log.term_at(at);
  if (!t)
    return std::nullopt;
  checkpoint_image img{at, *t, st.digest, st.store->encode_checkpoint()};
  auto bytes = encode_checkpoint_image(img);
  if (!st.opts.device->checkpoint(bytes, at)) {
    ++st.checkpoint_failures;
    auto wait = st.opts.checkpoint_every_records != 0 ? st.opts.checkpoint_every_records
                                                      : uint64_t{1024};
    st.checkpoint_retry_after = lsn{at.value + wait};
    return std::nullopt;
  }
  ++st.checkpoints_written;
  st.checkpoint_at = at;
  st.checkpoint_bytes = std::move(bytes);
  st.sync_wanted = true;
  st.core->checkpointed(at);
  return at;
}

void arm_timer(host_impl self) {
  auto& st = self->state;
  auto next = st.core->next_deadline();
  auto consider = [&](std::optional<timestamp> t) {
    if (t && (!next || *t < *next))
      next = *t;
  };
  if (st.lease_serving) {
    consider(st.leases.next_deadline());
    consider(st.lease_queue.next_deadline());
  }
  st.timer.arm(self, st.opts.clock.get(), next, replication_atoms::timer_atom_v);
}

/// Proposals are flushed by a message the host sends itself, so that the
/// ones already in the mailbox share one append.
void schedule_flush(host_impl self) {
  auto& st = self->state;
  if (!st.flush_pending) {
    st.flush_pending = true;
    self->send(self, replication_atoms::flush_atom_v);
  }
}

/// Proposes a transaction. On success the caller keeps a waiter for it
/// (keep_waiter) under the returned ref.
std::variant<std::pair<txn_ref, lsn>, errc>
propose_txn(host_impl self, const std::vector<txn_op>& ops, commit_mode mode) {
  auto& st = self->state;
  auto ref = txn_ref{st.next_txn++};
  auto r = st.core->propose(ref, encode_payload(ops), mode, host_now(self));
  if (auto e = std::get_if<errc>(&r))
    return *e;
  schedule_flush(self);
  return std::make_pair(ref, std::get<lsn>(r));
}

void keep_waiter(host_state& st, txn_ref ref, host_state::waiter w) {
  st.waiting_at.emplace(w.at.value, ref.value);
  st.waiting.emplace(ref.value, std::move(w));
}

/// A lease_busy answer: the lease as applied here, for the client to show.
txn_result busy_result(host_state& st, const std::string& name) {
  auto l = lease_of(st, name);
  return txn_result{errc::lease_busy,
                    lsn{},
                    st.opts.self,
                    {op_output{false, encode_lease(l ? *l : lease{})}}};
}

/// Queues an acquire that waits for a slot (FIFO per lease).
void enqueue_waiter(host_impl self, caf::typed_response_promise<txn_result> rp,
                    const txn_op& op, timestamp until) {
  auto& st = self->state;
  auto id = st.next_lease_wait++;
  st.lease_waits.emplace(id, host_state::lease_wait{std::move(rp), op});
  auto old = st.lease_queue.push(op.collection, {id, op.key, until});
  if (old) // the same holder asked again: the new request keeps its place
    if (auto i = st.lease_waits.find(*old); i != st.lease_waits.end()) {
      i->second.promise.deliver(busy_result(st, op.collection));
      st.lease_waits.erase(i);
    }
}

/// Grants the head waiter of a lease a free slot, one grant in flight per
/// lease at a time.
void try_grant(host_impl self, const std::string& name) {
  auto& st = self->state;
  while (st.lease_serving && st.granting.count(name) == 0
         && st.lease_queue.waiting(name) > 0) {
    auto l = lease_of(st, name);
    if (l && l->holders.size() >= l->limit)
      return;
    auto w = st.lease_queue.pop(name);
    auto i = st.lease_waits.find(w->id);
    if (i == st.lease_waits.end())
      continue;
    auto lw = std::move(i->second);
    st.lease_waits.erase(i);
    auto r = propose_txn(self, {lw.op}, commit_mode::strong);
    if (auto e = std::get_if<errc>(&r)) {
      lw.promise.deliver(txn_result{*e, lsn{}, st.core->primary_hint(), {}});
      continue;
    }
    auto [ref, at] = std::get<0>(r);
    keep_waiter(st, ref, {lw.promise, at, std::nullopt, lw.op, w->until, true});
    st.granting.insert(name);
  }
}

/// After every step: start or stop acting on leases with the primary's
/// serving state, and grant freed slots.
void lease_after(host_impl self, timestamp now) {
  auto& st = self->state;
  bool acting =
      !st.failed && st.core->current_role() == role::primary && st.core->serving();
  if (acting && !st.lease_serving) {
    // Every holder gets its full ttl again from now (lease_table.hpp).
    st.lease_serving = true;
    for (auto& [name, l] : all_leases(st))
      for (auto& h : l.holders)
        st.leases.held(name, h.holder, h.token, h.ttl, now);
  } else if (!acting && st.lease_serving) {
    st.lease_serving = false;
    st.leases.clear();
    st.granting.clear();
    st.lease_freed.clear();
    st.lease_queue.drain();
    for (auto& [id, w] : st.lease_waits)
      w.promise.deliver(
          txn_result{errc::not_primary, lsn{}, st.core->primary_hint(), {}});
    st.lease_waits.clear();
  }
  auto freed = std::move(st.lease_freed);
  st.lease_freed.clear();
  for (auto& name : freed)
    try_grant(self, name);
}

/// The timer fired: propose the expiry of holders whose time ran out, answer
/// waiters whose wait ran out.
void lease_tick(host_impl self, timestamp now) {
  auto& st = self->state;
  if (!st.lease_serving)
    return;
  auto local = now;
  for (auto& x : st.leases.due(local)) {
    txn_op op{x.name, x.holder, format_token(x.token), op_kind::lease_expire};
    (void)propose_txn(self, {op}, commit_mode::strong); // nobody waits for it
  }
  for (auto& w : st.lease_queue.timed_out(local))
    if (auto i = st.lease_waits.find(w.id); i != st.lease_waits.end()) {
      i->second.promise.deliver(busy_result(st, i->second.op.collection));
      st.lease_waits.erase(i);
    }
}

/// A settled acquire that found the lease busy and may still wait goes
/// (back) into the queue instead of being answered. True if it did.
bool requeue_if_waiting(host_impl self, host_state::waiter& w, errc code, timestamp now) {
  auto& st = self->state;
  if (!w.lease_acquire || code != errc::lease_busy || !st.lease_serving
      || w.lease_until <= now)
    return false;
  auto& op = *w.lease_acquire;
  if (w.lease_grant) {
    auto id = st.next_lease_wait++;
    st.lease_waits.emplace(id, host_state::lease_wait{w.promise, op});
    st.lease_queue.push_front(op.collection, {id, op.key, w.lease_until});
  } else {
    enqueue_waiter(self, w.promise, op, w.lease_until);
  }
  return true;
}

/// Executes the core's effects in order, then sends its outbox, then arms the
/// timer (the host contract).
void process(host_impl self) {
  auto& st = self->state;
  auto effects = std::move(st.core->effects());
  st.core->effects().clear();
  for (auto& eff : effects) {
    if (st.failed)
      break;
    std::visit(
        [&](auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, persist_term>) {
            if (auto r = st.opts.terms->save(x.t); !r)
              fail(self, "saving the promised term: " + r.error().message());
          } else if constexpr (std::is_same_v<T, append_records>) {
            for (auto& e : x.entries) {
              if (auto r = st.opts.device->append(to_log_record(e)); !r) {
                fail(self, "appending to the log: " + r.error().message());
                return;
              }
              st.appended = e.at;
            }
          } else if constexpr (std::is_same_v<T, truncate_after>) {
            if (auto r = st.opts.device->truncate_after(x.after); !r) {
              fail(self, "truncating the log: " + r.error().message());
              return;
            }
            if (st.appended > x.after)
              st.appended = x.after;
            if (st.sync_in_flight && st.sync_cap > x.after)
              st.sync_cap = x.after;
          } else if constexpr (std::is_same_v<T, apply_through>) {
            auto& log = st.core->log();
            while (st.applied < x.through) {
              lsn next{st.applied.value + 1};
              if (next > log.base()) {
                auto& e = log.at(next);
                apply_entry(st, e, host_now(self));
                st.digest = chain_digest(st.digest, e);
              }
              st.applied = next;
            }
          } else if constexpr (std::is_same_v<T, commit_acked>) {
            if (auto w = st.waiting.find(x.txn.value); w != st.waiting.end()) {
              txn_result r{errc::ok, x.at, st.opts.self, {}};
              if (auto& o = w->second.outcome) {
                r.code = o->code;
                r.outputs = std::move(o->outputs);
                if (o->first_at)
                  r.at = *o->first_at;
              }
              auto& lw = w->second;
              if (lw.lease_grant && lw.lease_acquire) {
                st.granting.erase(lw.lease_acquire->collection);
                st.lease_freed.push_back(lw.lease_acquire->collection);
              }
              if (requeue_if_waiting(self, lw, r.code, host_now(self))) {
                st.waiting_at.erase(lw.at.value);
                st.waiting.erase(w);
              } else {
                answer(st, w, std::move(r));
              }
            }
          } else if constexpr (std::is_same_v<T, txn_failed>) {
            if (auto w = st.waiting.find(x.txn.value); w != st.waiting.end()) {
              if (w->second.lease_grant && w->second.lease_acquire)
                st.granting.erase(w->second.lease_acquire->collection);
              answer(st, w, txn_result{x.reason, lsn{}, x.primary_hint, {}});
            }
          } else if constexpr (std::is_same_v<T, send_snapshot>) {
            stream_checkpoint(st, x);
          } else {
            static_assert(std::is_same_v<T, sync_finished>);
            ++st.syncs;
            st.last_sync_us =
                std::chrono::duration_cast<std::chrono::microseconds>(x.took).count();
          }
        },
        eff);
  }
  if (st.failed) {
    st.core->outbox().clear();
    return;
  }
  if (st.amnesia_marked && !st.core->amnesiac()) {
    // Rebuilt: what the core counted on is durable (log_durable, or an
    // installed checkpoint), so the mark can go.
    st.amnesia_marked = false;
    if (st.opts.healed)
      st.opts.healed();
  }
  lease_after(self, host_now(self));
  auto out = std::move(st.core->outbox());
  st.core->outbox().clear();
  for (auto& o : out)
    st.opts.transport->deliver(o.to, o.msg);
  maybe_checkpoint(self, false);
  request_sync(self);
  arm_timer(self);
}

template <class Msg>
auto peer_handler(host_impl self) {
  return [self](Msg& m) {
    if (self->state.failed)
      return;
    self->state.core->handle(message{std::move(m)}, host_now(self));
    process(self);
  };
}

/// Installs a checkpoint the core took from a peer: durably on the device
/// first (the core's acknowledgement goes out after this), then as the
/// readable state.
void install(host_impl self, std::string bytes, const checkpoint_image& img,
             std::unique_ptr<store::store_core> state) {
  auto& st = self->state;
  if (auto r = st.opts.device->install_snapshot(bytes, img.at); !r) {
    fail(self, "installing a checkpoint: " + r.error().message());
    return;
  }
  if (!st.opts.unsafe_install_keeps_state)
    st.store = std::move(state);
  st.applied = img.at;
  st.digest = img.digest;
  st.appended = img.at;
  if (st.sync_in_flight && st.sync_cap > img.at)
    st.sync_cap = img.at;
  st.checkpoint_at = img.at;
  st.checkpoint_bytes = std::move(bytes);
  st.sync_wanted = true;
  ++st.snapshots_installed;
}

/// A piece of a checkpoint stream from a peer.
void on_chunk(host_impl self, snapshot_chunk& c) {
  auto& st = self->state;
  if (st.failed)
    return;
  auto drop = [&] {
    ++st.snapshot_chunks_dropped;
    st.incoming_streams.erase(c.from);
  };
  auto& members = st.opts.members;
  if (c.from == st.opts.self
      || std::find(members.begin(), members.end(), c.from) == members.end()) {
    ++st.snapshot_chunks_dropped; // not a member: keep any stream of a member
    return;
  }
  if (c.t < st.core->promised()) {
    // A primary of an older term streams a checkpoint to us: tell it our
    // term, as the core answers a stale append, or it would stream (and
    // never append) forever without learning that it is fenced.
    drop();
    st.opts.transport->deliver(c.from,
                               message{stale_term{st.opts.self, st.core->promised()}});
    return;
  }
  if (c.count == 0 || c.index >= c.count) {
    drop();
    return;
  }
  auto& in = st.incoming_streams[c.from];
  if (c.index != 0 && in.head.stream == c.stream && c.index < in.next) {
    ++st.snapshot_chunks_dropped; // a duplicate: the stream goes on
    return;
  }
  auto& h = in.head;
  if (c.index == 0) {
    in = host_state::incoming{
        snapshot_chunk{c.from, c.t, c.at, c.at_term, c.stream, c.index, c.count, {}},
        0,
        {}};
  } else if (h.stream != c.stream || in.next != c.index || h.count != c.count
             || h.t != c.t || h.at != c.at || h.at_term != c.at_term) {
    drop(); // out of order, or a piece of another stream
    return;
  }
  if (in.data.size() + c.data.size() > st.opts.max_snapshot_bytes) {
    drop();
    return;
  }
  in.data += c.data;
  ++in.next;
  if (in.next < h.count)
    return;
  auto done = std::move(in);
  st.incoming_streams.erase(c.from);
  auto img = decode_checkpoint_image(done.data);
  auto state = std::make_unique<store::store_core>(st.opts.limits);
  if (!img || img.value().at != done.head.at || img.value().at_term != done.head.at_term
      || !state->load_checkpoint(img.value().store_image)) {
    ++st.snapshot_chunks_dropped;
    return;
  }
  if (st.core->snapshot_offered(c.from, done.head.t, done.head.at, done.head.at_term,
                                host_now(self)))
    install(self, std::move(done.data), img.value(), std::move(state));
  process(self);
}

/// The replica's position for an answer to a read: applied lsn, role (a
/// primary that does not serve yet says syncing), the primary, and on a
/// secondary how far its reads are behind.
template <class Result>
void describe(host_state& st, Result& out) {
  out.applied = st.applied;
  out.replica_role = st.core->current_role();
  // A primary whose sync phase has not committed its new_primary record yet
  // may not have applied every acknowledged commit: it reads as syncing.
  if (out.replica_role == role::primary && !st.core->serving())
    out.replica_role = role::syncing;
  out.primary = st.core->primary_hint();
  if (out.replica_role == role::secondary) {
    auto known = st.core->known_primary_commit();
    out.behind =
        known > st.core->commit_lsn() ? known.value - st.core->commit_lsn().value : 0;
  }
}

/// The smallest string above every string that starts with `prefix`, or
/// nullopt when there is none (empty, or only 0xff bytes).
std::optional<std::string> prefix_end(std::string prefix) {
  while (!prefix.empty()) {
    auto last = static_cast<unsigned char>(prefix.back());
    if (last != 0xff) {
      prefix.back() = static_cast<char>(last + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::nullopt;
}

list_result list(host_state& st, const list_request& req) {
  list_result out;
  describe(st, out);
  auto kind = st.store->collection_kind_of(req.collection);
  if (!kind)
    return out;
  if (*kind != store::collection_kind::dictionary) {
    out.code = errc::wrong_kind;
    return out;
  }
  size_t limit = st.opts.max_list_items;
  if (req.limit != 0 && req.limit < limit)
    limit = req.limit;
  auto txn = st.store->begin();
  store::op_request op;
  op.txn = txn;
  op.op = store::operation::enumerate;
  op.collection = req.collection;
  op.has_from = true;
  op.from = req.prefix;
  if (!req.start_after.empty() && req.start_after >= req.prefix)
    op.from = req.start_after + std::string(1, '\0'); // the next key after it
  if (auto end = prefix_end(req.prefix)) {
    op.has_to = true;
    op.to = *end;
  }
  if (op.has_to && op.to <= op.from) {
    (void)st.store->abort(txn);
    return out;
  }
  // One item past the answer's bound tells whether there is more: the scan
  // stops there instead of copying the rest of the range (a scheduler pages
  // through a ready index of 100,000 jobs 256 at a time).
  op.limit = static_cast<uint32_t>(std::min<size_t>(limit + 1, UINT32_MAX));
  if (auto r = st.store->execute(op, timestamp::max()); r) {
    size_t bytes = 0;
    for (auto& [k, v] : r.value().items) {
      if (out.items.size() >= limit
          || (!out.items.empty()
              && bytes + k.size() + v.size() > st.opts.max_list_bytes)) {
        out.more = true;
        break;
      }
      bytes += k.size() + v.size();
      out.items.push_back(kv_item{k, v});
    }
  }
  (void)st.store->abort(txn);
  return out;
}

/// The acquires waiting in this primary's memory, listed like a dictionary
/// (lease_waiters_collection); empty on any other replica, whose answer's
/// role sends a client on to the primary.
list_result list_waiters(host_impl self, const list_request& req) {
  auto& st = self->state;
  list_result out;
  describe(st, out);
  if (!st.lease_serving || out.replica_role != role::primary)
    return out;
  size_t limit = st.opts.max_list_items;
  if (req.limit != 0 && req.limit < limit)
    limit = req.limit;
  auto now = host_now(self);
  for (auto& name : st.lease_queue.names()) {
    uint32_t place = 0;
    for (auto& w : st.lease_queue.live(name)) {
      ++place;
      auto key = waiter_key(name, place);
      if (key.compare(0, req.prefix.size(), req.prefix) != 0
          || (!req.start_after.empty() && key <= req.start_after))
        continue;
      if (out.items.size() >= limit) {
        out.more = true;
        return out;
      }
      lease_waiter row;
      if (auto i = st.lease_waits.find(w.id); i != st.lease_waits.end()) {
        row.holder = i->second.op.key;
        if (auto p = decode_params(i->second.op.value)) {
          row.label = p->label;
          row.ttl = p->ttl;
        }
      } else {
        row.holder = w.holder;
      }
      row.wait_left = std::chrono::duration_cast<std::chrono::milliseconds>(
          w.until > now ? w.until - now : timestamp{0});
      out.items.push_back(kv_item{std::move(key), encode_waiter(row)});
    }
  }
  return out;
}

caf::behavior make_host(host_impl self, replica_host_options opts) {
  auto& st = self->state;
  st.opts = std::move(opts);
  st.leases = lease_table{st.opts.lease};
  st.store = std::make_unique<store::store_core>(st.opts.limits);
  recovered_state rec;
  rec.promised = st.opts.terms->load();
  auto dev = st.opts.device->recover();
  if (!dev) {
    st.failed = true;
  } else if (!dev.value().checkpoint.empty()) {
    // The checkpoint is the applied state through its lsn; a checkpoint that
    // does not decode is never read as an empty state.
    auto img = decode_checkpoint_image(dev.value().checkpoint);
    if (!img || !st.store->load_checkpoint(img.value().store_image)) {
      st.failed = true;
    } else {
      rec.base = img.value().at;
      rec.base_term = img.value().at_term;
      st.applied = rec.base;
      st.digest = img.value().digest;
      st.checkpoint_at = rec.base;
      st.checkpoint_bytes = std::move(dev.value().checkpoint);
    }
  }
  if (dev && !st.failed) {
    for (auto& r : dev.value().records) {
      auto e = from_log_record(r);
      if (!e || e->at.value != rec.base.value + rec.entries.size() + 1) {
        st.failed = true;
        rec.entries.clear();
        break;
      }
      rec.entries.push_back(std::move(*e));
    }
  }
  if (st.failed) {
    rec.base = lsn{};
    rec.base_term = term{};
    rec.entries.clear();
    if (st.opts.on_failure)
      st.opts.on_failure("recovering the log and checkpoint");
  }
  st.appended = lsn{rec.base.value + rec.entries.size()};
  rec.amnesiac = st.opts.amnesiac;
  st.amnesia_marked = st.opts.amnesiac;
  st.core = std::make_unique<replica_core>(st.opts.self, st.opts.members, st.opts.config,
                                           std::move(rec));
  self->set_default_handler([self](caf::scheduled_actor* ptr,
                                   caf::message_view& x) -> caf::result<caf::message> {
    ++self->state.unknown_messages;
    return caf::drop(ptr, x); // a request gets unexpected_message
  });
  self->set_down_handler([](const caf::down_msg&) {});
  return {
      peer_handler<sync_request>(self),
      peer_handler<sync_reply>(self),
      peer_handler<fetch_request>(self),
      peer_handler<fetch_reply>(self),
      peer_handler<append>(self),
      peer_handler<append_reply>(self),
      peer_handler<stale_term>(self),
      [self](snapshot_chunk& c) { on_chunk(self, c); },
      [self](replication_atoms::checkpoint_atom) {
        auto at = maybe_checkpoint(self, true);
        request_sync(self);
        return at ? at->value : uint64_t{0};
      },
      [self](const become_primary_msg& m) {
        if (self->state.failed)
          return false;
        auto ok = self->state.core->become_primary(m.t, host_now(self));
        process(self);
        return ok;
      },
      [self](const leader_is_msg& m) {
        auto& st = self->state;
        if (st.failed || st.core->current_role() == role::secondary
            || m.t.leader == st.opts.self)
          return false;
        st.core->step_down(host_now(self));
        process(self);
        return true;
      },
      [self](txn_request& req) -> caf::result<txn_result> {
        auto& st = self->state;
        if (st.failed)
          return txn_result{errc::not_primary, lsn{}, no_node, {}};
        if (auto bad = check_request(req, st.opts.limits); bad != errc::ok)
          return txn_result{bad, lsn{}, st.core->primary_hint(), {}};
        auto now = host_now(self);
        // A lone acquire that may wait: FIFO behind the lease's waiters.
        std::optional<txn_op> acquire;
        timestamp until{};
        if (st.lease_serving && req.ops.size() == 1
            && req.ops[0].kind == op_kind::lease_acquire) {
          auto p = decode_params(req.ops[0].value);
          if (p && p->wait.count() > 0) {
            acquire = req.ops[0];
            until = now + std::chrono::duration_cast<timestamp>(p->wait);
            auto& name = acquire->collection;
            auto l = lease_of(st, name);
            bool mine = false;
            if (l)
              for (auto& h : l->holders)
                mine = mine || h.holder == acquire->key;
            bool full = l && l->holders.size() >= l->limit;
            if (!mine
                && (full || st.lease_queue.waiting(name) > 0
                    || st.granting.count(name))) {
              if (st.lease_queue.size() >= st.opts.max_lease_waiters)
                return busy_result(st, name);
              auto rp = self->make_response_promise<txn_result>();
              enqueue_waiter(self, rp, *acquire, until);
              try_grant(self, name);
              arm_timer(self);
              return rp;
            }
          }
        }
        if (req.ops.front().kind == op_kind::session) {
          auto wall = st.opts.session_clock_ms
                          ? st.opts.session_clock_ms()
                          : std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
          st.session_stamp = std::max(st.session_stamp, wall);
          stamp_session_op(req.ops.front(), st.session_stamp);
        }
        auto r = propose_txn(self, req.ops, req.mode);
        if (auto e = std::get_if<errc>(&r))
          return txn_result{*e, lsn{}, st.core->primary_hint(), {}};
        restart_on_receipt(st, req.ops, now);
        auto [ref, at] = std::get<0>(r);
        auto rp = self->make_response_promise<txn_result>();
        keep_waiter(st, ref, {rp, at, std::nullopt, acquire, until, false});
        process(self); // a weak commit may be acknowledged already
        return rp;
      },
      [self](replication_atoms::flush_atom) {
        auto& st = self->state;
        st.flush_pending = false;
        if (st.failed)
          return;
        st.core->flush(host_now(self));
        process(self);
      },
      [self](replication_atoms::synced_atom, bool ok, uint64_t through) {
        auto& st = self->state;
        st.sync_in_flight = false;
        if (st.failed)
          return;
        if (!ok) {
          fail(self, "a log sync failed");
          return;
        }
        lsn l{std::min({through, st.appended.value, st.sync_cap.value})};
        st.core->log_durable(l, host_now(self));
        process(self);
      },
      [self](replication_atoms::timer_atom, uint64_t gen) {
        auto& st = self->state;
        if (st.failed || !st.timer.fire(gen))
          return;
        st.core->tick(host_now(self));
        lease_tick(self, host_now(self));
        process(self);
      },
      [self](const read_request& req) {
        auto& st = self->state;
        read_result out;
        describe(st, out);
        if (auto kind = st.store->collection_kind_of(req.collection);
            kind && *kind != store::collection_kind::dictionary) {
          out.code = errc::wrong_kind;
          return out;
        }
        if (auto r = read_committed(*st.store, req.collection, req.key); r && r.value()) {
          out.found = true;
          out.value = std::move(*r.value());
        }
        return out;
      },
      [self](const list_request& req) {
        if (req.collection == lease_waiters_collection)
          return list_waiters(self, req);
        return list(self->state, req);
      },
      [self](replication_atoms::status_atom) {
        auto& st = self->state;
        replica_status s;
        s.self = st.opts.self;
        s.replica_role = st.core->current_role();
        s.promised = st.core->promised();
        s.serving = st.core->serving();
        s.commit = st.core->commit_lsn();
        s.durable = st.core->durable_lsn();
        s.last = st.core->log().last();
        s.applied = st.applied;
        auto& d = st.core->stats().dropped;
        s.dropped.assign(d.begin(), d.end());
        s.unknown_messages = st.unknown_messages;
        s.bad_payloads = st.bad_payloads;
        s.snapshots_unsupported = st.snapshots_unsupported;
        s.txns_refused = st.txns_refused;
        s.failed = st.failed;
        auto now = host_now(self);
        for (auto& l : st.core->lag()) {
          auto behind = l.records > 0 ? now - l.behind_since : duration::zero();
          s.lag.push_back(
              {l.peer, l.records, l.bytes,
               std::chrono::duration_cast<std::chrono::microseconds>(behind).count()});
        }
        s.peak_inflight_bytes = st.core->stats().peak_inflight_bytes;
        s.largest_record_bytes = st.core->stats().largest_record_bytes;
        s.digest = st.digest;
        s.syncs = st.syncs;
        s.last_sync_us = st.last_sync_us;
        s.checkpoints_written = st.checkpoints_written;
        s.checkpoint_failures = st.checkpoint_failures;
        s.checkpoint_lsn = st.checkpoint_at;
        s.snapshots_sent = st.snapshots_sent;
        s.snapshot_chunks_sent = st.snapshot_chunks_sent;
        s.snapshots_installed = st.snapshots_installed;
        s.snapshot_chunks_dropped = st.snapshot_chunks_dropped;
        s.session_duplicates = st.session_duplicates;
        s.amnesiac = st.core->amnesiac();
        return s;
      },
  };
}

} // namespace

caf::actor spawn_replica_host(caf::actor_system& sys, replica_host_options opts) {
  return sys.spawn(make_host, std::move(opts));
}

} // namespace conclave::replication
