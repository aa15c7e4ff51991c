#include "runtime/sim/jobs_faults.hpp"

#include <algorithm>

namespace conclave::sim {

size_t jobs_nodes(const jobs_shape& shape) {
  return std::max({shape.schedulers, shape.agents, shape.supervisors, size_t{1}});
}

outcome::result<void, std::string> validate(const fault_plan& plan,
                                            const jobs_shape& shape, disk_kind disk) {
  using role = fault::role;
  for (auto& f : plan.faults) {
    if (f.what == fault::kind::cancel) {
      if (f.number > shape.jobs)
        return "cancel names job " + std::to_string(f.number)
               + " but the run has jobs 1.." + std::to_string(shape.jobs);
      continue;
    }
    if (f.what != fault::kind::crash && f.what != fault::kind::restart)
      continue;
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
    case role::service:
      continue;
    case role::node:
      return to_spec(f)
             + " names a node; the jobs workload crashes agentN, schedulerN, "
               "supervisorN or service";
    }
    if (f.number > count)
      return std::string{"fault names "} + name + std::to_string(f.number)
             + " but the run has " + name + "s 1.." + std::to_string(count);
  }
  // Pauses, elections asked of a node, partitions, cuts, power losses and
  // bit flips name nodes.
  if (auto v = validate(plan, jobs_nodes(shape)); !v)
    return v.error();
  return validate_disk(plan, disk);
}

void add_random_faults(fault_plan& plan, const jobs_shape& shape, std::mt19937_64& rng,
                       bool disk_faults) {
  using ms = std::chrono::milliseconds;
  using k = fault::kind;
  using role = fault::role;
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
      fault c;
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
      fault w;
      w.what = what;
      w.at = start;
      w.until = end;
      w.probability = static_cast<double>(uniform(min_pct, max_pct)) / 100.0;
      plan.faults.push_back(w);
    };
    // A disk fault of node N at `start` (drawn now), then its restart at
    // `end`: restarted by the name of an actor it hosts (agentN, schedulerN
    // or supervisorN, the first the shape has).
    auto on_disk_then_restart = [&](k what, bool crash) {
      auto n = static_cast<uint64_t>(uniform(1, static_cast<int64_t>(jobs_nodes(shape))));
      fault d;
      d.what = what;
      d.at = start;
      d.node = node_id{n};
      plan.faults.push_back(d);
      fault c;
      c.what = k::crash;
      c.at = start;
      c.target = n <= shape.agents       ? role::agent
                 : n <= shape.schedulers ? role::scheduler
                                         : role::supervisor;
      c.number = n;
      if (crash)
        plan.faults.push_back(c);
      auto again = c;
      again.what = k::restart;
      again.at = end;
      plan.faults.push_back(again);
    };
    // The memory disk draws what it drew before the files disk took faults.
    switch (uniform(0, disk_faults ? 10 : 8)) {
    case 0:
      crash_restart(role::agent, shape.agents);
      break;
    case 1:
      crash_restart(role::scheduler, shape.schedulers);
      break;
    case 2: {
      fault c;
      c.what = k::crash_leader;
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
    case 9: // the power goes during a sync; the node restarts later
      on_disk_then_restart(k::fsync_loss, false);
      break;
    case 10: // a bit flips; the node crashes and finds it when it restarts
      on_disk_then_restart(k::bitflip, true);
      break;
    default: {
      fault c;
      c.what = k::cancel;
      c.at = start;
      c.number = static_cast<uint64_t>(uniform(1, std::max<size_t>(1, shape.jobs)));
      plan.faults.push_back(c);
      break;
    }
    }
  }
  std::stable_sort(plan.faults.begin(), plan.faults.end(),
                   [](const fault& a, const fault& b) { return a.at < b.at; });
}

} // namespace conclave::sim
