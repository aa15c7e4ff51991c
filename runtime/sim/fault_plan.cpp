#include "runtime/sim/fault_plan.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <tuple>

namespace conclave::sim {

namespace {

using namespace std::chrono;
using k = fault::kind;

/// The longest duration a spec may give: 10^6 s (sums of a few stay far from
/// the 64-bit limit of nanoseconds).
constexpr int64_t max_duration_ns = 1'000'000LL * 1'000'000'000LL;
/// Node ids a spec may name (the largest group `conclave sim` runs).
constexpr uint64_t max_node_id = 10000;

// -- the words ----------------------------------------------------------------

constexpr std::array<std::string_view, fault_word_count> word_names{
    "crash",     "restart", "pause", "crash-leader", "restart-leader", "pause-leader",
    "partition", "cut",     "elect", "disk-stall",   "fsync-loss",     "bitflip",
    "fail",      "reject",  "hang",  "slow",         "cancel",         "heal",
    "loss",      "dup",     "delay", "drift",        "random",         "horizon"};

/// Why a workload does not take a word (empty: it takes it).
std::string_view why_not(fault_word word, workload w) {
  using fw = fault_word;
  switch (word) {
  case fw::disk_stall:
  case fw::fsync_loss:
  case fw::bitflip:
    switch (w) {
    case workload::election:
      return "it has no disk";
    case workload::replication:
    case workload::lease: // the same nodes and disks
    case workload::jobs:
      return "";
    }
    return "";
  case fw::drift:
    return "";
  case fw::fail:
  case fw::reject:
  case fw::hang:
  case fw::slow:
  case fw::cancel:
    return w == workload::jobs ? "" : "it has no service and no jobs";
  default:
    return "";
  }
}

/// The timed words (`w`'s, or all), for "unknown fault".
std::string words_list(std::optional<workload> w) {
  std::string s;
  for (size_t i = 0; i <= static_cast<size_t>(fault_word::heal); ++i) {
    auto word = static_cast<fault_word>(i);
    if (w && !applies(word, *w))
      continue;
    s += (s.empty() ? "" : ", ") + std::string{word_names[i]};
  }
  return s;
}

// -- numbers and durations -------------------------------------------------------

bool all_digits(std::string_view s) {
  return !s.empty()
         && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

/// "0.05", "1", "0.000001" (plain decimal: digits, an optional fraction) →
/// double, rounded correctly.
std::optional<double> parse_decimal(std::string_view s) {
  auto dot = s.find('.');
  auto whole = s.substr(0, dot);
  if (!all_digits(whole))
    return std::nullopt;
  if (dot != s.npos && !all_digits(s.substr(dot + 1)))
    return std::nullopt;
  double v = 0;
  auto [p, ec] =
      std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::fixed);
  if (ec != std::errc{} || p != s.data() + s.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

/// The shortest plain decimal that parse_decimal reads back as `v`.
std::string format_decimal(double v) {
  std::array<char, 400> buf{};
  auto [p, ec] =
      std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::fixed);
  if (ec != std::errc{})
    return "?";
  return std::string(buf.data(), p);
}

outcome::result<node_id, std::string> parse_node(std::string_view s) {
  auto v = parse_number(s);
  if (!v || *v == 0 || *v > max_node_id)
    return "expected a node id from 1 to " + std::to_string(max_node_id) + ", got "
           + quote(s);
  return node_id{*v};
}

outcome::result<timestamp, std::string> parse_time(std::string_view s) {
  auto d = parse_duration(s);
  if (!d)
    return d.error();
  return timestamp{d.value()};
}

// -- groups -------------------------------------------------------------------

/// "1-3", "1+4+5", "2" → ids.
outcome::result<std::vector<node_id>, std::string> parse_group(std::string_view s) {
  std::vector<node_id> ids;
  if (auto dash = s.find('-'); dash != std::string_view::npos) {
    auto a = parse_node(s.substr(0, dash));
    auto b = parse_node(s.substr(dash + 1));
    if (!a || !b || b.value() < a.value())
      return "expected a node range like 1-3, got " + quote(s);
    for (auto i = a.value().value; i <= b.value().value; ++i)
      ids.push_back(node_id{i});
    return ids;
  }
  size_t start = 0;
  while (true) {
    auto plus = s.find('+', start);
    auto part = s.substr(start, plus == std::string_view::npos ? s.npos : plus - start);
    auto v = parse_node(part);
    if (!v)
      return "expected node ids like 1+4+5 (from 1 to " + std::to_string(max_node_id)
             + "), got " + quote(s);
    ids.push_back(v.value());
    if (plus == std::string_view::npos)
      break;
    start = plus + 1;
  }
  return ids;
}

outcome::result<std::vector<std::vector<node_id>>, std::string>
parse_groups(std::string_view s, char sep, size_t at_least) {
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
  if (groups.size() < at_least)
    return "expected at least two groups separated by '" + std::string(1, sep) + "', got "
           + quote(s);
  return groups;
}

std::string format_group(const std::vector<node_id>& g) {
  bool run = g.size() >= 2;
  for (size_t i = 1; run && i < g.size(); ++i)
    run = g[i].value == g[i - 1].value + 1;
  if (run)
    return std::to_string(g.front().value) + "-" + std::to_string(g.back().value);
  std::string s;
  for (auto& n : g)
    s += (s.empty() ? "" : "+") + std::to_string(n.value);
  return s;
}

/// "agent2", "scheduler1", "supervisor3", "service" → role and number.
std::optional<std::pair<fault::role, uint64_t>> parse_actor(std::string_view s) {
  using role = fault::role;
  if (s == "service")
    return std::make_pair(role::service, uint64_t{0});
  for (auto [name, r] : {std::pair{std::string_view{"agent"}, role::agent},
                         std::pair{std::string_view{"scheduler"}, role::scheduler},
                         std::pair{std::string_view{"supervisor"}, role::supervisor}}) {
    if (s.substr(0, name.size()) == name) {
      auto v = parse_number(s.substr(name.size()));
      if (!v || *v == 0)
        return std::nullopt;
      return std::make_pair(r, *v);
    }
  }
  return std::nullopt;
}

bool names_nodes(workload w) {
  return w != workload::jobs;
}

// -- one item --------------------------------------------------------------------

outcome::result<fault_word, std::string> parse_setting(std::string_view key,
                                                       std::string_view val,
                                                       fault_plan& plan,
                                                       std::optional<workload> w) {
  auto word = fault_word_named(key);
  auto setting = [](fault_word x) {
    return x == fault_word::loss || x == fault_word::dup || x == fault_word::delay
           || x == fault_word::drift || x == fault_word::slow || x == fault_word::random
           || x == fault_word::horizon;
  };
  if (word && !setting(*word))
    return quote(key) + " is written " + std::string{key} + "@TIME, not "
           + std::string{key} + "=VALUE";
  if (!word) {
    std::string known = "loss, dup, delay, random, horizon";
    if (!w || applies(fault_word::drift, *w))
      known += ", drift";
    if (!w || applies(fault_word::slow, *w))
      known += ", slow";
    return "unknown setting " + quote(key) + " (expected " + known + ")";
  }
  std::string name{key};
  switch (*word) {
  case fault_word::loss:
  case fault_word::dup: {
    auto p = parse_probability(val);
    if (!p)
      return name + ": " + p.error();
    (*word == fault_word::loss ? plan.loss : plan.dup) = p.value();
    break;
  }
  case fault_word::delay: {
    auto d = parse_delay(val);
    if (!d)
      return "delay: " + d.error();
    std::tie(plan.delay_min, plan.delay_max) = d.value();
    break;
  }
  case fault_word::drift: {
    auto r = parse_decimal(val);
    if (!r || *r > 0.5)
      return "drift: expected a clock rate error between 0 and 0.5 like 0.001, got "
             + quote(val);
    plan.drift = *r;
    break;
  }
  case fault_word::slow:
  case fault_word::horizon: {
    auto d = parse_duration(val);
    if (!d)
      return name + ": " + d.error();
    if (d.value() <= duration{0})
      return name + ": must be positive, got " + quote(val);
    (*word == fault_word::slow ? plan.slow : plan.horizon) = d.value();
    break;
  }
  default: { // random
    auto n = parse_number(val);
    if (!n || *n > 1000)
      return "random: expected a count up to 1000, got " + quote(val);
    plan.random_faults = static_cast<unsigned>(*n);
    break;
  }
  }
  return *word;
}

/// Parses one item into `plan`; returns its word. With a workload, crash and
/// restart targets are the ones it has, and errors speak of it.
outcome::result<fault_word, std::string>
parse_item(std::string_view item, fault_plan& plan, std::optional<workload> w) {
  if (auto eq = item.find('='); eq != std::string_view::npos)
    return parse_setting(item.substr(0, eq), item.substr(eq + 1), plan, w);
  auto at = item.find('@');
  if (at == std::string_view::npos)
    return "expected KIND@TIME or KEY=VALUE, got " + quote(item);
  auto kind = item.substr(0, at);
  auto rest = item.substr(at + 1);
  auto colon = rest.find(':');
  auto when = rest.substr(0, colon);
  bool has_arg = colon != rest.npos;
  auto arg = has_arg ? rest.substr(colon + 1) : std::string_view{};
  auto word = fault_word_named(kind);
  if (!word || *word == fault_word::loss || *word == fault_word::dup
      || *word == fault_word::delay || *word == fault_word::drift
      || *word == fault_word::random || *word == fault_word::horizon) {
    if (word)
      return quote(kind) + " is a setting: write " + std::string{kind} + "=VALUE";
    return "unknown fault " + quote(kind) + " (expected one of " + words_list(w) + ")";
  }
  std::string name{kind};
  fault f;
  auto need_time = [&]() -> outcome::result<void, std::string> {
    auto t = parse_time(when);
    if (!t)
      return name + ": " + t.error();
    f.at = t.value();
    return outcome::success();
  };
  auto need_window = [&]() -> outcome::result<void, std::string> {
    auto win = parse_window(when);
    if (!win)
      return name + ": " + win.error();
    std::tie(f.at, f.until) = win.value();
    return outcome::success();
  };
  auto need_node = [&]() -> outcome::result<void, std::string> {
    auto n = parse_node(arg);
    if (!has_arg || !n)
      return name + ": expected :NODE (a node id from 1) after the time, got "
             + quote(item);
    f.node = n.value();
    return outcome::success();
  };
  auto no_arg = [&]() -> outcome::result<void, std::string> {
    if (has_arg)
      return name + ": takes no target, got " + quote(item);
    return outcome::success();
  };
  outcome::result<void, std::string> r = outcome::success();
  switch (*word) {
  case fault_word::crash:
  case fault_word::restart: {
    f.what = *word == fault_word::crash ? k::crash : k::restart;
    if (!(r = need_time()))
      return r.error();
    auto actor = parse_actor(arg);
    auto n = parse_node(arg);
    bool nodes_ok = !w || names_nodes(*w);
    bool actors_ok = !w || !names_nodes(*w);
    if (has_arg && nodes_ok && n) {
      f.node = n.value();
    } else if (has_arg && actors_ok && actor) {
      std::tie(f.target, f.number) = *actor;
    } else if (!nodes_ok) {
      return name
             + ": the jobs workload names :agentN, :schedulerN, :supervisorN or "
               ":service after the time, got "
             + quote(item);
    } else if (!actors_ok) {
      return name + ": expected :NODE (a node id from 1) after the time, got "
             + quote(item);
    } else {
      return name
             + ": expected :NODE (a node id from 1), :agentN, :schedulerN, "
               ":supervisorN or :service after the time, got "
             + quote(item);
    }
    break;
  }
  case fault_word::pause:
  case fault_word::disk_stall:
    f.what = *word == fault_word::pause ? k::pause : k::disk_stall;
    if (!(r = need_window()) || !(r = need_node()))
      return r.error();
    break;
  case fault_word::elect:
  case fault_word::fsync_loss:
  case fault_word::bitflip:
    f.what = *word == fault_word::elect        ? k::elect
             : *word == fault_word::fsync_loss ? k::fsync_loss
                                               : k::bitflip;
    if (!(r = need_time()) || !(r = need_node()))
      return r.error();
    break;
  case fault_word::crash_leader:
  case fault_word::restart_leader:
    f.what = *word == fault_word::crash_leader ? k::crash_leader : k::restart_leader;
    if (!(r = need_time()) || !(r = no_arg()))
      return r.error();
    break;
  case fault_word::pause_leader:
    f.what = k::pause_leader;
    if (!(r = need_window()) || !(r = no_arg()))
      return r.error();
    break;
  case fault_word::partition:
  case fault_word::cut: {
    f.what = *word == fault_word::partition ? k::partition : k::cut;
    if (!(r = need_window()))
      return r.error();
    // A partition may list one group: every node not listed is alone.
    auto g =
        f.what == k::partition ? parse_groups(arg, '|', 1) : parse_groups(arg, '>', 2);
    if (!has_arg || !g)
      return name + ": "
             + (has_arg ? g.error()
                        : std::string{"expected :GROUPS after the window, got "}
                              + quote(item));
    f.groups = std::move(g.value());
    if (f.what == k::cut && f.groups.size() != 2)
      return "cut: expected exactly two groups A>B, got " + quote(arg);
    break;
  }
  case fault_word::fail:
  case fault_word::reject:
  case fault_word::hang:
  case fault_word::slow:
    f.what = *word == fault_word::fail     ? k::fail
             : *word == fault_word::reject ? k::reject
             : *word == fault_word::hang   ? k::hang
                                           : k::slow;
    if (!(r = need_window()))
      return r.error();
    if (has_arg) {
      auto p = parse_probability(arg);
      if (!p)
        return name + ": " + p.error();
      f.probability = p.value();
    }
    break;
  case fault_word::cancel: {
    f.what = k::cancel;
    if (!(r = need_time()))
      return r.error();
    auto n = parse_number(arg);
    if (!has_arg || !n || *n == 0)
      return "cancel: expected :N (a job number from 1) after the time, got "
             + quote(item);
    f.number = *n;
    break;
  }
  default: { // heal
    auto t = parse_time(when);
    if (!t)
      return "heal: " + t.error();
    if (!(r = no_arg()))
      return r.error();
    plan.heal = t.value();
    return fault_word::heal;
  }
  }
  plan.faults.push_back(std::move(f));
  return *word;
}

outcome::result<fault_plan, std::string> parse_spec(std::string_view spec,
                                                    std::optional<workload> w) {
  fault_plan plan = default_plan(w.value_or(workload::election));
  if (auto r = for_each_spec_item(
          spec,
          [&](std::string_view item) -> outcome::result<void, std::string> {
            // A word the workload does not take is refused before its syntax
            // is looked at.
            auto named = fault_word_named(item.substr(0, item.find_first_of("@=")));
            if (w && named && !applies(*named, *w))
              return quote(to_string(*named)) + " does not apply to the "
                     + std::string{to_string(*w)}
                     + " workload: " + std::string{why_not(*named, *w)};
            auto word = parse_item(item, plan, w);
            if (!word)
              return word.error();
            return outcome::success();
          });
      !r)
    return r.error();
  std::stable_sort(plan.faults.begin(), plan.faults.end(),
                   [](const fault& a, const fault& b) { return a.at < b.at; });
  return plan;
}

} // namespace

// -- words ------------------------------------------------------------------------

std::string_view to_string(workload w) {
  switch (w) {
  case workload::election:
    return "election";
  case workload::jobs:
    return "jobs";
  case workload::replication:
    return "replication";
  case workload::lease:
    return "lease";
  }
  return "?";
}

std::string_view to_string(fault_word w) {
  return word_names.at(static_cast<size_t>(w));
}

std::optional<fault_word> fault_word_named(std::string_view name) {
  for (size_t i = 0; i < fault_word_count; ++i)
    if (word_names[i] == name)
      return static_cast<fault_word>(i);
  return std::nullopt;
}

fault_word word_of(fault::kind kind) {
  switch (kind) {
  case k::crash:
    return fault_word::crash;
  case k::restart:
    return fault_word::restart;
  case k::pause:
    return fault_word::pause;
  case k::crash_leader:
    return fault_word::crash_leader;
  case k::restart_leader:
    return fault_word::restart_leader;
  case k::pause_leader:
    return fault_word::pause_leader;
  case k::partition:
    return fault_word::partition;
  case k::cut:
    return fault_word::cut;
  case k::elect:
    return fault_word::elect;
  case k::disk_stall:
    return fault_word::disk_stall;
  case k::fsync_loss:
    return fault_word::fsync_loss;
  case k::bitflip:
    return fault_word::bitflip;
  case k::fail:
    return fault_word::fail;
  case k::reject:
    return fault_word::reject;
  case k::hang:
    return fault_word::hang;
  case k::slow:
    return fault_word::slow;
  case k::cancel:
    return fault_word::cancel;
  }
  return fault_word::crash;
}

bool applies(fault_word word, workload w) {
  return why_not(word, w).empty();
}

std::vector<fault_word> words_of(workload w) {
  std::vector<fault_word> words;
  for (size_t i = 0; i < fault_word_count; ++i)
    if (applies(static_cast<fault_word>(i), w))
      words.push_back(static_cast<fault_word>(i));
  return words;
}

fault_plan default_plan(workload w) {
  fault_plan plan;
  if (w == workload::jobs)
    plan.horizon = milliseconds(300);
  return plan;
}

// -- parsing ------------------------------------------------------------------------

outcome::result<fault_plan, std::string> parse_fault_spec(std::string_view spec) {
  return parse_spec(spec, std::nullopt);
}

outcome::result<fault_plan, std::string> parse_fault_spec(std::string_view spec,
                                                          workload w) {
  return parse_spec(spec, w);
}

outcome::result<double, std::string> parse_probability(std::string_view s) {
  auto v = parse_decimal(s);
  if (!v || *v > 1)
    return "expected a probability between 0 and 1 like 0.05, got " + quote(s);
  return *v;
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
  while (i < text.size() && text[i] >= '0' && text[i] <= '9')
    ++i;
  auto whole = text.substr(0, i);
  std::string_view frac;
  if (i < text.size() && text[i] == '.') {
    size_t j = ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9')
      ++i;
    frac = text.substr(j, i - j);
    if (frac.empty())
      whole = {};
  }
  auto unit = text.substr(i);
  if (whole.empty() && frac.empty())
    return "expected a duration like 250ms, got " + quote(text);
  int64_t scale = 0;
  int digits = 0; // decimal digits of the scale
  if (unit == "us")
    scale = 1'000, digits = 3;
  else if (unit == "ms")
    scale = 1'000'000, digits = 6;
  else if (unit == "s")
    scale = 1'000'000'000, digits = 9;
  else
    return "duration " + quote(text) + " needs a unit: us, ms or s";
  auto too_long = [&] {
    return "duration " + quote(text) + " is too long (at most 1000000s)";
  };
  int64_t ns = 0;
  for (char c : whole) {
    if (ns > max_duration_ns / scale)
      return too_long();
    ns = ns * 10 + (c - '0');
  }
  if (ns > max_duration_ns / scale)
    return too_long();
  ns *= scale;
  int64_t place = scale;
  for (size_t p = 0; p < frac.size(); ++p) {
    int d = frac[p] - '0';
    if (static_cast<int>(p) >= digits) {
      if (d != 0)
        return "duration " + quote(text) + " is finer than 1 ns";
      continue;
    }
    place /= 10;
    ns += d * place;
  }
  if (ns > max_duration_ns)
    return too_long();
  return duration{ns};
}

std::string format_duration(duration d) {
  auto ns = d.count();
  if (ns % 1'000'000 == 0)
    return std::to_string(ns / 1'000'000) + "ms";
  if (ns % 1'000 == 0)
    return std::to_string(ns / 1'000) + "us";
  auto frac = std::to_string(ns % 1'000);
  frac.insert(0, 3 - frac.size(), '0');
  while (frac.back() == '0')
    frac.pop_back();
  return std::to_string(ns / 1'000) + "." + frac + "us";
}

outcome::result<void, std::string> for_each_spec_item(
    std::string_view spec,
    const std::function<outcome::result<void, std::string>(std::string_view)>& item) {
  auto blank = std::all_of(spec.begin(), spec.end(), [](char c) { return c == ' '; });
  if (blank)
    return outcome::success();
  size_t start = 0;
  while (true) {
    auto comma = spec.find(',', start);
    auto part = spec.substr(start, comma == spec.npos ? spec.npos : comma - start);
    while (!part.empty() && part.front() == ' ')
      part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ')
      part.remove_suffix(1);
    if (part.empty())
      return std::string{"empty item in the fault spec (two commas, or one at an end?)"};
    if (auto r = item(part); !r)
      return r.error();
    if (comma == spec.npos)
      break;
    start = comma + 1;
  }
  return outcome::success();
}

// -- printing -----------------------------------------------------------------------

std::string to_spec(const fault& f) {
  auto word = std::string{to_string(word_of(f.what))};
  auto time = format_duration(f.at);
  auto window = time + "-" + format_duration(f.until);
  auto node = std::to_string(f.node.value);
  switch (f.what) {
  case k::crash:
  case k::restart: {
    std::string target;
    switch (f.target) {
    case fault::role::node:
      target = node;
      break;
    case fault::role::agent:
      target = "agent" + std::to_string(f.number);
      break;
    case fault::role::scheduler:
      target = "scheduler" + std::to_string(f.number);
      break;
    case fault::role::supervisor:
      target = "supervisor" + std::to_string(f.number);
      break;
    case fault::role::service:
      target = "service";
      break;
    }
    return word + "@" + time + ":" + target;
  }
  case k::pause:
  case k::disk_stall:
    return word + "@" + window + ":" + node;
  case k::elect:
  case k::fsync_loss:
  case k::bitflip:
    return word + "@" + time + ":" + node;
  case k::crash_leader:
  case k::restart_leader:
    return word + "@" + time;
  case k::pause_leader:
    return word + "@" + window;
  case k::partition:
  case k::cut: {
    auto s = word + "@" + window + ":";
    for (size_t i = 0; i < f.groups.size(); ++i)
      s += (i ? (f.what == k::cut ? ">" : "|") : "") + format_group(f.groups[i]);
    return s;
  }
  case k::fail:
  case k::reject:
  case k::hang:
  case k::slow:
    return word + "@" + window
           + (f.probability == 1 ? "" : ":" + format_decimal(f.probability));
  case k::cancel:
    return word + "@" + time + ":" + std::to_string(f.number);
  }
  return "?";
}

std::string to_spec(const fault_plan& plan, workload w) {
  auto defaults = default_plan(w);
  std::vector<std::string> items;
  if (plan.loss != defaults.loss)
    items.push_back("loss=" + format_decimal(plan.loss));
  if (plan.dup != defaults.dup)
    items.push_back("dup=" + format_decimal(plan.dup));
  if (plan.delay_min != defaults.delay_min || plan.delay_max != defaults.delay_max)
    items.push_back("delay=" + format_duration(plan.delay_min)
                    + (plan.delay_max == plan.delay_min
                           ? ""
                           : ".." + format_duration(plan.delay_max)));
  if (plan.drift)
    items.push_back("drift=" + format_decimal(*plan.drift));
  if (plan.slow != defaults.slow)
    items.push_back("slow=" + format_duration(plan.slow));
  if (plan.random_faults != 0)
    items.push_back("random=" + std::to_string(plan.random_faults));
  if (plan.horizon != defaults.horizon)
    items.push_back("horizon=" + format_duration(plan.horizon));
  for (auto& f : plan.faults)
    items.push_back(to_spec(f));
  if (plan.heal)
    items.push_back("heal@" + format_duration(*plan.heal));
  std::string s;
  for (auto& i : items)
    s += (s.empty() ? "" : ",") + i;
  return s;
}

std::string replay_spec(const fault_plan& drawn, workload w) {
  auto plan = drawn;
  plan.random_faults = 0;
  return to_spec(plan, w);
}

// -- checks -------------------------------------------------------------------------

outcome::result<void, std::string> validate(const fault_plan& plan, size_t nodes) {
  auto check = [&](node_id id) -> outcome::result<void, std::string> {
    if (id.value < 1 || id.value > nodes)
      return "fault names node " + std::to_string(id.value)
             + " but the group has nodes 1.." + std::to_string(nodes);
    return outcome::success();
  };
  for (auto& f : plan.faults) {
    switch (f.what) {
    case k::crash:
    case k::restart:
      if (f.target != fault::role::node)
        break;
      [[fallthrough]];
    case k::pause:
    case k::elect:
    case k::disk_stall:
    case k::fsync_loss:
    case k::bitflip:
      if (auto r = check(f.node); !r)
        return r;
      break;
    default:
      break;
    }
    std::vector<node_id> seen;
    for (auto& g : f.groups)
      for (auto id : g) {
        if (auto r = check(id); !r)
          return r;
        seen.push_back(id);
      }
    std::sort(seen.begin(), seen.end());
    if (auto twice = std::adjacent_find(seen.begin(), seen.end()); twice != seen.end())
      return to_spec(f) + " names node " + std::to_string(twice->value)
             + " twice; a node is in one group";
  }
  return outcome::success();
}

outcome::result<void, std::string> validate_disk(const fault_plan& plan, disk_kind disk) {
  if (disk == disk_kind::memory)
    for (auto& f : plan.faults)
      if (f.what == k::bitflip)
        return std::string{"fault 'bitflip' needs --disk files: the memory disk keeps "
                           "records, not bytes"};
  return outcome::success();
}

void complete_partitions(fault_plan& plan, size_t nodes) {
  for (auto& f : plan.faults) {
    if (f.what != k::partition)
      continue;
    std::vector<bool> listed(nodes + 1, false);
    for (auto& g : f.groups)
      for (auto id : g)
        if (id.value <= nodes)
          listed[id.value] = true;
    for (uint64_t n = 1; n <= nodes; ++n)
      if (!listed[n])
        f.groups.push_back({node_id{n}});
  }
}

bool operator==(const fault& a, const fault& b) {
  return a.what == b.what && a.at == b.at && a.until == b.until && a.node == b.node
         && a.groups == b.groups && a.target == b.target && a.number == b.number
         && a.probability == b.probability;
}

bool operator==(const fault_plan& a, const fault_plan& b) {
  return a.faults == b.faults && a.loss == b.loss && a.dup == b.dup
         && a.delay_min == b.delay_min && a.delay_max == b.delay_max
         && a.random_faults == b.random_faults && a.horizon == b.horizon
         && a.heal == b.heal && a.drift == b.drift && a.slow == b.slow;
}

timestamp fault_plan::last_fault_end() const {
  return last_end_of(faults);
}

timestamp fault_plan::heal_time() const {
  return heal_time_of(*this);
}

std::string quote(std::string_view text) {
  constexpr size_t longest = 60;
  std::string s = "'";
  for (size_t i = 0; i < text.size() && i < longest; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      s += static_cast<char>(c);
    } else {
      static constexpr char hex[] = "0123456789abcdef";
      s += "\\x";
      s += hex[c >> 4];
      s += hex[c & 15];
    }
  }
  if (text.size() > longest)
    s += "...";
  return s + "'";
}

std::optional<uint64_t> parse_number(std::string_view text) {
  uint64_t v = 0;
  if (!all_digits(text))
    return std::nullopt;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size())
    return std::nullopt;
  return v;
}

void draw_groups(fault& f, size_t nodes, std::mt19937_64& rng) {
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>{lo, hi}(rng);
  };
  auto n_nodes = static_cast<int64_t>(nodes);
  f.groups.assign(2, {});
  if (f.what == k::partition) {
    for (int64_t n = 1; n <= n_nodes; ++n)
      f.groups[static_cast<size_t>(uniform(0, 1))].push_back(
          node_id{static_cast<uint64_t>(n)});
    // All on one side: one group (nothing is cut), as the spec writes it.
    f.groups.erase(std::remove_if(f.groups.begin(), f.groups.end(),
                                  [](auto& g) { return g.empty(); }),
                   f.groups.end());
    return;
  }
  // A cut: each node sends from the cut side, receives on it, or neither;
  // both sides hold one node at least.
  auto from = uniform(1, n_nodes);
  auto to = uniform(1, n_nodes - 1);
  if (to >= from)
    ++to;
  for (int64_t n = 1; n <= n_nodes; ++n) {
    auto side = n == from ? 0 : n == to ? 1 : uniform(0, 2);
    if (side < 2)
      f.groups[static_cast<size_t>(side)].push_back(node_id{static_cast<uint64_t>(n)});
  }
}

void add_random_faults(fault_plan& plan, size_t nodes, std::mt19937_64& rng, workload w,
                       bool files_disk) {
  using ms = std::chrono::milliseconds;
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>{lo, hi}(rng);
  };
  auto horizon_ms =
      std::max<int64_t>(200, std::chrono::duration_cast<ms>(plan.horizon).count());
  // What can be drawn: every timed word the workload applies (restarts come
  // with the crashes), the disk's only on a disk that keeps bytes.
  std::vector<k> kinds{k::crash,        k::pause,        k::partition,
                       k::crash_leader, k::pause_leader, k::elect};
  if (nodes > 1) // a cut needs a node on each side
    kinds.push_back(k::cut);
  if (applies(fault_word::disk_stall, w))
    kinds.push_back(k::disk_stall);
  if (files_disk && applies(fault_word::fsync_loss, w))
    kinds.push_back(k::fsync_loss);
  if (files_disk && applies(fault_word::bitflip, w))
    kinds.push_back(k::bitflip);
  for (unsigned i = 0; i < plan.random_faults; ++i) {
    fault f;
    auto start = timestamp{ms{uniform(0, horizon_ms * 3 / 4)}};
    auto end = std::min(timestamp{ms{horizon_ms}},
                        start + ms{uniform(50, std::max<int64_t>(60, horizon_ms / 2))});
    auto some_node = [&] { return node_id{static_cast<uint64_t>(uniform(1, nodes))}; };
    // Faults at `start` on one node (drawn now), then its restart at `end`.
    auto down_then_restart = [&](std::initializer_list<fault::kind> what) {
      f.at = start;
      f.node = some_node();
      for (auto kind : what) {
        f.what = kind;
        plan.faults.push_back(f);
      }
      fault r = f;
      r.what = k::restart;
      r.at = end;
      plan.faults.push_back(r);
    };
    f.what =
        kinds[static_cast<size_t>(uniform(0, static_cast<int64_t>(kinds.size()) - 1))];
    switch (f.what) {
    case k::fsync_loss: // the power goes during a sync; the node restarts later
      down_then_restart({k::fsync_loss});
      continue;
    case k::bitflip: // a bit flips; the node crashes and finds it when it restarts
      down_then_restart({k::bitflip, k::crash});
      continue;
    case k::crash: // crash, then restart the same node
      down_then_restart({k::crash});
      continue;
    case k::elect: // one node starts an election, as if it lost its leader
      f.at = start;
      f.node = some_node();
      plan.faults.push_back(f);
      continue;
    case k::pause:
    case k::disk_stall:
      f.node = some_node();
      break;
    case k::pause_leader:
      break;
    case k::partition:
    case k::cut:
      draw_groups(f, nodes, rng);
      break;
    default: { // crash the leader, restart it later
      f.what = k::crash_leader;
      f.at = start;
      fault r;
      r.what = k::restart_leader;
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
