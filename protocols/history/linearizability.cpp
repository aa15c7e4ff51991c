#include "protocols/history/linearizability.hpp"

#include <algorithm>
#include <charconv>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_set>
#include <utility>

namespace conclave::history {

namespace {

// -- the operations of one partition, as the search sees them --

struct item {
  const call* what = nullptr;
  const outcome* seen = nullptr;
  /// False: the result is unknown; the operation may take effect or not.
  bool answered = false;
  timestamp invoked{0};
  timestamp responded{0};
  /// When the operation must have taken effect at the latest, as far as the
  /// history tells: its response, or an earlier response of a call that
  /// observed the value it writes. Only orders the search's choices.
  timestamp deadline{0};
  client_history::op_index index = 0;
};

/// The items of `ops`; unanswered read-only calls are left out (they can
/// neither change the state nor be contradicted).
std::vector<item> items_of(const client_history& h,
                           const std::vector<client_history::op_index>& ops) {
  std::vector<item> out;
  out.reserve(ops.size());
  for (auto i : ops) {
    const operation& op = h[i];
    if (!op.completed() && op.what.read_only())
      continue;
    item it;
    it.what = &op.what;
    it.seen = &op.seen;
    it.answered = op.completed();
    it.invoked = op.invoked;
    it.responded = op.responded.value_or(timestamp::max());
    it.deadline = it.responded;
    it.index = i;
    out.push_back(it);
  }
  // Earliest answer that showed each value.
  std::map<std::string, timestamp> shown;
  auto show = [&](const std::optional<std::string>& v, timestamp at) {
    if (!v)
      return;
    auto [pos, added] = shown.emplace(*v, at);
    if (!added)
      pos->second = std::min(pos->second, at);
  };
  for (const auto& it : out) {
    if (!it.answered)
      continue;
    switch (it.what->kind) {
    case op_kind::get:
    case op_kind::dequeue:
      show(it.seen->value, it.responded);
      break;
    case op_kind::cas:
      show(it.seen->ok ? it.what->expected : it.seen->value, it.responded);
      break;
    default:
      break;
    }
  }
  // An unanswered enqueue of an item no answered dequeue returned can be left
  // out: where it took effect, the item either stayed in the queue behind
  // every item an answered dequeue returned, or an unanswered dequeue took it;
  // without both, every answer stays the same. Kept in, it could go anywhere
  // and multiply the queue states the search visits.
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const item& it) {
                             return !it.answered && it.what->kind == op_kind::enqueue
                                    && it.what->value && !shown.count(*it.what->value);
                           }),
            out.end());
  for (auto& it : out) {
    bool writes = it.what->kind == op_kind::put || it.what->kind == op_kind::enqueue
                  || it.what->kind == op_kind::cas;
    if (!writes || !it.what->value)
      continue;
    auto pos = shown.find(*it.what->value);
    if (pos != shown.end())
      it.deadline = std::min(it.deadline, pos->second);
  }
  return out;
}

// -- sequential specifications --

void hash_mix(size_t& seed, size_t v) {
  seed ^= v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

/// One dictionary key: a value or nothing.
struct register_model {
  using state = std::optional<std::string>;

  static state initial() { return std::nullopt; }

  static size_t hash(const state& s) {
    return s ? std::hash<std::string>{}(*s) : 0x51ed270b27c3ULL;
  }

  /// Whether `it` can take effect on `s` with its observed result (any result
  /// when unanswered); `next` is the state after it.
  static bool step(const state& s, const item& it, state& next) {
    const call& c = *it.what;
    const outcome& o = *it.seen;
    switch (c.kind) {
    case op_kind::put:
      next = c.value;
      return true;
    case op_kind::get:
      if (it.answered && o.value != s)
        return false;
      next = s;
      return true;
    case op_kind::remove:
      if (it.answered && o.found && *o.found != s.has_value())
        return false;
      next = std::nullopt;
      return true;
    case op_kind::cas:
      if (s == c.expected) {
        if (it.answered && !o.ok)
          return false;
        next = c.value;
        return true;
      }
      if (it.answered && (o.ok || o.value != s))
        return false;
      next = s;
      return true;
    case op_kind::incr: {
      int64_t current = 0;
      int64_t sum = 0;
      bool number = !s || parse(*s, current);
      if (!number || __builtin_add_overflow(current, c.by, &sum)) {
        // The store refuses it; a client that got a number saw something else.
        if (it.answered)
          return false;
        next = s;
        return true;
      }
      if (it.answered && o.number != sum)
        return false;
      next = std::to_string(sum);
      return true;
    }
    case op_kind::enqueue:
    case op_kind::dequeue:
      return false;
    }
    return false;
  }

  static bool parse(const std::string& text, int64_t& out) {
    const char* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, out);
    return ec == std::errc{} && p == end && !text.empty();
  }
};

/// One queue: items in the order they will leave.
struct queue_model {
  using state = std::deque<std::string>;

  static state initial() { return {}; }

  static size_t hash(const state& s) {
    size_t seed = s.size();
    for (const auto& v : s)
      hash_mix(seed, std::hash<std::string>{}(v));
    return seed;
  }

  static bool step(const state& s, const item& it, state& next) {
    const call& c = *it.what;
    const outcome& o = *it.seen;
    switch (c.kind) {
    case op_kind::enqueue:
      next = s;
      next.push_back(c.value.value_or(std::string{}));
      return true;
    case op_kind::dequeue:
      if (!it.answered) {
        next = s;
        if (!next.empty())
          next.pop_front();
        return true;
      }
      if (!o.value) {
        if (!s.empty())
          return false;
        next = s;
        return true;
      }
      if (s.empty() || s.front() != *o.value)
        return false;
      next = s;
      next.pop_front();
      return true;
    default:
      return false;
    }
  }
};

// -- the search --

struct search_outcome {
  verdict result = verdict::linearizable;
  uint64_t steps = 0;
  /// Positions in the item list.
  std::vector<size_t> longest;
  std::optional<size_t> stuck;
};

/// Wing & Gong's search with Lowe's memoization over `items`, at most
/// `budget` steps.
template <class Model>
class searcher {
public:
  using state = typename Model::state;

  searcher(const std::vector<item>& items, uint64_t budget)
      : items_(items), budget_(budget), words_((items.size() + 63) / 64) {
    build_list();
  }

  search_outcome run() {
    search_outcome out;
    std::vector<uint64_t> bits(words_, 0);
    state s = Model::initial();
    size_t remaining = 0;
    for (const auto& it : items_)
      remaining += it.answered ? 1 : 0;
    // One level per linearized operation, plus the root: the candidates that
    // could go next there, how far they have been tried, and the choice made.
    struct level {
      std::vector<int> candidates;
      size_t tried = 0;
      int chosen = -1;
      state before;
    };
    std::vector<level> stack;
    stack.push_back(level{frontier(), 0, -1, state{}});
    bool watch_stuck = false;
    while (remaining > 0) {
      level& l = stack.back();
      if (l.chosen >= 0) {
        // The choice made here led nowhere: undo it.
        size_t it = nodes_[l.chosen].item;
        s = std::move(l.before);
        flip(bits, it);
        unlift(l.chosen);
        if (items_[it].answered)
          ++remaining;
        l.chosen = -1;
      }
      bool descended = false;
      while (l.tried < l.candidates.size()) {
        int c = l.candidates[l.tried++];
        if (out.steps >= budget_) {
          out.result = verdict::unknown;
          return out;
        }
        ++out.steps;
        size_t it = nodes_[c].item;
        state next;
        if (!Model::step(s, items_[it], next))
          continue;
        flip(bits, it);
        if (!seen_.insert(config{bits, next}).second) {
          flip(bits, it);
          continue;
        }
        l.before = std::move(s);
        l.chosen = c;
        s = std::move(next);
        lift(c);
        if (items_[it].answered)
          --remaining;
        descended = true;
        break;
      }
      if (descended) {
        if (stack.size() > out.longest.size()) {
          out.longest.clear();
          for (const auto& f : stack)
            out.longest.push_back(nodes_[f.chosen].item);
          watch_stuck = true;
        }
        if (remaining > 0)
          stack.push_back(level{frontier(), 0, -1, state{}});
        continue;
      }
      // Nothing can go next here: the first response still in the list
      // belongs to an operation that cannot be linearized at this point.
      if (watch_stuck) {
        int first = nodes_[head_].next;
        while (first >= 0 && nodes_[first].is_call)
          first = nodes_[first].next;
        if (first >= 0)
          out.stuck = nodes_[first].item;
        watch_stuck = false;
      }
      stack.pop_back();
      if (stack.empty()) {
        out.result = verdict::violation;
        return out;
      }
    }
    out.result = verdict::linearizable;
    return out;
  }

private:
  struct node {
    size_t item = 0;
    bool is_call = false;
    int prev = -1;
    int next = -1;
    int match = -1; // a call's response node
  };

  struct config {
    std::vector<uint64_t> bits;
    state s;
    bool operator==(const config& o) const { return bits == o.bits && s == o.s; }
  };

  struct config_hash {
    size_t operator()(const config& c) const {
      size_t seed = Model::hash(c.s);
      for (auto w : c.bits)
        hash_mix(seed, std::hash<uint64_t>{}(w));
      return seed;
    }
  };

  /// Calls and responses by time; at equal times calls first, so intervals
  /// that touch count as concurrent. Unanswered operations respond at the end.
  void build_list() {
    struct event {
      timestamp at;
      bool is_call;
      size_t item;
    };
    std::vector<event> events;
    events.reserve(2 * items_.size());
    for (size_t i = 0; i < items_.size(); ++i) {
      events.push_back({items_[i].invoked, true, i});
      events.push_back({items_[i].responded, false, i});
    }
    std::stable_sort(events.begin(), events.end(), [](const event& a, const event& b) {
      if (a.at != b.at)
        return a.at < b.at;
      return a.is_call && !b.is_call;
    });
    nodes_.resize(events.size() + 1);
    head_ = static_cast<int>(events.size());
    std::vector<int> call_of(items_.size(), -1);
    int prev = head_;
    for (size_t e = 0; e < events.size(); ++e) {
      int id = static_cast<int>(e);
      nodes_[id].item = events[e].item;
      nodes_[id].is_call = events[e].is_call;
      nodes_[id].prev = prev;
      nodes_[prev].next = id;
      prev = id;
      if (events[e].is_call)
        call_of[events[e].item] = id;
      else
        nodes_[call_of[events[e].item]].match = id;
    }
    nodes_[prev].next = -1;
  }

  /// The calls before the first response still in the list: the operations
  /// that may go next. Tried earliest deadline first.
  std::vector<int> frontier() const {
    std::vector<int> out;
    for (int id = nodes_[head_].next; id >= 0 && nodes_[id].is_call; id = nodes_[id].next)
      out.push_back(id);
    std::sort(out.begin(), out.end(), [&](int a, int b) {
      const item& x = items_[nodes_[a].item];
      const item& y = items_[nodes_[b].item];
      return std::tie(x.deadline, x.invoked, x.index)
             < std::tie(y.deadline, y.invoked, y.index);
    });
    return out;
  }

  void unlink(int id) {
    node& n = nodes_[id];
    nodes_[n.prev].next = n.next;
    if (n.next >= 0)
      nodes_[n.next].prev = n.prev;
  }

  void relink(int id) {
    node& n = nodes_[id];
    nodes_[n.prev].next = id;
    if (n.next >= 0)
      nodes_[n.next].prev = id;
  }

  void lift(int call_node) {
    unlink(call_node);
    unlink(nodes_[call_node].match);
  }

  void unlift(int call_node) {
    relink(nodes_[call_node].match);
    relink(call_node);
  }

  static void flip(std::vector<uint64_t>& bits, size_t i) {
    bits[i / 64] ^= uint64_t{1} << (i % 64);
  }

  const std::vector<item>& items_;
  uint64_t budget_;
  size_t words_;
  std::vector<node> nodes_;
  int head_ = 0;
  std::unordered_set<config, config_hash> seen_;
};

search_outcome search(bool queue, const std::vector<item>& items, uint64_t budget) {
  if (queue)
    return searcher<queue_model>{items, budget}.run();
  return searcher<register_model>{items, budget}.run();
}

// -- witness --

/// `items` as of time `cut`: operations invoked later are gone, those
/// answered later are unanswered (and dropped if read-only).
std::vector<item> cut_at(const std::vector<item>& items, timestamp cut) {
  std::vector<item> out;
  for (const auto& it : items) {
    if (it.invoked > cut)
      continue;
    item c = it;
    if (c.answered && c.responded > cut) {
      if (c.what->read_only())
        continue;
      c.answered = false;
      c.responded = timestamp::max();
    }
    out.push_back(c);
  }
  return out;
}

/// Fills the witness fields of `report` for a violating `items`.
void shrink(bool queue, const std::vector<item>& items, uint64_t budget, uint64_t per_try,
            partition_report& report) {
  auto fails = [&](const std::vector<item>& candidate) {
    if (budget == 0)
      return false;
    auto r = search(queue, candidate, std::min(budget, per_try));
    budget -= std::min(budget, r.steps);
    return r.result == verdict::violation;
  };
  // The earliest response time by which the history already fails:
  // failing is monotone in the cut, so bisect.
  std::vector<timestamp> times;
  for (const auto& it : items)
    if (it.answered)
      times.push_back(it.responded);
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  size_t lo = 0;
  size_t hi = times.size() - 1; // the full history fails
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (fails(cut_at(items, times[mid])))
      hi = mid;
    else
      lo = mid + 1;
  }
  report.cut = times[hi];
  std::vector<item> current = cut_at(items, report.cut);
  size_t by_cut = current.size();
  for (const auto& it : items)
    if (it.invoked <= report.cut && !it.answered && it.what->read_only())
      ++by_cut; // counted among the others, though never searched
  // Then every answered operation, latest first, that the failure does not
  // need becomes unanswered.
  for (size_t k = current.size(); k-- > 0;) {
    if (!current[k].answered)
      continue;
    std::vector<item> candidate = current;
    if (candidate[k].what->read_only()) {
      candidate.erase(candidate.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      candidate[k].answered = false;
      candidate[k].responded = timestamp::max();
    }
    if (fails(candidate))
      current = std::move(candidate);
  }
  for (const auto& it : current)
    if (it.answered)
      report.witness.push_back(it.index);
  report.others_by_cut = by_cut - report.witness.size();
}

void append_ops(std::string& s, const client_history& h,
                const std::vector<client_history::op_index>& ops) {
  for (size_t i = 0; i < ops.size(); ++i) {
    s += i == 0 ? "" : "; ";
    s += to_string(h[ops[i]]);
  }
}

} // namespace

const char* to_string(verdict v) {
  switch (v) {
  case verdict::linearizable:
    return "linearizable";
  case verdict::violation:
    return "not linearizable";
  case verdict::unknown:
    return "unknown";
  }
  return "?";
}

std::string partition::describe() const {
  return std::string{queue ? "queue" : "key"} + " \"" + name + "\"";
}

partition_report check_partition(const client_history& h,
                                 const std::vector<client_history::op_index>& ops,
                                 const check_options& options) {
  partition_report report;
  report.ops = ops;
  if (ops.empty())
    return report;
  report.where.queue = h[ops.front()].what.on_queue();
  report.where.name = h[ops.front()].what.target;
  std::vector<item> items = items_of(h, ops);
  auto r = search(report.where.queue, items, options.step_budget);
  report.result = r.result;
  report.steps = r.steps;
  if (r.result != verdict::violation)
    return report;
  for (auto pos : r.longest)
    report.longest_linearization.push_back(items[pos].index);
  if (r.stuck)
    report.stuck = items[*r.stuck].index;
  // A try that takes far longer than the search that found the violation is
  // given up: unanswered operations can go anywhere and make it explode.
  uint64_t per_try = std::max<uint64_t>(10'000, 20 * r.steps);
  shrink(report.where.queue, items, options.witness_budget, per_try, report);
  std::sort(report.witness.begin(), report.witness.end(),
            [&](client_history::op_index a, client_history::op_index b) {
              return std::make_pair(h[a].invoked, a) < std::make_pair(h[b].invoked, b);
            });
  return report;
}

check_result check_linearizable(const client_history& h, const check_options& options) {
  std::map<std::pair<bool, std::string>, size_t> index;
  std::vector<std::vector<client_history::op_index>> groups;
  for (client_history::op_index i = 0; i < h.size(); ++i) {
    const call& c = h[i].what;
    auto [pos, added] =
        index.emplace(std::make_pair(c.on_queue(), c.target), groups.size());
    if (added)
      groups.emplace_back();
    groups[pos->second].push_back(i);
  }
  check_result result;
  result.partitions = groups.size();
  bool undecided = false;
  bool violated = false;
  for (const auto& ops : groups) {
    partition_report r = check_partition(h, ops, options);
    result.steps += r.steps;
    if (r.result == verdict::linearizable)
      continue;
    violated |= r.result == verdict::violation;
    undecided |= r.result == verdict::unknown;
    result.problems.push_back(std::move(r));
  }
  result.result = violated    ? verdict::violation
                  : undecided ? verdict::unknown
                              : verdict::linearizable;
  return result;
}

std::string partition_report::describe(const client_history& h) const {
  std::string s = where.describe() + ": " + to_string(result) + " ("
                  + std::to_string(ops.size()) + " ops, " + std::to_string(steps)
                  + " steps)";
  if (result == verdict::unknown) {
    s += ": the search ran out of steps before it could decide.";
    return s;
  }
  if (result == verdict::linearizable)
    return s + ".";
  s += ". These " + std::to_string(witness.size())
       + " answered operations cannot be linearized together";
  if (others_by_cut > 0) {
    s += ", even if the " + std::to_string(others_by_cut)
         + " other operation(s) invoked by " + std::to_string(cut.count())
         + " took effect at any time after their invocation or never";
  }
  s += ": ";
  append_ops(s, h, witness);
  s += ". Longest linearization found (" + std::to_string(longest_linearization.size())
       + " ops): ";
  if (longest_linearization.empty())
    s += "none";
  else
    append_ops(s, h, longest_linearization);
  if (stuck)
    s += "; then " + to_string(h[*stuck]) + " could not follow";
  s += ".";
  return s;
}

std::string check_result::describe(const client_history& h) const {
  std::string s = std::string{to_string(result)} + ": " + std::to_string(partitions)
                  + " partition(s), " + std::to_string(steps) + " steps";
  size_t violations = 0;
  for (const auto& p : problems)
    violations += p.result == verdict::violation ? 1 : 0;
  if (!problems.empty()) {
    s += ", " + std::to_string(violations) + " violating, "
         + std::to_string(problems.size() - violations) + " undecided";
  }
  s += ".";
  for (const auto& p : problems)
    s += "\n" + p.describe(h);
  return s;
}

} // namespace conclave::history
