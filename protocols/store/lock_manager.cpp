#include "protocols/store/lock_manager.hpp"

#include <algorithm>

namespace conclave::store {

bool lock_manager::grantable(const resource& r, txn_id txn, lock_mode mode) const {
  for (auto& [holder, held_mode] : r.granted)
    if (holder != txn.value && !compatible(mode, held_mode))
      return false;
  return true;
}

acquire_result lock_manager::acquire(txn_id txn, lock_key key, lock_mode mode,
                                     timestamp deadline) {
  auto e = &*table_.try_emplace(std::move(key)).first;
  auto& r = e->second;
  auto* mine = r.find(txn.value);
  bool upgrade = mine != nullptr;
  if (upgrade && mine->second >= mode)
    return acquire_result::granted;
  // Upgrades only check the holders; new requests also queue behind waiters.
  if (grantable(r, txn, mode) && (upgrade || r.queue.empty())) {
    if (upgrade)
      mine->second = mode;
    else {
      r.granted.emplace_back(txn.value, mode);
      held_by_[txn.value].push_back(e);
    }
    return acquire_result::granted;
  }
  waiter w{txn, mode, deadline};
  if (upgrade)
    r.queue.insert(r.queue.begin(), w);
  else
    r.queue.push_back(w);
  waiting_[txn.value] = {e, deadline};
  return acquire_result::waiting;
}

void lock_manager::grant_waiters(entry e) {
  auto& r = e->second;
  size_t taken = 0;
  while (taken < r.queue.size()) {
    auto w = r.queue[taken];
    if (!grantable(r, w.txn, w.mode))
      break;
    ++taken;
    if (auto* mine = r.find(w.txn.value))
      mine->second = std::max(mine->second, w.mode);
    else {
      r.granted.emplace_back(w.txn.value, w.mode);
      held_by_[w.txn.value].push_back(e);
    }
    waiting_.erase(w.txn.value);
    granted_.push_back(w.txn);
  }
  r.queue.erase(r.queue.begin(), r.queue.begin() + static_cast<std::ptrdiff_t>(taken));
}

void lock_manager::regrant(const std::vector<entry>& touched) {
  for (auto e : touched) {
    grant_waiters(e);
    if (e->second.granted.empty() && e->second.queue.empty())
      table_.erase(table_.find(e->first));
  }
}

void lock_manager::release_all(txn_id txn) {
  std::vector<entry> touched;
  std::optional<entry> waited;
  if (auto w = waiting_.find(txn.value); w != waiting_.end()) {
    auto e = w->second.first;
    auto& q = e->second.queue;
    q.erase(
        std::remove_if(q.begin(), q.end(), [&](const waiter& x) { return x.txn == txn; }),
        q.end());
    touched.push_back(e);
    waited = e;
    waiting_.erase(w);
  }
  if (auto h = held_by_.find(txn.value); h != held_by_.end()) {
    touched.reserve(touched.size() + h->second.size());
    for (auto e : h->second) {
      auto& g = e->second.granted;
      g.erase(std::remove_if(g.begin(), g.end(),
                             [&](const auto& x) { return x.first == txn.value; }),
              g.end());
      // An upgrade waited on a resource it holds: list that one once.
      if (!waited || e != *waited)
        touched.push_back(e);
    }
    held_by_.erase(h);
  }
  regrant(touched);
}

std::vector<txn_id> lock_manager::expire(timestamp now) {
  std::vector<txn_id> expired;
  std::vector<entry> touched;
  for (auto i = waiting_.begin(); i != waiting_.end();) {
    if (i->second.second <= now) {
      expired.push_back(txn_id{i->first});
      auto e = i->second.first;
      if (std::find(touched.begin(), touched.end(), e) == touched.end())
        touched.push_back(e);
      auto& q = e->second.queue;
      auto id = i->first;
      q.erase(std::remove_if(q.begin(), q.end(),
                             [&](const waiter& x) { return x.txn.value == id; }),
              q.end());
      i = waiting_.erase(i);
    } else {
      ++i;
    }
  }
  regrant(touched);
  std::sort(expired.begin(), expired.end());
  return expired;
}

std::vector<txn_id> lock_manager::take_granted() {
  std::vector<txn_id> out;
  out.swap(granted_);
  return out;
}

std::optional<timestamp> lock_manager::next_deadline() const {
  std::optional<timestamp> best;
  for (auto& [id, w] : waiting_)
    if (!best || w.second < *best)
      best = w.second;
  return best;
}

std::optional<lock_mode> lock_manager::held(txn_id txn, const lock_key& key) const {
  auto i = table_.find(key);
  if (i == table_.end())
    return std::nullopt;
  for (auto& [holder, mode] : i->second.granted)
    if (holder == txn.value)
      return mode;
  return std::nullopt;
}

size_t lock_manager::grant_count() const {
  size_t n = 0;
  for (auto& [k, r] : table_)
    n += r.granted.size();
  return n;
}

} // namespace conclave::store
