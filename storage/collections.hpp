// Typed front-end of the store for threads: transactions, reliable
// dictionaries and reliable queues (Service Fabric's IReliableDictionary and
// IReliableQueue, in C++). Every call blocks the calling thread until its locks
// are granted (or the timeout passes) and returns result<...>; actors use
// store_actor (actors/store) instead, which never blocks a worker.
//
//   auto store = state_manager::open({.dir = "data"}).value();
//   auto orders = store->dictionary<std::string, order>("orders").value();
//   auto tx = store->begin();
//   auto got = orders.try_get(tx, "o-17");            // result<conditional_value<order>>
//   if (got && got.value()) orders.add_or_update(tx, "o-17", updated);
//   tx.commit();                                       // durable when it returns
//
// A transaction handle that goes out of scope unfinished aborts. Calls on a
// finished transaction fail with errc::transaction_finished.
#pragma once

#include "storage/codec.hpp"
#include "storage/state_manager.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace conclave::store {

/// Marks "use the store's default lock timeout".
constexpr std::chrono::milliseconds default_timeout_marker{-1};

/// A found flag and, when found, the value (Service Fabric's ConditionalValue).
template <class V>
struct conditional_value {
  bool has_value = false;
  V value{};

  explicit operator bool() const { return has_value; }
};

class transaction {
public:
  transaction() = default;
  transaction(state_manager* store, result<txn_id> id)
      : store_(store), id_(id ? id.value() : txn_id{}),
        error_(id ? std::error_code{} : id.error()) {}
  transaction(transaction&& other) noexcept { *this = std::move(other); }
  transaction& operator=(transaction&& other) noexcept {
    if (this != &other) {
      drop();
      store_ = std::exchange(other.store_, nullptr);
      id_ = std::exchange(other.id_, txn_id{});
      error_ = other.error_;
      finished_ = std::exchange(other.finished_, true);
    }
    return *this;
  }
  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;
  ~transaction() { drop(); }

  txn_id id() const { return id_; }
  /// False if begin() failed (see error()) or after commit/abort.
  bool active() const { return store_ && id_.value != 0 && !finished_; }
  std::error_code error() const { return error_; }

  /// Commits; in strong mode returns once the changes are durable.
  result<lsn> commit() {
    if (auto r = usable(); !r)
      return r.error();
    auto r = store_->commit(id_);
    // busy and too large leave the transaction open (with its locks): it must
    // still be aborted, by abort() or by the destructor.
    auto why = r ? errc{} : static_cast<errc>(r.error().value());
    if (r || (why != errc::transaction_busy && why != errc::transaction_too_large))
      finished_ = true;
    return r;
  }

  result<void> abort() {
    if (auto r = usable(); !r)
      return r.error();
    finished_ = true;
    return store_->abort(id_);
  }

  /// Runs a raw operation (collections use this).
  result<op_result> run(op_request req, std::chrono::milliseconds timeout) {
    if (auto r = usable(); !r)
      return r.error();
    req.txn = id_;
    return store_->execute(req, timeout);
  }

private:
  result<void> usable() const {
    if (!store_)
      return errc::unknown_transaction;
    if (error_)
      return error_;
    if (finished_)
      return errc::transaction_finished;
    return outcome::success();
  }
  void drop() {
    if (active())
      (void)store_->abort(id_);
    finished_ = true;
  }

  state_manager* store_ = nullptr;
  txn_id id_;
  std::error_code error_;
  bool finished_ = false;
};

namespace detail {

inline op_request make_request(operation op, const std::string& collection) {
  op_request r;
  r.op = op;
  r.collection = collection;
  return r;
}

/// The found flag and decoded value of an operation's result.
template <class V>
result<conditional_value<V>> found_value(result<op_result> r) {
  if (!r)
    return r.error();
  conditional_value<V> out;
  if (!r.value().found)
    return out;
  auto v = value_codec<V>::decode(r.value().value);
  if (!v)
    return v.error();
  out.has_value = true;
  out.value = std::move(v.value());
  return out;
}

} // namespace detail

template <class K, class V>
class reliable_dictionary {
public:
  using ms = std::chrono::milliseconds;

  reliable_dictionary(state_manager* store, std::string name)
      : store_(store), name_(std::move(name)) {}

  const std::string& name() const { return name_; }

  result<conditional_value<V>> try_get(transaction& tx, const K& key,
                                       read_mode mode = read_mode::repeatable,
                                       ms timeout = default_timeout_marker) {
    auto req = keyed(operation::try_get, key);
    req.mode = mode;
    return detail::found_value<V>(tx.run(std::move(req), timeout));
  }

  result<bool> contains(transaction& tx, const K& key,
                        read_mode mode = read_mode::repeatable,
                        ms timeout = default_timeout_marker) {
    auto req = keyed(operation::contains, key);
    req.mode = mode;
    return found(tx.run(std::move(req), timeout));
  }

  /// Fails with errc::key_exists if the key is present.
  result<void> add(transaction& tx, const K& key, const V& value,
                   ms timeout = default_timeout_marker) {
    auto req = keyed(operation::add, key);
    req.value = value_codec<V>::encode(value);
    auto r = tx.run(std::move(req), timeout);
    if (!r)
      return r.error();
    return outcome::success();
  }

  /// Returns true if the key existed (and was updated).
  result<bool> add_or_update(transaction& tx, const K& key, const V& value,
                             ms timeout = default_timeout_marker) {
    auto req = keyed(operation::add_or_update, key);
    req.value = value_codec<V>::encode(value);
    return found(tx.run(std::move(req), timeout));
  }

  /// Sets the key to `value` only if it currently holds `expected`.
  result<bool> try_update(transaction& tx, const K& key, const V& value,
                          const V& expected, ms timeout = default_timeout_marker) {
    auto req = keyed(operation::try_update, key);
    req.value = value_codec<V>::encode(value);
    req.expected = value_codec<V>::encode(expected);
    return found(tx.run(std::move(req), timeout));
  }

  /// Removes the key; returns the value it had.
  result<conditional_value<V>> try_remove(transaction& tx, const K& key,
                                          ms timeout = default_timeout_marker) {
    return detail::found_value<V>(tx.run(keyed(operation::try_remove, key), timeout));
  }

  /// Number of keys in the transaction's snapshot (plus its own changes).
  result<uint64_t> count(transaction& tx) {
    auto r =
        tx.run(detail::make_request(operation::count, name_), default_timeout_marker);
    if (!r)
      return r.error();
    return r.value().count;
  }

  /// (key, value) pairs of the snapshot (plus own changes) ordered by encoded
  /// key, optionally limited to [from, to).
  result<std::vector<std::pair<K, V>>> enumerate(transaction& tx,
                                                 std::optional<K> from = std::nullopt,
                                                 std::optional<K> to = std::nullopt) {
    auto req = detail::make_request(operation::enumerate, name_);
    if (from) {
      req.has_from = true;
      req.from = key_codec<K>::encode(*from);
    }
    if (to) {
      req.has_to = true;
      req.to = key_codec<K>::encode(*to);
    }
    auto r = tx.run(std::move(req), default_timeout_marker);
    if (!r)
      return r.error();
    std::vector<std::pair<K, V>> out;
    out.reserve(r.value().items.size());
    for (auto& [k, v] : r.value().items) {
      auto key = key_codec<K>::decode(k);
      auto value = value_codec<V>::decode(v);
      if (!key || !value)
        return errc::decode_failed;
      out.emplace_back(std::move(key.value()), std::move(value.value()));
    }
    return out;
  }

private:
  op_request keyed(operation op, const K& key) const {
    auto req = detail::make_request(op, name_);
    req.key = key_codec<K>::encode(key);
    return req;
  }
  static result<bool> found(result<op_result> r) {
    if (!r)
      return r.error();
    return r.value().found;
  }

  state_manager* store_;
  std::string name_;
};

template <class T>
class reliable_queue {
public:
  using ms = std::chrono::milliseconds;

  reliable_queue(state_manager* store, std::string name)
      : store_(store), name_(std::move(name)) {}

  const std::string& name() const { return name_; }

  result<void> enqueue(transaction& tx, const T& item,
                       ms timeout = default_timeout_marker) {
    auto req = detail::make_request(operation::enqueue, name_);
    req.value = value_codec<T>::encode(item);
    auto r = tx.run(std::move(req), timeout);
    if (!r)
      return r.error();
    return outcome::success();
  }

  result<conditional_value<T>> try_dequeue(transaction& tx,
                                           ms timeout = default_timeout_marker) {
    return item(tx.run(detail::make_request(operation::try_dequeue, name_), timeout));
  }

  result<conditional_value<T>> try_peek(transaction& tx,
                                        ms timeout = default_timeout_marker) {
    return item(tx.run(detail::make_request(operation::try_peek, name_), timeout));
  }

  /// Items in the transaction's snapshot, plus its own enqueues, minus its
  /// own dequeues.
  result<uint64_t> count(transaction& tx) {
    auto r = tx.run(detail::make_request(operation::queue_count, name_),
                    default_timeout_marker);
    if (!r)
      return r.error();
    return r.value().count;
  }

private:
  static result<conditional_value<T>> item(result<op_result> r) {
    return detail::found_value<T>(std::move(r));
  }

  state_manager* store_;
  std::string name_;
};

// -- state_manager members that need the types above ----------------------------

inline transaction state_manager::begin() {
  return transaction{this, begin_txn()};
}

template <class K, class V>
result<reliable_dictionary<K, V>> state_manager::dictionary(const std::string& name) {
  auto c = ensure_collection(name, collection_kind::dictionary, type_tag<K>::name(),
                             type_tag<V>::name());
  if (!c)
    return c.error();
  return reliable_dictionary<K, V>{this, name};
}

template <class T>
result<reliable_queue<T>> state_manager::queue(const std::string& name) {
  auto c = ensure_collection(name, collection_kind::queue, "", type_tag<T>::name());
  if (!c)
    return c.error();
  return reliable_queue<T>{this, name};
}

} // namespace conclave::store
