#include "actors/replication/txn_apply.hpp"

#include "actors/replication/lease_state.hpp"
#include "actors/replication/record_codec.hpp"
#include "actors/replication/session_table.hpp"
#include "actors/replication/store_reads.hpp"

#include <map>
#include <optional>
#include <system_error>

namespace conclave::replication {

namespace {

bool is_queue_op(op_kind k) {
  return k == op_kind::enqueue || k == op_kind::dequeue;
}

/// The store's record frame and op headers around an encoded payload, with
/// room to spare (record_codec.hpp: the payload is one op's value).
constexpr uint64_t record_overhead = 256;

errc from_store(const std::error_code& e) {
  if (e == store::errc::too_large || e == store::errc::transaction_too_large)
    return errc::too_large;
  if (e == store::errc::unknown_collection)
    return errc::unknown_collection;
  if (e == store::errc::wrong_type)
    return errc::wrong_kind;
  return errc::bad_request;
}

} // namespace

errc check_request(const txn_request& req, const store::core_limits& limits) {
  if (req.ops.empty())
    return errc::bad_request;
  int acquires = 0;
  bool first = true;
  for (auto& op : req.ops) {
    if (static_cast<uint8_t>(op.kind) > static_cast<uint8_t>(last_op_kind))
      return errc::bad_request;
    if (op.kind == op_kind::session) {
      // First, once, well-formed, and followed by the ops it protects.
      if (!first || req.ops.size() < 2 || !decode_session_op(op))
        return errc::bad_request;
      first = false;
      continue;
    }
    first = false;
    if (op.collection.empty() || reserved_collection(op.collection))
      return errc::bad_request;
    if (is_lease_op(op.kind)) {
      // One grant per record: a token is the granting record's lsn.
      if (op.kind == op_kind::lease_acquire && ++acquires > 1)
        return errc::bad_request;
      if (auto e = check_lease_op(op); e != errc::ok)
        return e;
    }
    if (!is_queue_op(op.kind) && !is_lease_op(op.kind) && op.key.empty())
      return errc::bad_request;
    if (reads_state(op.kind) && req.mode == commit_mode::weak)
      return errc::bad_request;
    if (op.collection.size() > limits.max_name_bytes
        || op.key.size() > limits.max_key_bytes
        || op.value.size() > limits.max_value_bytes)
      return errc::too_large;
  }
  if (encode_payload(req.ops).size() + record_overhead > limits.max_record_body)
    return errc::too_large;
  return errc::ok;
}

namespace {

/// A lease op within the store transaction: reads the lease from the
/// reserved dictionary, applies the op, writes the lease back.
errc apply_lease(store::store_core& s, store::txn_id txn, const txn_op& op, lsn at,
                 op_output& o) {
  std::optional<lease> current;
  auto stored = read_key(s, txn, lease_collection, op.collection);
  if (!stored)
    return from_store(stored.error());
  if (stored.value()) {
    current = decode_lease(*stored.value());
    if (!current)
      return errc::bad_request; // cannot happen: only this code writes it
  }
  auto step = apply_lease_op(current, op, at);
  o = std::move(step.out);
  if (step.code != errc::ok || !step.changed)
    return step.code;
  if (!s.has_collection(lease_collection)) {
    auto c = s.ensure_collection(lease_collection, store::collection_kind::dictionary,
                                 "bytes", "bytes");
    if (!c)
      return from_store(c.error());
  }
  store::op_request w;
  w.txn = txn;
  w.collection = lease_collection;
  w.key = op.collection;
  if (step.after.holders.empty()) {
    w.op = store::operation::try_remove;
  } else {
    w.op = store::operation::add_or_update;
    w.value = encode_lease(step.after);
  }
  auto res = s.execute(w, store::timestamp::max());
  if (!res)
    return from_store(res.error());
  return errc::ok;
}

} // namespace

namespace {

/// A run of a transaction's ops (all of them, or all after the session op).
struct op_range {
  const txn_op* first;
  const txn_op* last;
  const txn_op* begin() const { return first; }
  const txn_op* end() const { return last; }
};

apply_outcome apply_ops(store::store_core& s, op_range ops, lsn at) {
  // Pass 1, changing nothing: each collection's kind as it will be when the
  // op runs (existing, or created by an earlier put / enqueue). Lease ops
  // touch only the reserved lease dictionary.
  std::map<std::string, bool> created_queue;
  for (auto& op : ops) {
    if (is_lease_op(op.kind))
      continue;
    std::optional<bool> queue;
    if (auto i = created_queue.find(op.collection); i != created_queue.end())
      queue = i->second;
    else if (auto kind = s.collection_kind_of(op.collection))
      queue = *kind == store::collection_kind::queue;
    if (queue && *queue != is_queue_op(op.kind))
      return {errc::wrong_kind, {}};
    if (!queue) {
      if (op.kind == op_kind::dequeue)
        return {errc::unknown_collection, {}};
      if (op.kind == op_kind::put || op.kind == op_kind::enqueue)
        created_queue.emplace(op.collection, op.kind == op_kind::enqueue);
    }
  }
  // Pass 2: one store transaction; the host's reads hold no locks, so no op
  // ever waits.
  apply_outcome out;
  auto txn = s.begin();
  auto fail = [&](errc code) {
    (void)s.abort(txn);
    out.code = code;
    return out;
  };
  for (auto& op : ops) {
    if (is_lease_op(op.kind)) {
      op_output o;
      auto code = apply_lease(s, txn, op, at, o);
      out.outputs.push_back(std::move(o));
      if (code != errc::ok)
        return fail(code);
      continue;
    }
    bool queue = is_queue_op(op.kind);
    bool exists = s.has_collection(op.collection);
    if (!exists && (op.kind == op_kind::put || op.kind == op_kind::enqueue)) {
      auto c = s.ensure_collection(op.collection,
                                   queue ? store::collection_kind::queue
                                         : store::collection_kind::dictionary,
                                   "bytes", "bytes");
      if (!c)
        return fail(from_store(c.error()));
      exists = true;
    }
    op_output o;
    if (!exists) {
      // remove / expect_* on a dictionary that does not exist: every key is
      // absent.
      o.found = op.kind == op_kind::expect_absent;
      out.outputs.push_back(std::move(o));
      if (op.kind == op_kind::expect_value)
        return fail(errc::condition_failed);
      continue;
    }
    store::op_request r;
    r.txn = txn;
    r.collection = op.collection;
    r.key = op.key;
    r.value = op.value;
    switch (op.kind) {
    case op_kind::put:
      r.op = store::operation::add_or_update;
      break;
    case op_kind::remove:
      r.op = store::operation::try_remove;
      break;
    case op_kind::enqueue:
      r.op = store::operation::enqueue;
      break;
    case op_kind::dequeue:
      r.op = store::operation::try_dequeue;
      break;
    case op_kind::expect_value:
    case op_kind::expect_absent:
      r.op = store::operation::try_get;
      r.value.clear();
      break;
    default:
      return fail(errc::bad_request); // lease ops are handled above
    }
    auto res = s.execute(r, store::timestamp::max());
    if (!res)
      return fail(from_store(res.error()));
    if (res.value().waiting)
      return fail(errc::bad_request); // cannot happen: nothing else holds locks
    o.found = res.value().found;
    if (op.kind != op_kind::put && op.kind != op_kind::enqueue)
      o.value = std::move(res.value().value);
    if (op.kind == op_kind::expect_value || op.kind == op_kind::expect_absent) {
      bool held =
          op.kind == op_kind::expect_value ? o.found && o.value == op.value : !o.found;
      o.found = held;
      out.outputs.push_back(std::move(o));
      if (!held)
        return fail(errc::condition_failed);
      continue;
    }
    out.outputs.push_back(std::move(o));
  }
  if (auto c = s.commit(txn); !c) {
    out.code = from_store(c.error());
    out.outputs.clear();
    return out;
  }
  return out;
}

/// A sessioned transaction (session_table.hpp): the ops run only for a
/// sequence number the session has not settled, and their outcome is kept.
/// outputs[0] is the session op's: found = answered from the table.
apply_outcome apply_sessioned(store::store_core& s, const std::vector<txn_op>& ops,
                              const session_call& call, lsn at,
                              const session_limits& limits) {
  auto check_txn = s.begin();
  auto check = check_session(s, check_txn, call, limits);
  (void)s.abort(check_txn);
  apply_outcome out;
  switch (check.what) {
  case session_check::verdict::duplicate:
    out.code = check.kept->code;
    out.outputs.push_back(op_output{true, {}});
    for (auto& o : check.kept->outputs)
      out.outputs.push_back(o);
    out.duplicate = true;
    out.first_at = check.kept->at;
    return out;
  case session_check::verdict::forgotten:
    out.code = errc::outcome_unknown;
    out.outputs.push_back(op_output{true, {}});
    out.duplicate = true;
    return out;
  case session_check::verdict::full:
    out.code = errc::sessions_full;
    out.outputs.push_back(op_output{});
    return out;
  case session_check::verdict::run:
    break;
  }
  out = apply_ops(s, op_range{ops.data() + 1, ops.data() + ops.size()}, at);
  auto txn = s.begin();
  auto e = record_outcome(s, txn, call, at, out.code, out.outputs, check.current, limits);
  if (e || !s.commit(txn)) {
    // Cannot happen short of a broken store; the ops' own outcome stands.
    (void)s.abort(txn);
  }
  out.outputs.insert(out.outputs.begin(), op_output{});
  return out;
}

} // namespace

apply_outcome apply_txn(store::store_core& s, const std::vector<txn_op>& ops, lsn at,
                        const session_limits& sessions) {
  if (!ops.empty() && ops.front().kind == op_kind::session) {
    if (auto call = decode_session_op(ops.front()))
      return apply_sessioned(s, ops, *call, at, sessions);
    return {errc::bad_request, {}}; // check_request refuses it first
  }
  return apply_ops(s, op_range{ops.data(), ops.data() + ops.size()}, at);
}

} // namespace conclave::replication
