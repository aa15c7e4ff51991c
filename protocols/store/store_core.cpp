#include "protocols/store/store_core.hpp"

#include "protocols/store/byte_codec.hpp"
#include "protocols/store/crc32c.hpp"

#include <algorithm>

namespace conclave::store {

namespace {

constexpr char checkpoint_magic[] = "CNCLSTATE1";
constexpr size_t checkpoint_magic_size = sizeof(checkpoint_magic) - 1;

std::string encode_seq(uint64_t seq) {
  std::string s;
  byte_writer w{s};
  w.u64(seq);
  return s;
}

std::optional<uint64_t> decode_seq(std::string_view s) {
  byte_reader r{s};
  auto x = r.u64();
  if (!r.ok() || !r.at_end())
    return std::nullopt;
  return x;
}

lock_key row_lock(collection_id c, const std::string& key) {
  return {c, lock_space::row, key};
}

lock_key queue_lock(collection_id c, lock_space s) {
  return {c, s, {}};
}

} // namespace

// -- collections --------------------------------------------------------------

std::optional<collection_info> store_core::find_collection(std::string_view name) const {
  auto i = names_.find(name);
  if (i == names_.end())
    return std::nullopt;
  return collections_.at(i->second).info;
}

std::optional<collection_kind>
store_core::collection_kind_of(std::string_view name) const {
  auto i = names_.find(name);
  if (i == names_.end())
    return std::nullopt;
  return collections_.at(i->second).info.kind;
}

result<std::optional<log_record>>
store_core::ensure_collection(const std::string& name, collection_kind kind,
                              const std::string& key_type,
                              const std::string& value_type) {
  if (name.empty())
    return errc::bad_argument;
  if (name.size() > limits_.max_name_bytes)
    return errc::too_large;
  if (kind != collection_kind::dictionary && kind != collection_kind::queue)
    return errc::bad_argument;
  if (auto i = names_.find(name); i != names_.end()) {
    auto& info = collections_.at(i->second).info;
    if (info.kind != kind || info.key_type != key_type || info.value_type != value_type)
      return errc::wrong_type;
    return std::optional<log_record>{};
  }
  log_record r;
  r.lsn = lsn{last_lsn_.value + 1};
  r.term = term_;
  r.type = record_type::create_collection;
  r.created = collection_info{next_collection_, name, kind, key_type, value_type};
  if (auto applied = apply(r); !applied)
    return applied.error();
  return std::optional<log_record>{std::move(r)};
}

std::vector<collection_info> store_core::collections() const {
  std::vector<collection_info> out;
  out.reserve(collections_.size());
  for (auto& [id, c] : collections_)
    out.push_back(c.info);
  return out;
}

// -- transactions ---------------------------------------------------------------

txn_id store_core::begin() {
  txn_id id{next_txn_++};
  txns_[id.value].snapshot = last_lsn_;
  snapshots_.insert(last_lsn_.value);
  return id;
}

result<store_core::txn_state*> store_core::find_txn(txn_id txn) {
  auto i = txns_.find(txn.value);
  if (i != txns_.end())
    return &i->second;
  if (txn.value != 0 && txn.value < next_txn_)
    return errc::transaction_finished;
  return errc::unknown_transaction;
}

result<store_core::collection*> store_core::find_for(const op_request& req) {
  auto i = names_.find(req.collection);
  if (i == names_.end())
    return errc::unknown_collection;
  auto& c = collections_.at(i->second);
  bool want_queue = is_queue_operation(req.op);
  if (want_queue != (c.info.kind == collection_kind::queue))
    return errc::wrong_type;
  return &c;
}

result<op_result> store_core::execute(const op_request& req, timestamp deadline) {
  return execute(req, deadline, nullptr);
}

result<op_result> store_core::execute_consuming(op_request& req, timestamp deadline) {
  return execute(req, deadline, &req);
}

result<op_result> store_core::execute(const op_request& req, timestamp deadline,
                                      op_request* movable) {
  auto t = find_txn(req.txn);
  if (!t)
    return t.error();
  if (locks_.is_waiting(req.txn))
    return errc::transaction_busy;
  auto c = find_for(req);
  if (!c)
    return c.error();
  if (req.key.size() > limits_.max_key_bytes || req.from.size() > limits_.max_key_bytes
      || req.to.size() > limits_.max_key_bytes)
    return errc::too_large;
  if (req.value.size() > limits_.max_value_bytes
      || req.expected.size() > limits_.max_value_bytes)
    return errc::too_large;
  auto res = is_queue_operation(req.op)
                 ? execute_queue(*t.value(), *c.value(), req, deadline)
                 : execute_dictionary(*t.value(), *c.value(), req, deadline, movable);
  // What it saw is at most everything applied so far (a failure such as
  // key_exists tells something about the state too).
  if (!res || !res.value().waiting)
    t.value()->observed = last_lsn_;
  return res;
}

lsn store_core::observed_through(txn_id txn) const {
  auto i = txns_.find(txn.value);
  return i == txns_.end() ? lsn{} : i->second.observed;
}

result<op_result> store_core::execute_dictionary(txn_state& t, collection& c,
                                                 const op_request& req,
                                                 timestamp deadline,
                                                 op_request* movable) {
  op_result out;
  auto id = c.info.id;
  auto own_key = std::make_pair(id, std::string_view{req.key});
  auto own = t.writes.lower_bound(own_key); // also the hint of a new write
  bool has_own =
      own != t.writes.end() && own->first.first == id && own->first.second == req.key;
  // The latest committed value of the key (writers hold an exclusive lock, so
  // nothing can commit over it until this transaction ends).
  auto latest = [&]() -> std::optional<version> {
    auto r = c.rows.find(req.key);
    if (r == c.rows.end() || r->second.empty())
      return std::nullopt;
    return r->second.back();
  };
  // The value this transaction would read right now with an exclusive lock
  // (none: absent); valid until write().
  auto current = [&]() -> std::optional<std::string_view> {
    if (has_own)
      return own->second ? std::optional<std::string_view>{*own->second} : std::nullopt;
    if (auto v = latest(); v && v->present)
      return v->value;
    return std::nullopt;
  };
  auto lock = [&](lock_mode mode) {
    return locks_.acquire(req.txn, row_lock(id, req.key), mode, deadline)
           == acquire_result::granted;
  };
  auto write = [&](std::optional<std::string> value) {
    if (has_own)
      own->second = std::move(value);
    else
      own = t.writes.emplace_hint(
          own, std::make_pair(id, movable ? std::move(movable->key) : req.key),
          std::move(value));
    has_own = true;
  };
  // The request's value, moved when the caller lets it go.
  auto new_value = [&]() -> std::string {
    return movable ? std::move(movable->value) : req.value;
  };
  switch (req.op) {
  case operation::try_get:
  case operation::contains: {
    std::optional<std::string> seen;
    if (has_own) {
      seen = own->second;
    } else if (req.mode == read_mode::snapshot) {
      auto r = c.rows.find(req.key);
      if (r != c.rows.end())
        if (auto v = r->second.at_snapshot(t.snapshot); v && v->present)
          seen = std::string{v->value};
    } else {
      if (!lock(req.mode == read_mode::update ? lock_mode::update : lock_mode::shared)) {
        out.waiting = true;
        return out;
      }
      if (auto v = latest(); v && v->present)
        seen = std::string{v->value};
    }
    out.found = seen.has_value();
    if (seen && req.op == operation::try_get)
      out.value = std::move(*seen);
    return out;
  }
  case operation::add:
  case operation::add_or_update:
  case operation::try_update:
  case operation::try_remove: {
    if (!lock(lock_mode::exclusive)) {
      out.waiting = true;
      return out;
    }
    auto now = current();
    if (req.op == operation::add) {
      if (now)
        return errc::key_exists;
      write(new_value());
      out.found = true;
    } else if (req.op == operation::add_or_update) {
      out.found = now.has_value();
      write(new_value());
    } else if (req.op == operation::try_update) {
      if (now && *now == req.expected) {
        write(new_value());
        out.found = true;
      }
    } else if (now) {
      out.found = true;
      out.value = std::string{*now};
      write(std::nullopt);
    }
    return out;
  }
  case operation::count:
  case operation::enumerate: {
    if (req.has_from && req.has_to && req.to < req.from)
      return errc::bad_argument;
    auto in_range = [&](const std::string& k) {
      return (!req.has_from || k >= req.from) && (!req.has_to || k < req.to);
    };
    // Snapshot state merged with this transaction's own writes, in key
    // order: two cursors, so the cost is the rows passed, not the range
    // (enumerate stops after `limit` items).
    auto r = req.has_from ? c.rows.lower_bound(req.from) : c.rows.begin();
    auto w = t.writes.lower_bound(std::make_pair(
        id, req.has_from ? std::string_view{req.from} : std::string_view{}));
    auto row_in = [&] { return r != c.rows.end() && in_range(r->first); };
    auto own_in = [&] {
      return w != t.writes.end() && w->first.first == id && in_range(w->first.second);
    };
    bool listing = req.op == operation::enumerate;
    auto horizon = min_snapshot();
    uint64_t limit = listing && req.limit > 0 ? req.limit : UINT64_MAX;
    uint64_t n = 0;
    auto take = [&](const std::string& k, std::string_view v) {
      ++n;
      if (listing)
        out.items.emplace_back(k, std::string{v});
    };
    while (n < limit) {
      bool has_row = row_in();
      bool has_own = own_in();
      if (!has_row && !has_own)
        break;
      if (has_own && (!has_row || w->first.second <= r->first)) {
        if (has_row && w->first.second == r->first)
          ++r; // the own write shadows the committed row
        if (w->second)
          take(w->first.second, *w->second);
        ++w;
        continue;
      }
      if (auto v = r->second.at_snapshot(t.snapshot); v && v->present) {
        take(r->first, v->value);
        ++r;
        continue;
      }
      // A row this snapshot cannot see: a tombstone (or older versions) that
      // a commit could not prune because an older snapshot was open then.
      // Prune it now that it is passed anyway (what collect_garbage would
      // do later), so the next scan over this range does not walk it again.
      auto next = std::next(r);
      if (!r->second.empty())
        prune_row(c, r, horizon);
      r = next;
    }
    out.count = n;
    return out;
  }
  default:
    return errc::bad_argument;
  }
}

result<op_result> store_core::execute_queue(txn_state& t, collection& c,
                                            const op_request& req, timestamp deadline) {
  op_result out;
  auto id = c.info.id;
  auto lock = [&](lock_space s) {
    return locks_.acquire(req.txn, queue_lock(id, s), lock_mode::exclusive, deadline)
           == acquire_result::granted;
  };
  switch (req.op) {
  case operation::enqueue:
    if (!lock(lock_space::enqueue)) {
      out.waiting = true;
      return out;
    }
    t.queues[id].enqueued.push_back(req.value);
    out.found = true;
    return out;
  case operation::try_dequeue:
  case operation::try_peek: {
    if (!lock(lock_space::dequeue)) {
      out.waiting = true;
      return out;
    }
    // Committed items still in the queue, minus the ones this transaction
    // took already (the run from the head), then its own enqueues.
    auto& pending = t.queues[id];
    if (auto* head = item_at(c, c.head_seq + pending.taken)) {
      out.found = true;
      out.value = head->value;
      if (req.op == operation::try_dequeue)
        ++pending.taken;
      return out;
    }
    if (!pending.enqueued.empty()) {
      out.found = true;
      out.value = pending.enqueued.front();
      if (req.op == operation::try_dequeue)
        pending.enqueued.pop_front();
      return out;
    }
    // Empty: hold the enqueue lock too, so nothing can be enqueued ahead of
    // what this transaction saw (FIFO across transactions).
    if (!lock(lock_space::enqueue)) {
      out.waiting = true;
      return out;
    }
    return out;
  }
  case operation::queue_count: {
    // Both lsns grow with the sequence number (enqueues and dequeues commit
    // in queue order; items not dequeued, dequeued == 0, are at the end), so
    // the items of the snapshot are [dequeued by it, enqueued by it).
    auto snap = t.snapshot;
    auto enqueued_by =
        std::partition_point(c.items.begin(), c.items.end(),
                             [snap](const queue_item& x) { return x.enqueued <= snap; });
    auto dequeued_by =
        std::partition_point(c.items.begin(), enqueued_by, [snap](const queue_item& x) {
          return x.dequeued.value != 0 && x.dequeued <= snap;
        });
    uint64_t n = static_cast<uint64_t>(enqueued_by - dequeued_by);
    if (auto p = t.queues.find(id); p != t.queues.end()) {
      n += p->second.enqueued.size();
      n -= std::min<uint64_t>(n, p->second.taken);
    }
    out.count = n;
    return out;
  }
  default:
    return errc::bad_argument;
  }
}

result<log_record> store_core::commit(txn_id txn) {
  auto t = find_txn(txn);
  if (!t)
    return t.error();
  if (locks_.is_waiting(txn))
    return errc::transaction_busy;
  // The log could not read back a larger record: refuse before anything moves.
  // A transaction that changed nothing writes no record, so no limit applies.
  uint64_t body = commit_body_size(0);
  bool writes = !t.value()->writes.empty();
  for (auto& [where, value] : t.value()->writes)
    body += op_size(where.second.size(), value ? value->size() : 0);
  for (auto& [id, q] : t.value()->queues) {
    body += q.taken * op_size(8, 0);
    for (auto& v : q.enqueued)
      body += op_size(0, v.size());
    writes = writes || q.taken > 0 || !q.enqueued.empty();
  }
  if (writes && body > std::min<uint64_t>(limits_.max_record_body, max_record_body))
    return errc::transaction_too_large;
  log_record r;
  r.term = term_;
  r.txn = txn;
  r.ops.reserve(t.value()->writes.size());
  for (auto& [where, value] : t.value()->writes) {
    log_op op;
    op.kind = value ? op_kind::put : op_kind::remove;
    op.collection = where.first;
    op.key = where.second;
    if (value)
      op.value = std::move(*value);
    r.ops.push_back(std::move(op));
  }
  for (auto& [id, q] : t.value()->queues) {
    auto head = collections_.at(id).head_seq;
    for (uint64_t i = 0; i < q.taken; ++i)
      r.ops.push_back(log_op{op_kind::dequeue, id, encode_seq(head + i), {}});
    for (auto& v : q.enqueued)
      r.ops.push_back(log_op{op_kind::enqueue, id, {}, std::move(v)});
  }
  touched_.clear();
  if (!r.ops.empty()) {
    r.lsn = lsn{last_lsn_.value + 1};
    if (auto applied = apply_record(r); !applied) {
      // Cannot happen for records built here; keep the state untouched.
      return applied.error();
    }
  }
  finish(txn);
  // Prune what this record wrote at once (through the rows apply_ops found:
  // no second lookup); a row an older snapshot still needs is listed for
  // collect_garbage().
  auto horizon = min_snapshot();
  for (auto& t : touched_) {
    auto key = &t.row->first;
    if (prune_row(*t.c, t.row, horizon))
      list_garbage(t.c->info.id, *key);
  }
  touched_.clear();
  std::set<collection_id> queues;
  for (auto& op : r.ops) {
    if (op.kind == op_kind::put || op.kind == op_kind::remove)
      continue;
    auto c = collections_.find(op.collection);
    if (c != collections_.end() && queues.insert(op.collection).second)
      prune_queue(c->second, horizon);
  }
  return r;
}

result<void> store_core::abort(txn_id txn) {
  auto t = find_txn(txn);
  if (!t)
    return t.error();
  finish(txn);
  return outcome::success();
}

void store_core::finish(txn_id txn) {
  auto i = txns_.find(txn.value);
  if (i == txns_.end())
    return;
  if (auto s = snapshots_.find(i->second.snapshot.value); s != snapshots_.end())
    snapshots_.erase(s);
  txns_.erase(i);
  locks_.release_all(txn);
}

// -- log and checkpoints --------------------------------------------------------

result<void> store_core::apply(const log_record& r) {
  touched_.clear();
  auto applied = apply_record(r);
  // Replayed writes are not pruned here (a follower's readers may hold
  // snapshots): the rows left with old versions wait for collect_garbage().
  for (auto& t : touched_) {
    auto& vs = t.row->second;
    if (vs.size() > 1 || !vs.back().present)
      list_garbage(t.c->info.id, t.row->first);
  }
  touched_.clear();
  return applied;
}

result<void> store_core::apply_record(const log_record& r) {
  if (r.lsn.value != last_lsn_.value + 1)
    return errc::corrupt_data;
  if (r.type == record_type::create_collection) {
    auto& info = r.created;
    if (info.name.empty() || names_.count(info.name) > 0
        || collections_.count(info.id) > 0)
      return errc::corrupt_data;
    collection c;
    c.info = info;
    collections_.emplace(info.id, std::move(c));
    names_.emplace(info.name, info.id);
    next_collection_ = std::max(next_collection_, info.id + 1);
  } else if (r.type == record_type::commit) {
    // Validate everything first: a bad record changes nothing.
    std::map<collection_id, uint64_t> next_head;
    for (auto& op : r.ops) {
      auto c = collections_.find(op.collection);
      if (c == collections_.end())
        return errc::corrupt_data;
      bool queue = c->second.info.kind == collection_kind::queue;
      bool queue_op = op.kind == op_kind::enqueue || op.kind == op_kind::dequeue;
      if (queue != queue_op)
        return errc::corrupt_data;
      if (op.kind == op_kind::dequeue) {
        auto seq = decode_seq(op.key);
        auto [h, fresh] = next_head.emplace(op.collection, c->second.head_seq);
        if (!seq || *seq != h->second || *seq >= c->second.next_seq)
          return errc::corrupt_data;
        ++h->second;
      }
    }
    apply_ops(r);
  } else {
    return errc::corrupt_data;
  }
  last_lsn_ = r.lsn;
  if (r.term > term_)
    term_ = r.term;
  return outcome::success();
}

void store_core::apply_ops(const log_record& r) {
  for (auto& op : r.ops) {
    auto& c = collections_.at(op.collection);
    switch (op.kind) {
    case op_kind::put:
    case op_kind::remove: {
      auto row = c.rows.try_emplace(op.key).first;
      if (op.kind == op_kind::put)
        row->second.push_back(r.lsn, true, op.value);
      else
        row->second.push_back(r.lsn, false, {});
      touched_.push_back(touched_row{&c, row});
      break;
    }
    case op_kind::enqueue:
      c.items.push_back(queue_item{c.next_seq++, r.lsn, lsn{}, op.value});
      break;
    case op_kind::dequeue: {
      // Items are dequeued strictly from the head (checked in apply()).
      if (auto* item = item_at(c, c.head_seq++))
        item->dequeued = r.lsn;
      break;
    }
    }
  }
}

store_core::queue_item* store_core::item_at(collection& c, uint64_t seq) {
  if (c.items.empty() || seq < c.items.front().seq)
    return nullptr;
  auto at = seq - c.items.front().seq;
  if (at >= c.items.size())
    return nullptr;
  return &c.items[static_cast<size_t>(at)];
}

lsn store_core::min_snapshot() const {
  if (snapshots_.empty())
    return last_lsn_;
  return lsn{*snapshots_.begin()};
}

void store_core::prune_row(collection& c, const std::string& key, lsn horizon) {
  auto r = c.rows.find(key);
  if (r != c.rows.end())
    prune_row(c, r, horizon);
}

bool store_core::prune_row(collection& c, row_map::iterator r, lsn horizon) {
  auto& vs = r->second;
  // Keep the newest version at or below the horizon (what the oldest snapshot
  // sees) and everything newer.
  size_t keep_from = 0;
  for (size_t i = 0; i < vs.size(); ++i)
    if (vs[i].at <= horizon)
      keep_from = i;
  if (keep_from > 0)
    vs.drop_oldest(keep_from);
  if (vs.size() == 1 && !vs.back().present && vs.back().at <= horizon) {
    c.rows.erase(r);
    return false;
  }
  return vs.size() > 1 || !vs.back().present;
}

void store_core::list_garbage(collection_id c, const std::string& key) {
  if (garbage_overflow_)
    return;
  if (garbage_.size() >= garbage_list_cap) {
    garbage_overflow_ = true;
    garbage_.clear();
    garbage_.shrink_to_fit();
    return;
  }
  garbage_.emplace_back(c, key);
}

void store_core::prune_queue(collection& c, lsn horizon) {
  while (!c.items.empty() && c.items.front().dequeued.value != 0
         && c.items.front().dequeued <= horizon)
    c.items.pop_front();
}

void store_core::collect_garbage() {
  auto horizon = min_snapshot();
  for (auto& [id, c] : collections_)
    if (c.info.kind == collection_kind::queue)
      prune_queue(c, horizon);
  if (garbage_overflow_) {
    garbage_overflow_ = false;
    return collect_all_garbage(horizon);
  }
  // The listed rows only; those a snapshot still needs stay listed. A key
  // may be listed twice, or be gone already: pruning is idempotent.
  auto listed = std::move(garbage_);
  garbage_.clear();
  for (auto& [id, key] : listed) {
    auto c = collections_.find(id);
    if (c == collections_.end())
      continue;
    auto r = c->second.rows.find(key);
    if (r != c->second.rows.end() && prune_row(c->second, r, horizon))
      list_garbage(id, key);
  }
}

size_t store_core::versions_held() const {
  size_t n = 0;
  for (auto& [id, c] : collections_)
    for (auto& [k, vs] : c.rows)
      n += vs.size();
  return n;
}

void store_core::collect_all_garbage(lsn horizon) {
  garbage_.clear();
  for (auto& [id, c] : collections_) {
    if (c.info.kind == collection_kind::queue)
      continue;
    for (auto r = c.rows.begin(); r != c.rows.end();) {
      auto next = std::next(r);
      auto& vs = r->second;
      if ((vs.size() > 1 || !vs.back().present) && prune_row(c, r, horizon))
        list_garbage(id, r->first);
      r = next;
    }
  }
}

// Checkpoint image (little endian):
//   magic "CNCLSTATE1", u64 lsn, u64 term, u32 next collection id,
//   u32 n, n x collection:
//     u32 id, bytes name, u8 kind, bytes key_type, bytes value_type,
//     dictionary: u64 n, n x (bytes key, bytes value), ordered by key
//     queue:      u64 head_seq, u64 n, n x bytes value (head first)
//   u32 crc32c of everything before it.
std::string store_core::encode_checkpoint() const {
  std::string out;
  byte_writer w{out};
  out.append(checkpoint_magic, checkpoint_magic_size);
  w.u64(last_lsn_.value);
  w.u64(term_.value);
  w.u32(next_collection_);
  w.u32(static_cast<uint32_t>(collections_.size()));
  for (auto& [id, c] : collections_) {
    w.u32(id);
    w.bytes(c.info.name);
    w.u8(static_cast<uint8_t>(c.info.kind));
    w.bytes(c.info.key_type);
    w.bytes(c.info.value_type);
    if (c.info.kind == collection_kind::dictionary) {
      uint64_t n = 0;
      for (auto& [k, vs] : c.rows)
        if (!vs.empty() && vs.back().present)
          ++n;
      w.u64(n);
      for (auto& [k, vs] : c.rows)
        if (!vs.empty() && vs.back().present) {
          w.bytes(k);
          w.bytes(vs.back().value);
        }
    } else {
      w.u64(c.head_seq);
      uint64_t n = 0;
      for (auto& item : c.items)
        if (item.dequeued.value == 0)
          ++n;
      w.u64(n);
      for (auto& item : c.items)
        if (item.dequeued.value == 0)
          w.bytes(item.value);
    }
  }
  w.u32(crc32c(out));
  return out;
}

store_core::checkpoint_encoder store_core::begin_checkpoint() {
  checkpoint_encoder e;
  e.at_ = last_lsn_;
  snapshots_.insert(e.at_.value);
  e.registered_ = true;
  auto& out = e.pieces_.emplace_back();
  byte_writer w{out};
  out.append(checkpoint_magic, checkpoint_magic_size);
  w.u64(last_lsn_.value);
  w.u64(term_.value);
  w.u32(next_collection_);
  w.u32(static_cast<uint32_t>(collections_.size()));
  for (auto& [id, c] : collections_) {
    e.ids_.push_back(id);
    if (c.info.kind == collection_kind::queue)
      e.queue_bounds_[id] = {c.head_seq, c.next_seq};
  }
  return e;
}

bool store_core::encode_step(checkpoint_encoder& e, size_t max_items, size_t max_bytes) {
  auto& out = e.pieces_.emplace_back();
  byte_writer w{out};
  auto horizon = min_snapshot();
  size_t budget = std::max<size_t>(max_items, 1);
  auto more = [&] { return budget > 0 && out.size() < max_bytes; };
  while (e.index_ < e.ids_.size() && more()) {
    auto id = e.ids_[e.index_];
    auto& c = collections_.at(id); // collections are never dropped
    bool dictionary = c.info.kind == collection_kind::dictionary;
    if (!e.in_collection_) {
      w.u32(id);
      w.bytes(c.info.name);
      w.u8(static_cast<uint8_t>(c.info.kind));
      w.bytes(c.info.key_type);
      w.bytes(c.info.value_type);
      if (dictionary) {
        e.count_piece_ = e.pieces_.size() - 1;
        e.count_offset_ = out.size();
        w.u64(0); // patched when the collection is done
        e.count_ = 0;
        e.has_last_ = false;
      } else {
        auto [head, next] = e.queue_bounds_.at(id);
        w.u64(head);
        w.u64(next - head);
        e.next_seq_ = head;
      }
      e.in_collection_ = true;
    }
    bool finished = false;
    if (dictionary) {
      // Rows are looked up again after each step: others may have been added
      // or pruned meanwhile; the version visible at `at` is always kept.
      auto r = e.has_last_ ? c.rows.upper_bound(e.last_key_) : c.rows.begin();
      while (r != c.rows.end() && more()) {
        if (auto v = r->second.at_snapshot(e.at_); v && v->present) {
          w.bytes(r->first);
          w.bytes(v->value);
          ++e.count_;
        }
        e.last_key_ = r->first;
        e.has_last_ = true;
        --budget;
        auto& vs = r->second;
        bool prunable = vs.size() > 1 || !vs.back().present;
        ++r;
        if (prunable)
          prune_row(c, e.last_key_, horizon); // may erase that row, not r
      }
      finished = r == c.rows.end();
      if (finished) {
        std::string count;
        byte_writer{count}.u64(e.count_);
        e.pieces_[e.count_piece_].replace(e.count_offset_, count.size(), count);
      }
    } else {
      auto next = e.queue_bounds_.at(id).second;
      for (; e.next_seq_ < next && more(); ++e.next_seq_, --budget)
        if (auto* item = item_at(c, e.next_seq_))
          w.bytes(item->value); // always there: kept for the snapshot
      finished = e.next_seq_ == next;
      if (finished)
        prune_queue(c, horizon);
    }
    if (finished) {
      e.in_collection_ = false;
      ++e.index_;
    }
  }
  return e.index_ == e.ids_.size();
}

void store_core::end_checkpoint(checkpoint_encoder& e) {
  if (!e.registered_)
    return;
  e.registered_ = false;
  if (auto s = snapshots_.find(e.at_.value); s != snapshots_.end())
    snapshots_.erase(s);
}

std::string store_core::checkpoint_encoder::take_image() {
  size_t size = 4;
  for (auto& p : pieces_)
    size += p.size();
  std::string image;
  image.reserve(size);
  for (auto& p : pieces_) {
    image += p;
    std::string{}.swap(p); // give the memory back as we go
  }
  pieces_.clear();
  byte_writer{image}.u32(crc32c(image));
  return image;
}

result<void> store_core::load_checkpoint(std::string_view image) {
  if (!txns_.empty())
    return errc::bad_argument;
  if (image.size() < checkpoint_magic_size + 4
      || image.substr(0, checkpoint_magic_size)
             != std::string_view{checkpoint_magic, checkpoint_magic_size})
    return errc::corrupt_data;
  auto body = image.substr(0, image.size() - 4);
  byte_reader tail{image.substr(image.size() - 4)};
  if (crc32c(body) != tail.u32())
    return errc::corrupt_data;
  byte_reader r{body.substr(checkpoint_magic_size)};
  std::map<collection_id, collection> loaded;
  std::map<std::string, collection_id, std::less<>> names;
  lsn at{r.u64()};
  store::term t{r.u64()};
  auto next_id = r.u32();
  auto n = r.u32();
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    collection c;
    c.info.id = r.u32();
    c.info.name = r.bytes();
    c.info.kind = static_cast<collection_kind>(r.u8());
    c.info.key_type = r.bytes();
    c.info.value_type = r.bytes();
    if (c.info.kind == collection_kind::dictionary) {
      auto items = r.u64();
      for (uint64_t k = 0; k < items && r.ok(); ++k) {
        auto key = r.bytes();
        auto value = r.bytes();
        c.rows[std::move(key)].push_back(at, true, value);
      }
    } else if (c.info.kind == collection_kind::queue) {
      c.head_seq = r.u64();
      c.next_seq = c.head_seq;
      auto items = r.u64();
      for (uint64_t k = 0; k < items && r.ok(); ++k)
        c.items.push_back(queue_item{c.next_seq++, at, lsn{}, r.bytes()});
    } else {
      return errc::corrupt_data;
    }
    if (!r.ok() || c.info.name.empty() || loaded.count(c.info.id) > 0
        || names.count(c.info.name) > 0 || c.info.id >= next_id)
      return errc::corrupt_data;
    names.emplace(c.info.name, c.info.id);
    loaded.emplace(c.info.id, std::move(c));
  }
  if (!r.ok() || !r.at_end())
    return errc::corrupt_data;
  collections_ = std::move(loaded);
  garbage_.clear();
  garbage_overflow_ = false;
  names_ = std::move(names);
  next_collection_ = next_id;
  last_lsn_ = at;
  term_ = t;
  return outcome::success();
}

} // namespace conclave::store
