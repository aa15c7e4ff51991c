#include "actors/replication/lease_table.hpp"

#include <algorithm>
#include <cmath>

namespace conclave::replication {

duration expiry_wait(std::chrono::milliseconds ttl, const lease_timing& t) {
  double drift = std::clamp(t.drift, 0.0, 0.49);
  auto ns = std::chrono::duration_cast<duration>(ttl).count();
  auto scaled = std::ceil(static_cast<double>(ns) * (1 + drift) / (1 - drift));
  return duration(static_cast<duration::rep>(scaled)) + t.lock_delay;
}

void lease_table::index(const key& k, entry& e, timestamp next) {
  by_time_.erase({e.next, k}); // nothing for a new entry
  e.next = next;
  by_time_.insert({next, k});
}

void lease_table::held(const std::string& name, const std::string& holder, uint64_t token,
                       std::chrono::milliseconds ttl, timestamp now) {
  key k{name, holder};
  auto& e = held_[k];
  e.token = token;
  e.deadline = now + expiry_wait(ttl, timing_);
  e.asked.reset();
  index(k, e, e.deadline);
}

void lease_table::gone(const std::string& name, const std::string& holder) {
  auto i = held_.find({name, holder});
  if (i == held_.end())
    return;
  by_time_.erase({i->second.next, i->first});
  held_.erase(i);
}

void lease_table::clear() {
  held_.clear();
  by_time_.clear();
}

std::vector<lease_table::expiry> lease_table::due(timestamp now, duration retry) {
  std::vector<expiry> out;
  while (!by_time_.empty() && by_time_.begin()->first <= now) {
    auto k = by_time_.begin()->second;
    auto& e = held_.at(k);
    e.asked = now;
    index(k, e, now + retry);
    out.push_back(expiry{k.first, k.second, e.token});
  }
  return out;
}

std::optional<timestamp> lease_table::next_deadline() const {
  if (by_time_.empty())
    return std::nullopt;
  return by_time_.begin()->first;
}

std::optional<timestamp> lease_table::deadline(const std::string& name,
                                               const std::string& holder) const {
  auto i = held_.find({name, holder});
  if (i == held_.end())
    return std::nullopt;
  return i->second.deadline;
}

void lease_waiters::forget(timestamp until) {
  if (auto i = untils_.find(until); i != untils_.end())
    untils_.erase(i);
}

std::optional<uint64_t> lease_waiters::push(const std::string& name, waiter w) {
  auto& q = queues_[name];
  untils_.insert(w.until);
  for (auto& x : q)
    if (x.holder == w.holder) {
      auto old = x.id;
      forget(x.until);
      x = std::move(w);
      return old != 0 ? std::optional<uint64_t>{old} : std::nullopt;
    }
  q.push_back(std::move(w));
  return std::nullopt;
}

void lease_waiters::push_front(const std::string& name, waiter w) {
  untils_.insert(w.until);
  queues_[name].push_front(std::move(w));
}

std::optional<lease_waiters::waiter> lease_waiters::pop(const std::string& name) {
  auto i = queues_.find(name);
  if (i == queues_.end())
    return std::nullopt;
  auto& q = i->second;
  auto live = std::find_if(q.begin(), q.end(), [](const waiter& w) { return w.id != 0; });
  if (live == q.end())
    return std::nullopt;
  auto w = std::move(*live);
  q.erase(live);
  forget(w.until);
  if (q.empty())
    queues_.erase(i);
  return w;
}

size_t lease_waiters::waiting(const std::string& name) const {
  auto i = queues_.find(name);
  if (i == queues_.end())
    return 0;
  return static_cast<size_t>(std::count_if(i->second.begin(), i->second.end(),
                                           [](const waiter& w) { return w.id != 0; }));
}

size_t lease_waiters::size() const {
  size_t n = 0;
  for (auto& [k, q] : queues_)
    n += q.size();
  return n;
}

std::vector<lease_waiters::waiter> lease_waiters::timed_out(timestamp now) {
  std::vector<waiter> out;
  for (auto i = queues_.begin(); i != queues_.end();) {
    auto& q = i->second;
    for (auto j = q.begin(); j != q.end();) {
      if (j->until > now) {
        ++j;
      } else if (j->id == 0) {
        forget(j->until);
        j = q.erase(j); // a placeholder nobody came back for
      } else {
        out.push_back(*j);
        forget(j->until);
        j->id = 0;
        j->until = now + grace_;
        untils_.insert(j->until);
        ++j;
      }
    }
    i = q.empty() ? queues_.erase(i) : std::next(i);
  }
  return out;
}

std::optional<timestamp> lease_waiters::next_deadline() const {
  if (untils_.empty())
    return std::nullopt;
  return *untils_.begin();
}

std::vector<lease_waiters::waiter> lease_waiters::drain() {
  std::vector<waiter> out;
  for (auto& [k, q] : queues_)
    for (auto& w : q)
      if (w.id != 0)
        out.push_back(std::move(w));
  queues_.clear();
  untils_.clear();
  return out;
}

std::vector<std::string> lease_waiters::names() const {
  std::vector<std::string> out;
  for (auto& [k, q] : queues_)
    out.push_back(k);
  return out;
}

std::vector<lease_waiters::waiter> lease_waiters::live(const std::string& name) const {
  std::vector<waiter> out;
  if (auto i = queues_.find(name); i != queues_.end())
    for (auto& w : i->second)
      if (w.id != 0)
        out.push_back(w);
  return out;
}

} // namespace conclave::replication
