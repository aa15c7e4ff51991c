#include "runtime/sim/jobs_faults.hpp"

#include <algorithm>
#include <tuple>

namespace conclave::sim {

namespace {

using namespace std::chrono;

/// "agent2", "scheduler1", "supervisor3", "service" → role and number.
outcome::result<std::pair<jobs_fault::role, uint64_t>, std::string>
parse_target(std::string_view kind, std::string_view s) {
  using role = jobs_fault::role;
  if (s == "service")
    return std::make_pair(role::service, uint64_t{0});
  for (auto [name, r] :
       {std::pair{"agent", role::agent}, std::pair{"scheduler", role::scheduler},
        std::pair{"supervisor", role::supervisor}}) {
    std::string_view n{name};
    if (s.substr(0, n.size()) == n) {
      auto v = parse_number(s.substr(n.size()));
      if (!v || *v == 0)
        break;
      return std::make_pair(r, *v);
    }
  }
  return std::string{kind}
         + ": expected :agentN, :schedulerN, :supervisorN or :service after the time, "
           "got "
         + quote(s);
}

outcome::result<void, std::string>
parse_setting(std::string_view key, std::string_view val, jobs_fault_plan& plan) {
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
  } else if (key == "slow" || key == "horizon") {
    auto d = parse_duration(val);
    if (!d)
      return std::string{key} + ": " + d.error();
    if (d.value() <= duration{0})
      return std::string{key} + ": must be positive, got " + quote(val);
    (key == "slow" ? plan.slow : plan.horizon) = d.value();
  } else if (key == "random") {
    auto k = parse_number(val);
    if (!k || *k > 1000)
      return "random: expected a count up to 1000, got " + quote(val);
    plan.random_faults = static_cast<unsigned>(*k);
  } else {
    return "unknown setting " + quote(key)
           + " (expected loss, dup, delay, slow, random or horizon)";
  }
  return outcome::success();
}

outcome::result<void, std::string> parse_item(std::string_view item,
                                              jobs_fault_plan& plan) {
  if (auto eq = item.find('='); eq != std::string_view::npos)
    return parse_setting(item.substr(0, eq), item.substr(eq + 1), plan);
  auto at = item.find('@');
  if (at == std::string_view::npos)
    return "expected KIND@TIME or KEY=VALUE, got " + quote(item);
  auto kind = item.substr(0, at);
  auto rest = item.substr(at + 1);
  auto colon = rest.find(':');
  auto when = rest.substr(0, colon);
  auto arg = colon == rest.npos ? std::string_view{} : rest.substr(colon + 1);
  bool has_arg = colon != rest.npos;
  auto time_of = [&](std::string_view s) -> outcome::result<timestamp, std::string> {
    auto d = parse_duration(s);
    if (!d)
      return std::string{kind} + ": " + d.error();
    return timestamp{d.value()};
  };
  auto no_arg = [&]() -> outcome::result<void, std::string> {
    if (has_arg)
      return std::string{kind} + ": takes no target, got " + quote(item);
    return outcome::success();
  };
  jobs_fault f;
  using k = jobs_fault::kind;
  if (kind == "crash" || kind == "restart") {
    f.what = kind == "crash" ? k::crash : k::restart;
    auto t = time_of(when);
    if (!t)
      return t.error();
    f.at = t.value();
    auto target = parse_target(kind, arg);
    if (!target)
      return target.error();
    std::tie(f.target, f.number) = target.value();
  } else if (kind == "crash-leader" || kind == "restart-leader") {
    f.what = kind == "crash-leader" ? k::crash_leader : k::restart_leader;
    auto t = time_of(when);
    if (!t)
      return t.error();
    f.at = t.value();
    f.target = jobs_fault::role::supervisor;
    if (auto r = no_arg(); !r)
      return r;
  } else if (kind == "fail" || kind == "reject" || kind == "hang" || kind == "slow") {
    f.what = kind == "fail"     ? k::fail
             : kind == "reject" ? k::reject
             : kind == "hang"   ? k::hang
                                : k::slow;
    f.target = jobs_fault::role::service;
    auto w = parse_window(when);
    if (!w)
      return std::string{kind} + ": " + w.error();
    std::tie(f.at, f.until) = w.value();
    if (has_arg) {
      auto p = parse_probability(arg);
      if (!p)
        return std::string{kind} + ": " + p.error();
      f.probability = p.value();
    }
  } else if (kind == "cancel") {
    f.what = k::cancel;
    auto t = time_of(when);
    if (!t)
      return t.error();
    f.at = t.value();
    auto n = parse_number(arg);
    if (!n || *n == 0)
      return "cancel: expected :N (a job number from 1) after the time, got "
             + quote(item);
    f.number = *n;
  } else if (kind == "heal") {
    auto t = time_of(when);
    if (!t)
      return t.error();
    plan.heal = t.value();
    return no_arg();
  } else if (kind == "pause" || kind == "pause-leader" || kind == "partition"
             || kind == "cut" || kind == "elect") {
    return quote(kind)
           + " is a fault of the election workload; the jobs workload has crash, "
             "restart, crash-leader, restart-leader, fail, reject, hang, slow, cancel "
             "and heal";
  } else {
    return "unknown fault " + quote(kind)
           + " (expected crash, restart, crash-leader, restart-leader, fail, reject, "
             "hang, slow, cancel or heal)";
  }
  plan.faults.push_back(f);
  return outcome::success();
}

void sort_by_time(jobs_fault_plan& plan) {
  std::stable_sort(plan.faults.begin(), plan.faults.end(),
                   [](const jobs_fault& a, const jobs_fault& b) { return a.at < b.at; });
}

} // namespace

outcome::result<jobs_fault_plan, std::string>
parse_jobs_fault_spec(std::string_view spec) {
  jobs_fault_plan plan;
  if (auto r = for_each_spec_item(
          spec, [&](std::string_view item) { return parse_item(item, plan); });
      !r)
    return r.error();
  sort_by_time(plan);
  return plan;
}

outcome::result<void, std::string> validate(const jobs_fault_plan& plan,
                                            const jobs_shape& shape) {
  using role = jobs_fault::role;
  for (auto& f : plan.faults) {
    if (f.what == jobs_fault::kind::cancel) {
      if (f.number > shape.jobs)
        return "cancel names job " + std::to_string(f.number)
               + " but the run has jobs 1.." + std::to_string(shape.jobs);
      continue;
    }
    size_t count = 0;
    const char* name = "";
    switch (f.target) {
    case role::agent:
      count = shape.agents, name = "agent";
      break;
    case role::scheduler:
      count = shape.schedulers, name = "scheduler";
      break;
    case role::supervisor:
      count = shape.supervisors, name = "supervisor";
      break;
    default:
      continue;
    }
    if (f.what == jobs_fault::kind::crash_leader
        || f.what == jobs_fault::kind::restart_leader)
      continue;
    if (f.number > count)
      return std::string{"fault names "} + name + std::to_string(f.number)
             + " but the run has " + name + "s 1.." + std::to_string(count);
  }
  return outcome::success();
}

std::string to_string(const jobs_fault& f) {
  auto time = [](timestamp t) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(t).count();
    return us % 1000 == 0 ? std::to_string(us / 1000) + "ms" : std::to_string(us) + "us";
  };
  auto target = [&] {
    switch (f.target) {
    case jobs_fault::role::agent:
      return "agent" + std::to_string(f.number);
    case jobs_fault::role::scheduler:
      return "scheduler" + std::to_string(f.number);
    case jobs_fault::role::supervisor:
      return "supervisor" + std::to_string(f.number);
    case jobs_fault::role::service:
      return std::string{"service"};
    default:
      return std::string{};
    }
  };
  auto window = [&](const char* name) {
    auto s = std::string{name} + "@" + time(f.at) + "-" + time(f.until);
    if (f.probability < 1) {
      auto p = std::to_string(f.probability);
      while (p.size() > 1 && p.back() == '0')
        p.pop_back();
      s += ":" + p;
    }
    return s;
  };
  using k = jobs_fault::kind;
  switch (f.what) {
  case k::crash:
    return "crash@" + time(f.at) + ":" + target();
  case k::restart:
    return "restart@" + time(f.at) + ":" + target();
  case k::crash_leader:
    return "crash-leader@" + time(f.at);
  case k::restart_leader:
    return "restart-leader@" + time(f.at);
  case k::fail:
    return window("fail");
  case k::reject:
    return window("reject");
  case k::hang:
    return window("hang");
  case k::slow:
    return window("slow");
  case k::cancel:
    return "cancel@" + time(f.at) + ":" + std::to_string(f.number);
  }
  return "?";
}

timestamp jobs_fault_plan::last_fault_end() const {
  return last_end_of(faults);
}

timestamp jobs_fault_plan::heal_time() const {
  return heal_time_of(*this);
}

void add_random_faults(jobs_fault_plan& plan, const jobs_shape& shape,
                       std::mt19937_64& rng) {
  using ms = std::chrono::milliseconds;
  using k = jobs_fault::kind;
  using role = jobs_fault::role;
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>{lo, hi}(rng);
  };
  auto horizon_ms =
      std::max<int64_t>(40, std::chrono::duration_cast<ms>(plan.horizon).count());
  for (unsigned i = 0; i < plan.random_faults; ++i) {
    auto start = timestamp{ms{uniform(0, horizon_ms * 3 / 4)}};
    auto end = std::min(timestamp{ms{horizon_ms}},
                        start + ms{uniform(10, std::max<int64_t>(20, horizon_ms / 2))});
    auto crash_restart = [&](role r, size_t count) {
      jobs_fault c;
      c.what = k::crash;
      c.at = start;
      c.target = r;
      c.number = count == 0 ? 0 : static_cast<uint64_t>(uniform(1, count));
      auto again = c;
      again.what = k::restart;
      again.at = end;
      plan.faults.push_back(c);
      plan.faults.push_back(again);
    };
    auto window = [&](k what, int64_t min_pct, int64_t max_pct) {
      jobs_fault w;
      w.what = what;
      w.target = role::service;
      w.at = start;
      w.until = end;
      w.probability = static_cast<double>(uniform(min_pct, max_pct)) / 100.0;
      plan.faults.push_back(w);
    };
    switch (uniform(0, 8)) {
    case 0:
      crash_restart(role::agent, shape.agents);
      break;
    case 1:
      crash_restart(role::scheduler, shape.schedulers);
      break;
    case 2: {
      jobs_fault c;
      c.what = k::crash_leader;
      c.target = role::supervisor;
      c.at = start;
      auto again = c;
      again.what = k::restart_leader;
      again.at = end;
      plan.faults.push_back(c);
      plan.faults.push_back(again);
      break;
    }
    case 3:
      crash_restart(role::service, 0);
      break;
    case 4:
      window(k::fail, 30, 100);
      break;
    case 5:
      window(k::reject, 10, 50);
      break;
    case 6:
      window(k::hang, 20, 60);
      break;
    case 7:
      window(k::slow, 30, 100);
      break;
    default: {
      jobs_fault c;
      c.what = k::cancel;
      c.at = start;
      c.number = static_cast<uint64_t>(uniform(1, std::max<size_t>(1, shape.jobs)));
      plan.faults.push_back(c);
      break;
    }
    }
  }
  sort_by_time(plan);
}

} // namespace conclave::sim
