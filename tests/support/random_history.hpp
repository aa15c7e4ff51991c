// random_history: client histories of a store, generated from a sequential
// model of it, for testing the linearizability checker
// (protocols/history/linearizability.hpp).
//
// Clients issue one call at a time; each call gets a random interval and a
// random instant inside it at which it takes effect. The calls are applied to
// the model in the order of those instants, and each answered call records
// what the model returned, so every generated history is linearizable. Some
// calls go unanswered (a timeout): they take effect at a random instant after
// their invocation, or never, and their client moves on.
//
// mutate_one() then changes one observed result to another plausible one (a
// value that was written to the key, an item that was enqueued, a counter off
// by one), which usually makes the history not linearizable.
#pragma once

#include "protocols/history/history.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace conclave::testing {

struct random_history_options {
  size_t ops = 200;
  size_t clients = 5;
  size_t keys = 3;
  /// 0: no queue calls.
  size_t queues = 1;
  /// Share of calls on queues (when there are queues).
  double queue_share = 0.3;
  /// Idle time of a client between calls: 0 .. max_gap.
  int64_t max_gap = 3;
  /// Latency of a call: 1 .. max_latency.
  int64_t max_latency = 10;
  /// Share of calls that get no answer.
  double unanswered = 0.05;
  uint64_t seed = 1;
};

inline history::client_history random_history(const random_history_options& o) {
  using namespace conclave::history;
  std::mt19937_64 rng{o.seed};
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>{lo, hi}(rng);
  };
  auto chance = [&](double p) { return std::bernoulli_distribution{p}(rng); };
  struct pending {
    operation op;
    double at = 0; // when it takes effect
    bool effect = true;
  };
  std::vector<pending> calls;
  std::vector<int64_t> free_at(o.clients, 0);
  // Values already written per key, so a cas can expect one of them.
  std::map<std::string, std::vector<std::string>> written;
  int64_t next_value = 1000;
  for (size_t n = 0; n < o.ops; ++n) {
    size_t c = static_cast<size_t>(std::min_element(free_at.begin(), free_at.end())
                                   - free_at.begin());
    pending p;
    p.op.client = client_id{c};
    int64_t invoked = free_at[c] + uniform(0, o.max_gap);
    int64_t latency = uniform(1, o.max_latency);
    p.op.invoked = timestamp{invoked};
    bool queue = o.queues > 0 && chance(o.queue_share);
    if (queue) {
      std::string q =
          "q" + std::to_string(uniform(0, static_cast<int64_t>(o.queues) - 1));
      p.op.what = chance(0.5) ? call::enqueue(q, "i" + std::to_string(next_value++))
                              : call::dequeue(q);
    } else {
      std::string k = "k" + std::to_string(uniform(0, static_cast<int64_t>(o.keys) - 1));
      auto& seen = written[k];
      auto some_written = [&]() -> std::optional<std::string> {
        if (seen.empty() || chance(0.2))
          return std::nullopt;
        return seen[static_cast<size_t>(
            uniform(0, static_cast<int64_t>(seen.size()) - 1))];
      };
      switch (uniform(0, 5)) {
      case 0:
      case 1: {
        std::string v = std::to_string(next_value++);
        seen.push_back(v);
        p.op.what = call::put(k, v);
        break;
      }
      case 2:
        p.op.what = call::get(k);
        break;
      case 3:
        p.op.what = call::remove(k);
        break;
      case 4: {
        std::optional<std::string> desired;
        if (!chance(0.1)) {
          desired = std::to_string(next_value++);
          seen.push_back(*desired);
        }
        p.op.what = call::cas(k, some_written(), desired);
        break;
      }
      default:
        p.op.what = call::incr(k, uniform(1, 3));
        break;
      }
    }
    if (chance(o.unanswered)) {
      p.effect = chance(0.5);
      p.at = static_cast<double>(invoked)
             + std::uniform_real_distribution<double>{
                 0, 3.0 * static_cast<double>(o.max_latency)}(rng);
    } else {
      p.op.responded = timestamp{invoked + latency};
      p.at = std::uniform_real_distribution<double>{
          static_cast<double>(invoked), static_cast<double>(invoked + latency)}(rng);
    }
    free_at[c] = invoked + latency + 1;
    calls.push_back(std::move(p));
  }
  // Apply in the order the calls take effect.
  std::vector<size_t> order(calls.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return calls[a].at < calls[b].at; });
  std::map<std::string, std::optional<std::string>> keys;
  std::map<std::string, std::deque<std::string>> queues;
  for (size_t i : order) {
    pending& p = calls[i];
    if (!p.effect)
      continue;
    const call& w = p.op.what;
    outcome& out = p.op.seen;
    auto& value = keys[w.target];
    auto& items = queues[w.target];
    switch (w.kind) {
    case op_kind::put:
      value = w.value;
      out = outcome::done();
      break;
    case op_kind::get:
      out = outcome::read(value);
      break;
    case op_kind::remove:
      out = outcome::removed(value.has_value());
      value.reset();
      break;
    case op_kind::cas:
      if (value == w.expected) {
        value = w.value;
        out = outcome::done();
      } else {
        out = outcome::cas_failed(value);
      }
      break;
    case op_kind::incr: {
      int64_t n = value ? std::stoll(*value) + w.by : w.by;
      value = std::to_string(n);
      out = outcome::counter(n);
      break;
    }
    case op_kind::enqueue:
      items.push_back(*w.value);
      out = outcome::done();
      break;
    case op_kind::dequeue:
      if (items.empty()) {
        out = outcome::read(std::nullopt);
      } else {
        out = outcome::read(items.front());
        items.pop_front();
      }
      break;
    }
  }
  history::client_history h;
  for (auto& p : calls)
    h.add(std::move(p.op));
  return h;
}

/// Changes the observed result of one answered call to another plausible one;
/// returns the index of the changed call, or nothing if `h` has no call with
/// a result to change.
inline std::optional<size_t> mutate_one(history::client_history& h, uint64_t seed) {
  using namespace conclave::history;
  std::mt19937_64 rng{seed};
  std::vector<size_t> candidates;
  std::map<std::string, std::vector<std::string>> written; // per key / queue
  for (size_t i = 0; i < h.size(); ++i) {
    const operation& op = h[i];
    if (op.what.value)
      written[(op.what.on_queue() ? "q:" : "k:") + op.what.target].push_back(
          *op.what.value);
    if (op.completed() && op.what.kind != op_kind::put
        && op.what.kind != op_kind::enqueue)
      candidates.push_back(i);
  }
  if (candidates.empty())
    return std::nullopt;
  size_t i =
      candidates[std::uniform_int_distribution<size_t>{0, candidates.size() - 1}(rng)];
  operation op = h[i];
  const auto& values = written[(op.what.on_queue() ? "q:" : "k:") + op.what.target];
  // A value written to the same key (queue) other than `not_this`, or none.
  auto other =
      [&](const std::optional<std::string>& not_this) -> std::optional<std::string> {
    std::vector<std::optional<std::string>> choices{std::nullopt};
    for (const auto& v : values)
      choices.emplace_back(v);
    choices.erase(std::remove(choices.begin(), choices.end(), not_this), choices.end());
    if (choices.empty())
      return not_this;
    return choices[std::uniform_int_distribution<size_t>{0, choices.size() - 1}(rng)];
  };
  switch (op.what.kind) {
  case op_kind::get:
  case op_kind::dequeue:
    op.seen.value = other(op.seen.value);
    break;
  case op_kind::remove:
    op.seen.found = !op.seen.found.value_or(false);
    break;
  case op_kind::cas:
    if (op.seen.ok) {
      op.seen.ok = false;
      op.seen.value = other(op.what.expected);
    } else {
      op.seen = outcome::done();
    }
    break;
  case op_kind::incr:
    op.seen.number += std::bernoulli_distribution{0.5}(rng) ? 1 : -1;
    break;
  default:
    break;
  }
  history::client_history out;
  for (size_t j = 0; j < h.size(); ++j)
    out.add(j == i ? op : h[j]);
  h = std::move(out);
  return i;
}

} // namespace conclave::testing
