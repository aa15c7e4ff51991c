#include "runtime/sim/fault_plan.hpp"

#include <algorithm>
#include <charconv>
#include <tuple>

namespace conclave::sim {

namespace {

using namespace std::chrono;

outcome::result<uint64_t, std::string> parse_uint(std::string_view s) {
  auto v = parse_number(s);
  if (!v)
    return "expected a number, got " + quote(s);
  return *v;
}

outcome::result<timestamp, std::string> parse_time(std::string_view s) {
  auto d = parse_duration(s);
  if (!d)
    return d.error();
  return timestamp{d.value()};
}

/// "1-3", "1+4+5", "2" → ids.
outcome::result<std::vector<node_id>, std::string> parse_group(std::string_view s) {
  std::vector<node_id> ids;
  if (auto dash = s.find('-'); dash != std::string_view::npos) {
    auto a = parse_uint(s.substr(0, dash));
    auto b = parse_uint(s.substr(dash + 1));
    if (!a || !b || b.value() < a.value())
      return "expected a node range like 1-3, got " + quote(s);
    for (auto i = a.value(); i <= b.value(); ++i)
      ids.push_back(node_id{i});
    return ids;
  }
  size_t start = 0;
  while (start <= s.size()) {
    auto plus = s.find('+', start);
    auto part = s.substr(start, plus == std::string_view::npos ? s.npos : plus - start);
    auto v = parse_uint(part);
    if (!v)
      return "expected node ids like 1+4+5, got " + quote(s);
    ids.push_back(node_id{v.value()});
    if (plus == std::string_view::npos)
      break;
    start = plus + 1;
  }
  return ids;
}

outcome::result<std::vector<std::vector<node_id>>, std::string>
parse_groups(std::string_view s, char sep) {
  std::vector<std::vector<node_id>> groups;
  size_t start = 0;
  while (true) {
    auto bar = s.find(sep, start);
    auto g = parse_group(s.substr(start, bar == s.npos ? s.npos : bar - start));
    if (!g)
      return g.error();
    groups.push_back(std::move(g.value()));
    if (bar == s.npos)
      break;
    start = bar + 1;
  }
  if (groups.size() < 2)
    return "expected at least two groups separated by '" + std::string(1, sep) + "', got "
           + quote(s);
  return groups;
}

outcome::result<void, std::string> parse_item(std::string_view item, fault_plan& plan) {
  if (auto eq = item.find('='); eq != std::string_view::npos) {
    auto key = item.substr(0, eq);
    auto val = item.substr(eq + 1);
    if (key == "loss" || key == "dup") {
      auto p = parse_probability(val);
      if (!p)
        return std::string{key} + ": " + p.error();
      (key == "loss" ? plan.loss : plan.dup) = p.value();
    } else if (key == "delay") {
      auto d = parse_delay(val);
      if (!d)
        return "delay: " + d.error();
      std::tie(plan.delay_min, plan.delay_max) = d.value();
    } else if (key == "random") {
      auto k = parse_uint(val);
      if (!k || k.value() > 1000)
        return "random: expected a count up to 1000, got " + quote(val);
      plan.random_faults = static_cast<unsigned>(k.value());
    } else if (key == "horizon") {
      auto h = parse_duration(val);
      if (!h)
        return "horizon: " + h.error();
      plan.horizon = h.value();
    } else {
      return "unknown setting " + quote(key)
             + " (expected loss, dup, delay, random or horizon)";
    }
    return outcome::success();
  }
  auto at = item.find('@');
  if (at == std::string_view::npos)
    return "expected KIND@TIME or KEY=VALUE, got " + quote(item);
  auto kind = item.substr(0, at);
  auto rest = item.substr(at + 1);
  auto colon = rest.find(':');
  auto when = rest.substr(0, colon);
  auto arg = colon == rest.npos ? std::string_view{} : rest.substr(colon + 1);
  fault f;
  auto need_node = [&]() -> outcome::result<void, std::string> {
    auto v = parse_uint(arg);
    if (!v || v.value() == 0)
      return std::string{kind} + ": expected :NODE after the time, got " + quote(item);
    f.node = node_id{v.value()};
    return outcome::success();
  };
  auto need_time = [&]() -> outcome::result<void, std::string> {
    auto t = parse_time(when);
    if (!t)
      return std::string{kind} + ": " + t.error();
    f.at = t.value();
    return outcome::success();
  };
  auto need_window = [&]() -> outcome::result<void, std::string> {
    auto w = parse_window(when);
    if (!w)
      return std::string{kind} + ": " + w.error();
    f.at = w.value().first;
    f.until = w.value().second;
    return outcome::success();
  };
  outcome::result<void, std::string> r = outcome::success();
  if (kind == "crash" || kind == "restart" || kind == "elect") {
    f.what = kind == "crash"     ? fault::kind::crash
             : kind == "restart" ? fault::kind::restart
                                 : fault::kind::elect;
    if (!(r = need_time()) || !(r = need_node()))
      return r;
  } else if (kind == "pause") {
    f.what = fault::kind::pause;
    if (!(r = need_window()) || !(r = need_node()))
      return r;
  } else if (kind == "crash-leader" || kind == "restart-leader") {
    f.what =
        kind == "crash-leader" ? fault::kind::crash_leader : fault::kind::restart_leader;
    if (!(r = need_time()))
      return r;
  } else if (kind == "pause-leader") {
    f.what = fault::kind::pause_leader;
    if (!(r = need_window()))
      return r;
  } else if (kind == "partition" || kind == "cut") {
    f.what = kind == "partition" ? fault::kind::partition : fault::kind::cut;
    if (!(r = need_window()))
      return r;
    auto g = parse_groups(arg, kind == "partition" ? '|' : '>');
    if (!g)
      return std::string{kind} + ": " + g.error();
    f.groups = std::move(g.value());
    if (f.what == fault::kind::cut && f.groups.size() != 2)
      return "cut: expected exactly two groups A>B, got " + quote(arg);
  } else if (kind == "heal") {
    auto t = parse_time(when);
    if (!t)
      return "heal: " + t.error();
    plan.heal = t.value();
    return outcome::success();
  } else {
    return "unknown fault " + quote(kind)
           + " (expected crash, restart, pause, crash-leader, restart-leader, "
             "pause-leader, partition, cut, elect or heal)";
  }
  plan.faults.push_back(std::move(f));
  return outcome::success();
}

} // namespace

outcome::result<double, std::string> parse_probability(std::string_view s) {
  try {
    size_t used = 0;
    std::string str{s};
    double v = std::stod(str, &used);
    if (used != str.size() || v < 0 || v > 1)
      throw std::invalid_argument{"range"};
    return v;
  } catch (...) {
    return "expected a probability between 0 and 1, got " + quote(s);
  }
}

outcome::result<std::pair<timestamp, timestamp>, std::string>
parse_window(std::string_view s) {
  auto dash = s.find('-');
  if (dash == std::string_view::npos)
    return "expected a window T1-T2, got " + quote(s);
  auto a = parse_time(s.substr(0, dash));
  if (!a)
    return a.error();
  auto b = parse_time(s.substr(dash + 1));
  if (!b)
    return b.error();
  if (b.value() <= a.value())
    return "window " + quote(s) + " ends before it starts";
  return std::make_pair(a.value(), b.value());
}

outcome::result<std::pair<duration, duration>, std::string>
parse_delay(std::string_view s) {
  auto dots = s.find("..");
  auto lo = parse_duration(s.substr(0, dots));
  if (!lo)
    return lo.error();
  auto hi = lo;
  if (dots != s.npos) {
    hi = parse_duration(s.substr(dots + 2));
    if (!hi)
      return hi.error();
    if (hi.value() < lo.value())
      return "the range " + quote(s) + " is reversed";
  }
  if (lo.value() <= duration{0})
    return "must be positive, got " + quote(s);
  return std::make_pair(lo.value(), hi.value());
}

outcome::result<duration, std::string> parse_duration(std::string_view text) {
  size_t i = 0;
  while (i < text.size()
         && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  auto num = text.substr(0, i);
  auto unit = text.substr(i);
  double v = 0;
  try {
    if (num.empty())
      throw std::invalid_argument{"empty"};
    size_t used = 0;
    v = std::stod(std::string{num}, &used);
    if (used != num.size())
      throw std::invalid_argument{"junk"};
  } catch (...) {
    return "expected a duration like 250ms, got " + quote(text);
  }
  double scale = 0;
  if (unit == "us")
    scale = 1e3;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else
    return "duration " + quote(text) + " needs a unit: us, ms or s";
  return duration{static_cast<int64_t>(v * scale)};
}

outcome::result<void, std::string> for_each_spec_item(
    std::string_view spec,
    const std::function<outcome::result<void, std::string>(std::string_view)>& item) {
  size_t start = 0;
  while (start < spec.size()) {
    auto comma = spec.find(',', start);
    auto part = spec.substr(start, comma == spec.npos ? spec.npos : comma - start);
    while (!part.empty() && part.front() == ' ')
      part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ')
      part.remove_suffix(1);
    if (part.empty())
      return std::string{"empty item in the fault spec (two commas?)"};
    if (auto r = item(part); !r)
      return r.error();
    if (comma == spec.npos)
      break;
    start = comma + 1;
  }
  return outcome::success();
}

outcome::result<fault_plan, std::string> parse_fault_spec(std::string_view spec) {
  fault_plan plan;
  if (auto r = for_each_spec_item(
          spec, [&](std::string_view item) { return parse_item(item, plan); });
      !r)
    return r.error();
  std::stable_sort(plan.faults.begin(), plan.faults.end(),
                   [](const fault& a, const fault& b) { return a.at < b.at; });
  return plan;
}

outcome::result<void, std::string> validate(const fault_plan& plan, size_t nodes) {
  auto check = [&](node_id id) -> outcome::result<void, std::string> {
    if (id.value < 1 || id.value > nodes)
      return "fault names node " + std::to_string(id.value)
             + " but the group has nodes 1.." + std::to_string(nodes);
    return outcome::success();
  };
  for (auto& f : plan.faults) {
    if (f.what == fault::kind::crash || f.what == fault::kind::restart
        || f.what == fault::kind::pause || f.what == fault::kind::elect)
      if (auto r = check(f.node); !r)
        return r;
    for (auto& g : f.groups)
      for (auto id : g)
        if (auto r = check(id); !r)
          return r;
  }
  return outcome::success();
}

timestamp fault_plan::last_fault_end() const {
  return last_end_of(faults);
}

timestamp fault_plan::heal_time() const {
  return heal_time_of(*this);
}

std::string quote(std::string_view text) {
  return "'" + std::string{text} + "'";
}

std::optional<uint64_t> parse_number(std::string_view text) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || p != text.data() + text.size())
    return std::nullopt;
  return v;
}

void add_random_faults(fault_plan& plan, size_t nodes, std::mt19937_64& rng) {
  using ms = std::chrono::milliseconds;
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>{lo, hi}(rng);
  };
  auto horizon_ms =
      std::max<int64_t>(200, std::chrono::duration_cast<ms>(plan.horizon).count());
  for (unsigned i = 0; i < plan.random_faults; ++i) {
    fault f;
    auto start = timestamp{ms{uniform(0, horizon_ms * 3 / 4)}};
    auto end = std::min(timestamp{ms{horizon_ms}},
                        start + ms{uniform(50, std::max<int64_t>(60, horizon_ms / 2))});
    auto some_node = [&] { return node_id{static_cast<uint64_t>(uniform(1, nodes))}; };
    switch (uniform(0, 3)) {
    case 0: { // crash, then restart the same node
      f.what = fault::kind::crash;
      f.at = start;
      f.node = some_node();
      fault r = f;
      r.what = fault::kind::restart;
      r.at = end;
      plan.faults.push_back(f);
      plan.faults.push_back(r);
      continue;
    }
    case 1:
      f.what = fault::kind::pause;
      f.node = some_node();
      break;
    case 2: {
      f.what = fault::kind::partition;
      f.groups.resize(2);
      for (uint64_t n = 1; n <= nodes; ++n)
        f.groups[static_cast<size_t>(uniform(0, 1))].push_back(node_id{n});
      break;
    }
    default: { // crash the leader, restart it later
      f.what = fault::kind::crash_leader;
      f.at = start;
      fault r;
      r.what = fault::kind::restart_leader;
      r.at = end;
      plan.faults.push_back(f);
      plan.faults.push_back(r);
      continue;
    }
    }
    f.at = start;
    f.until = end;
    plan.faults.push_back(std::move(f));
  }
  std::stable_sort(plan.faults.begin(), plan.faults.end(),
                   [](const fault& a, const fault& b) { return a.at < b.at; });
}

} // namespace conclave::sim
