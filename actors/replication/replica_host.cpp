#include "actors/replication/replica_host.hpp"

#include "actors/replication/checkpoint_image.hpp"
#include "actors/replication/record_codec.hpp"
#include "actors/replication/txn_apply.hpp"
#include "actors/timer/deadline_timer.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include <algorithm>
#include <limits>

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
  };
  std::map<uint64_t, waiter> waiting;
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
  static inline const char* name = "conclave.replica_host";
};

using host_impl = caf::stateful_actor<host_state>*;

/// The device or term file failed: answer every waiting client and accept
/// nothing more (a replica that cannot keep its promises must not answer).
void fail(host_impl self) {
  auto& st = self->state;
  if (st.failed)
    return;
  st.failed = true;
  for (auto& [id, w] : st.waiting)
    w.promise.deliver(txn_result{errc::primary_changed, lsn{}, no_node, {}});
  st.waiting.clear();
  st.waiting_at.clear();
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

/// Applies one committed transaction record to the store core
/// (txn_apply.hpp: every replica computes the same outcome) and keeps the
/// outcome for the client waiting for it here.
void apply_entry(host_state& st, const entry& e) {
  if (e.kind != entry_kind::transaction)
    return;
  auto ops = decode_payload(e.payload);
  if (!ops) {
    ++st.bad_payloads;
    return;
  }
  auto outcome = apply_txn(*st.store, *ops);
  if (outcome.code != errc::ok)
    ++st.txns_refused;
  else
    count_garbage(st, *ops, outcome);
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
  self->state.timer.arm(self, self->state.core->next_deadline(),
                        replication_atoms::timer_atom_v);
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
            if (!st.opts.terms->save(x.t))
              fail(self);
          } else if constexpr (std::is_same_v<T, append_records>) {
            for (auto& e : x.entries) {
              if (!st.opts.device->append(to_log_record(e))) {
                fail(self);
                return;
              }
              st.appended = e.at;
            }
          } else if constexpr (std::is_same_v<T, truncate_after>) {
            if (!st.opts.device->truncate_after(x.after)) {
              fail(self);
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
                apply_entry(st, e);
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
              }
              answer(st, w, std::move(r));
            }
          } else if constexpr (std::is_same_v<T, txn_failed>) {
            if (auto w = st.waiting.find(x.txn.value); w != st.waiting.end())
              answer(st, w, txn_result{x.reason, lsn{}, x.primary_hint, {}});
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
    self->state.core->handle(message{std::move(m)}, now_of(self));
    process(self);
  };
}

/// Installs a checkpoint the core took from a peer: durably on the device
/// first (the core's acknowledgement goes out after this), then as the
/// readable state.
void install(host_impl self, std::string bytes, const checkpoint_image& img,
             std::unique_ptr<store::store_core> state) {
  auto& st = self->state;
  if (!st.opts.device->install_snapshot(bytes, img.at)) {
    fail(self);
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
  if (c.t < st.core->promised() || c.count == 0 || c.index >= c.count) {
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
                                now_of(self)))
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
  auto c = st.store->find_collection(req.collection);
  if (!c)
    return out;
  if (c->kind != store::collection_kind::dictionary) {
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

caf::behavior make_host(host_impl self, replica_host_options opts) {
  auto& st = self->state;
  st.opts = std::move(opts);
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
  }
  st.appended = lsn{rec.base.value + rec.entries.size()};
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
        auto ok = self->state.core->become_primary(m.t, now_of(self));
        process(self);
        return ok;
      },
      [self](const leader_is_msg& m) {
        auto& st = self->state;
        if (st.failed || st.core->current_role() == role::secondary
            || m.t.leader == st.opts.self)
          return false;
        st.core->step_down(now_of(self));
        process(self);
        return true;
      },
      [self](txn_request& req) -> caf::result<txn_result> {
        auto& st = self->state;
        if (st.failed)
          return txn_result{errc::not_primary, lsn{}, no_node, {}};
        if (auto bad = check_request(req, st.opts.limits); bad != errc::ok)
          return txn_result{bad, lsn{}, st.core->primary_hint(), {}};
        auto ref = txn_ref{st.next_txn++};
        auto r = st.core->propose(ref, encode_payload(req.ops), req.mode, now_of(self));
        if (auto e = std::get_if<errc>(&r))
          return txn_result{*e, lsn{}, st.core->primary_hint(), {}};
        auto at = std::get<lsn>(r);
        auto rp = self->make_response_promise<txn_result>();
        st.waiting.emplace(ref.value, host_state::waiter{rp, at, std::nullopt});
        st.waiting_at.emplace(at.value, ref.value);
        process(self); // a weak commit may be acknowledged already
        if (!st.flush_pending) {
          st.flush_pending = true;
          self->send(self, replication_atoms::flush_atom_v);
        }
        return rp;
      },
      [self](replication_atoms::flush_atom) {
        auto& st = self->state;
        st.flush_pending = false;
        if (st.failed)
          return;
        st.core->flush(now_of(self));
        process(self);
      },
      [self](replication_atoms::synced_atom, bool ok, uint64_t through) {
        auto& st = self->state;
        st.sync_in_flight = false;
        if (st.failed)
          return;
        if (!ok) {
          fail(self);
          return;
        }
        lsn l{std::min({through, st.appended.value, st.sync_cap.value})};
        st.core->log_durable(l, now_of(self));
        process(self);
      },
      [self](replication_atoms::timer_atom, uint64_t gen) {
        auto& st = self->state;
        if (st.failed || !st.timer.fire(gen))
          return;
        st.core->tick(now_of(self));
        process(self);
      },
      [self](const read_request& req) {
        auto& st = self->state;
        read_result out;
        describe(st, out);
        if (auto c = st.store->find_collection(req.collection);
            c && c->kind != store::collection_kind::dictionary) {
          out.code = errc::wrong_kind;
          return out;
        }
        auto txn = st.store->begin();
        store::op_request op;
        op.txn = txn;
        op.op = store::operation::try_get;
        op.collection = req.collection;
        op.key = req.key;
        op.mode = store::read_mode::snapshot;
        if (auto r = st.store->execute(op, timestamp::max()); r) {
          out.found = r.value().found;
          out.value = std::move(r.value().value);
        }
        (void)st.store->abort(txn);
        return out;
      },
      [self](const list_request& req) { return list(self->state, req); },
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
        auto now = now_of(self);
        for (auto& l : st.core->lag()) {
          auto behind = l.records > 0 ? now - l.behind_since : duration::zero();
          s.lag.push_back(
              {l.peer, l.records, l.bytes,
               std::chrono::duration_cast<std::chrono::microseconds>(behind).count()});
        }
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
        return s;
      },
  };
}

} // namespace

caf::actor spawn_replica_host(caf::actor_system& sys, replica_host_options opts) {
  return sys.spawn(make_host, std::move(opts));
}

} // namespace conclave::replication
