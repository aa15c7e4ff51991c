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

void lease_table::held(const std::string& name, const std::string& holder, uint64_t token,
                       std::chrono::milliseconds ttl, timestamp now) {
  auto& e = held_[{name, holder}];
  e.token = token;
  e.deadline = now + expiry_wait(ttl, timing_);
  e.asked.reset();
}

void lease_table::gone(const std::string& name, const std::string& holder) {
  held_.erase({name, holder});
}

std::vector<lease_table::expiry> lease_table::due(timestamp now, duration retry) {
  retry_ = retry;
  std::vector<expiry> out;
  for (auto& [k, e] : held_) {
    if (e.deadline > now || (e.asked && *e.asked + retry > now))
      continue;
    e.asked = now;
    out.push_back(expiry{k.first, k.second, e.token});
  }
  return out;
}

std::optional<timestamp> lease_table::next_deadline() const {
  std::optional<timestamp> best;
  for (auto& [k, e] : held_) {
    auto at = e.asked ? *e.asked + retry_ : e.deadline;
    if (!best || at < *best)
      best = at;
  }
  return best;
}

std::optional<timestamp> lease_table::deadline(const std::string& name,
                                               const std::string& holder) const {
  auto i = held_.find({name, holder});
  if (i == held_.end())
    return std::nullopt;
  return i->second.deadline;
}

std::optional<uint64_t> lease_waiters::push(const std::string& name, waiter w) {
  auto& q = queues_[name];
  for (auto& x : q)
    if (x.holder == w.holder) {
      auto old = x.id;
      x = std::move(w);
      return old != 0 ? std::optional<uint64_t>{old} : std::nullopt;
    }
  q.push_back(std::move(w));
  return std::nullopt;
}

void lease_waiters::push_front(const std::string& name, waiter w) {
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
        j = q.erase(j); // a placeholder nobody came back for
      } else {
        out.push_back(*j);
        j->id = 0;
        j->until = now + grace_;
        ++j;
      }
    }
    i = q.empty() ? queues_.erase(i) : std::next(i);
  }
  return out;
}

std::optional<timestamp> lease_waiters::next_deadline() const {
  std::optional<timestamp> best;
  for (auto& [k, q] : queues_)
    for (auto& w : q)
      if (!best || w.until < *best)
        best = w.until;
  return best;
}

std::vector<lease_waiters::waiter> lease_waiters::drain() {
  std::vector<waiter> out;
  for (auto& [k, q] : queues_)
    for (auto& w : q)
      if (w.id != 0)
        out.push_back(std::move(w));
  queues_.clear();
  return out;
}

std::vector<std::string> lease_waiters::names() const {
  std::vector<std::string> out;
  for (auto& [k, q] : queues_)
    out.push_back(k);
  return out;
}

} // namespace conclave::replication
