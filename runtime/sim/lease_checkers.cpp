#include "runtime/sim/lease_checkers.hpp"

#include <algorithm>
#include <map>
#include <sstream>

namespace conclave::sim {

namespace {

using repl::timestamp;

std::string lease_ms_text(timestamp t) {
  std::ostringstream o;
  o << static_cast<double>(t.count()) / 1e6 << "ms";
  return o.str();
}

/// A client's beliefs in one lease, overlapping ones merged (a renewal
/// extends the belief it renews); each merged stretch keeps its first belief
/// for the complaint.
struct stretch {
  timestamp from, until;
  const lease_belief* first;
};

std::string describe_belief(const stretch& s) {
  auto& b = *s.first;
  return "client " + std::to_string(b.client) + " (holder " + b.holder + ", token "
         + std::to_string(b.token) + ", believing " + lease_ms_text(s.from) + ".."
         + lease_ms_text(s.until) + ")";
}

std::vector<stretch> merged_beliefs(const lease_observation& obs, size_t lease) {
  std::map<size_t, std::vector<const lease_belief*>> by_client;
  for (auto& b : obs.beliefs)
    if (b.lease == lease && b.from < b.until)
      by_client[b.client].push_back(&b);
  std::vector<stretch> out;
  for (auto& [client, bs] : by_client) {
    std::sort(bs.begin(), bs.end(), [](auto* a, auto* b) { return a->from < b->from; });
    for (auto* b : bs) {
      if (!out.empty() && out.back().first->client == client
          && b->from <= out.back().until) {
        out.back().until = std::max(out.back().until, b->until);
        continue;
      }
      out.push_back({b->from, b->until, b});
    }
  }
  return out;
}

/// Sweeps the merged beliefs of one lease in time order; `over` sees every
/// instant at which more than `limit` clients believe, with the believers.
template <class Over>
size_t sweep_beliefs(const lease_observation& obs, size_t lease, size_t limit,
                     Over over) {
  auto s = merged_beliefs(obs, lease);
  // (time, +1 start / -1 end, stretch); ends before starts at one instant:
  // a belief that ends at t and one that starts at t do not overlap.
  std::vector<std::tuple<timestamp, int, size_t>> ev;
  for (size_t i = 0; i < s.size(); ++i) {
    ev.emplace_back(s[i].from, 1, i);
    ev.emplace_back(s[i].until, -1, i);
  }
  std::sort(ev.begin(), ev.end());
  std::vector<size_t> open;
  size_t most = 0;
  for (auto& [t, d, i] : ev) {
    if (d < 0) {
      open.erase(std::find(open.begin(), open.end(), i));
      continue;
    }
    open.push_back(i);
    most = std::max(most, open.size());
    if (open.size() > limit) {
      std::vector<const stretch*> who;
      for (auto j : open)
        who.push_back(&s[j]);
      over(t, who);
    }
  }
  return most;
}

class mutual_exclusion final : public lease_checker {
public:
  const char* name() const override { return "mutual_exclusion"; }
  void check(const lease_observation& obs,
             std::vector<repl_violation>& out) const override {
    for (size_t l = 0; l < obs.leases.size(); ++l) {
      auto& info = obs.leases[l];
      sweep_beliefs(obs, l, info.limit, [&](timestamp t, auto& who) {
        std::string text = std::to_string(who.size()) + " clients believe they hold "
                           + info.name + " (limit " + std::to_string(info.limit) + ") at "
                           + lease_ms_text(t) + ":";
        for (auto* x : who)
          text += " " + describe_belief(*x);
        out.push_back({"", text});
      });
    }
  }
};

class tokens_grow final : public lease_checker {
public:
  const char* name() const override { return "tokens_grow"; }
  void check(const lease_observation& obs,
             std::vector<repl_violation>& out) const override {
    for (auto& a : obs.grants)
      for (auto& b : obs.grants)
        if (a.holder != b.holder && b.sent > a.acked && b.token <= a.token)
          out.push_back({"", "holder " + b.holder + " was granted token "
                                 + std::to_string(b.token) + " for a request sent at "
                                 + lease_ms_text(b.sent) + ", after holder " + a.holder
                                 + " was granted token " + std::to_string(a.token)
                                 + " at " + lease_ms_text(a.acked)});
  }
};

class granted_after_heal final : public lease_checker {
public:
  const char* name() const override { return "granted_after_heal"; }
  bool safety() const override { return false; }
  void check(const lease_observation& obs,
             std::vector<repl_violation>& out) const override {
    if (!obs.judge_liveness)
      return;
    auto limit = obs.heal + obs.bound;
    for (auto& g : obs.grants)
      if (g.acked >= obs.heal && g.acked <= limit)
        return;
    out.push_back({"", "no lease was granted between heal at " + lease_ms_text(obs.heal)
                           + " and heal + bound at " + lease_ms_text(limit)});
  }
};

} // namespace

std::vector<std::unique_ptr<lease_checker>> standard_lease_checkers() {
  std::vector<std::unique_ptr<lease_checker>> out;
  out.push_back(std::make_unique<mutual_exclusion>());
  out.push_back(std::make_unique<tokens_grow>());
  out.push_back(std::make_unique<granted_after_heal>());
  return out;
}

std::vector<repl_violation>
run_lease_checkers(const std::vector<std::unique_ptr<lease_checker>>& checkers,
                   const lease_observation& obs, size_t max_per_checker) {
  return run_checkers(checkers, obs, max_per_checker);
}

size_t max_believers(const lease_observation& obs, size_t lease) {
  return sweep_beliefs(obs, lease, SIZE_MAX, [](timestamp, auto&) {});
}

} // namespace conclave::sim
