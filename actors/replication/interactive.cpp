#include "actors/replication/interactive.hpp"

namespace conclave::replication {

// -- txn_buffer --------------------------------------------------------------------

std::optional<txn_buffer::value> txn_buffer::local(const std::string& collection,
                                                   const std::string& key) const {
  slot s{collection, key};
  if (auto i = written_.find(s); i != written_.end())
    return i->second;
  if (auto i = read_.find(s); i != read_.end())
    return i->second;
  return std::nullopt;
}

void txn_buffer::record_read(const std::string& collection, const std::string& key,
                             value v) {
  read_.emplace(slot{collection, key}, std::move(v));
}

void txn_buffer::put(const std::string& collection, const std::string& key,
                     std::string v) {
  written_[slot{collection, key}] = v;
  writes_.push_back(txn_op{collection, key, std::move(v), op_kind::put});
}

void txn_buffer::remove(const std::string& collection, const std::string& key) {
  written_[slot{collection, key}] = std::nullopt;
  writes_.push_back(txn_op{collection, key, {}, op_kind::remove});
}

void txn_buffer::enqueue(const std::string& queue, std::string v) {
  writes_.push_back(txn_op{queue, {}, std::move(v), op_kind::enqueue});
}

txn_request txn_buffer::commit_request() const {
  txn_request req;
  req.mode = commit_mode::strong;
  req.ops.reserve(read_.size() + writes_.size());
  for (auto& [s, v] : read_) {
    if (v)
      req.ops.push_back(txn_op{s.first, s.second, *v, op_kind::expect_value});
    else
      req.ops.push_back(txn_op{s.first, s.second, {}, op_kind::expect_absent});
  }
  req.ops.insert(req.ops.end(), writes_.begin(), writes_.end());
  return req;
}

// -- interactive_txn ---------------------------------------------------------------

read_result interactive_txn::get(const std::string& collection, const std::string& key) {
  read_result out;
  if (auto seen = buf_.local(collection, key)) {
    out.found = seen->has_value();
    if (out.found)
      out.value = **seen;
    out.replica_role = role::primary;
    return out;
  }
  out = kv_.get(collection, key);
  if (out.code != errc::ok) {
    if (read_failed_ == errc::ok)
      read_failed_ = out.code;
    return out;
  }
  buf_.record_read(collection, key,
                   out.found ? txn_buffer::value{out.value} : txn_buffer::value{});
  return out;
}

txn_result interactive_txn::commit() {
  if (read_failed_ != errc::ok) {
    txn_result r;
    r.code = read_failed_;
    return r;
  }
  // Nothing read, nothing written: nothing to check or apply.
  if (buf_.reads() == 0 && buf_.writes() == 0)
    return txn_result{};
  return kv_.transact(buf_.commit_request());
}

// -- run_transaction ---------------------------------------------------------------

run_result run_transaction(kv_client& kv, const std::function<bool(interactive_txn&)>& fn,
                           run_options opts) {
  run_result out;
  int limit = opts.max_attempts > 0 ? opts.max_attempts : 1;
  while (out.attempts < limit) {
    ++out.attempts;
    interactive_txn t{kv};
    if (!fn(t)) {
      out.abandoned = true;
      out.result = txn_result{};
      return out;
    }
    out.result = t.commit();
    if (out.result.code != errc::condition_failed)
      return out;
  }
  return out;
}

} // namespace conclave::replication
