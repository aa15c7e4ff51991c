#include "protocols/store/lock_manager.hpp"

#include <algorithm>

namespace conclave::store {

bool lock_manager::grantable(const resource& r, txn_id txn, lock_mode mode) const {
  for (auto& [holder, held_mode] : r.granted)
    if (holder != txn.value && !compatible(mode, held_mode))
      return false;
  return true;
}

acquire_result lock_manager::acquire(txn_id txn, const lock_key& key, lock_mode mode,
                                     timestamp deadline) {
  auto& r = table_[key];
  auto mine = r.granted.find(txn.value);
  bool upgrade = mine != r.granted.end();
  if (upgrade && mine->second >= mode)
    return acquire_result::granted;
  // Upgrades only check the holders; new requests also queue behind waiters.
  if (grantable(r, txn, mode) && (upgrade || r.queue.empty())) {
    if (upgrade)
      mine->second = mode;
    else {
      r.granted.emplace(txn.value, mode);
      held_by_[txn.value].push_back(key);
    }
    return acquire_result::granted;
  }
  waiter w{txn, mode, deadline};
  if (upgrade)
    r.queue.push_front(w);
  else
    r.queue.push_back(w);
  waiting_[txn.value] = {key, deadline};
  return acquire_result::waiting;
}

void lock_manager::grant_waiters(const lock_key& key, resource& r) {
  while (!r.queue.empty()) {
    auto w = r.queue.front();
    if (!grantable(r, w.txn, w.mode))
      break;
    r.queue.pop_front();
    auto mine = r.granted.find(w.txn.value);
    if (mine != r.granted.end())
      mine->second = std::max(mine->second, w.mode);
    else {
      r.granted.emplace(w.txn.value, w.mode);
      held_by_[w.txn.value].push_back(key);
    }
    waiting_.erase(w.txn.value);
    granted_.push_back(w.txn);
  }
}

void lock_manager::erase_if_unused(const lock_key& key) {
  auto i = table_.find(key);
  if (i != table_.end() && i->second.granted.empty() && i->second.queue.empty())
    table_.erase(i);
}

void lock_manager::regrant(const std::vector<lock_key>& touched) {
  for (auto& key : touched) {
    auto i = table_.find(key);
    if (i == table_.end())
      continue;
    grant_waiters(key, i->second);
    erase_if_unused(key);
  }
}

void lock_manager::release_all(txn_id txn) {
  std::vector<lock_key> touched;
  if (auto w = waiting_.find(txn.value); w != waiting_.end()) {
    auto& r = table_[w->second.first];
    r.queue.erase(std::remove_if(r.queue.begin(), r.queue.end(),
                                 [&](const waiter& x) { return x.txn == txn; }),
                  r.queue.end());
    touched.push_back(w->second.first);
    waiting_.erase(w);
  }
  if (auto h = held_by_.find(txn.value); h != held_by_.end()) {
    for (auto& key : h->second) {
      table_[key].granted.erase(txn.value);
      touched.push_back(key);
    }
    held_by_.erase(h);
  }
  regrant(touched);
}

std::vector<txn_id> lock_manager::expire(timestamp now) {
  std::vector<txn_id> expired;
  std::vector<lock_key> touched;
  for (auto i = waiting_.begin(); i != waiting_.end();) {
    if (i->second.second <= now) {
      expired.push_back(txn_id{i->first});
      touched.push_back(i->second.first);
      auto& r = table_[i->second.first];
      auto id = i->first;
      r.queue.erase(std::remove_if(r.queue.begin(), r.queue.end(),
                                   [&](const waiter& x) { return x.txn.value == id; }),
                    r.queue.end());
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
  auto j = i->second.granted.find(txn.value);
  if (j == i->second.granted.end())
    return std::nullopt;
  return j->second;
}

size_t lock_manager::grant_count() const {
  size_t n = 0;
  for (auto& [k, r] : table_)
    n += r.granted.size();
  return n;
}

} // namespace conclave::store
