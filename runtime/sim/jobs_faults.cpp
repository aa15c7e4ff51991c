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
    auto nodes = static_cast<int64_t>(jobs_nodes(shape));
    auto some_node = [&] { return node_id{static_cast<uint64_t>(uniform(1, nodes))}; };
    // A window of the nodes (pause, pause-leader, disk-stall, partition, cut).
    auto node_window = [&](k what) {
      fault f;
      f.what = what;
      f.at = start;
      f.until = end;
      if (what == k::pause || what == k::disk_stall)
        f.node = some_node();
      if (what == k::partition || what == k::cut)
        draw_groups(f, static_cast<size_t>(nodes), rng);
      plan.faults.push_back(f);
    };
    // Every timed word the workload applies, each as likely; the disk's
    // power losses and bit flips only on the files disk.
    enum choice {
      agent_crash,
      scheduler_crash,
      leader_crash,
      service_crash,
      fail,
      reject,
      hang,
      slow,
      cancel,
      pause,
      pause_leader,
      partition,
      cut,
      elect,
      disk_stall,
      fsync_loss,
      bitflip
    };
    auto last = disk_faults ? bitflip : disk_stall;
    auto c = static_cast<choice>(uniform(0, last));
    if (c == cut && nodes < 2)
      c = partition;
    switch (c) {
    case agent_crash:
      crash_restart(role::agent, shape.agents);
      break;
    case scheduler_crash:
      crash_restart(role::scheduler, shape.schedulers);
      break;
    case leader_crash: {
      fault f;
      f.what = k::crash_leader;
      f.at = start;
      auto again = f;
      again.what = k::restart_leader;
      again.at = end;
      plan.faults.push_back(f);
      plan.faults.push_back(again);
      break;
    }
    case service_crash:
      crash_restart(role::service, 0);
      break;
    case fail:
      window(k::fail, 30, 100);
      break;
    case reject:
      window(k::reject, 10, 50);
      break;
    case hang:
      window(k::hang, 20, 60);
      break;
    case slow:
      window(k::slow, 30, 100);
      break;
    case pause:
      node_window(k::pause);
      break;
    case pause_leader:
      node_window(k::pause_leader);
      break;
    case partition:
      node_window(k::partition);
      break;
    case cut:
      node_window(k::cut);
      break;
    case disk_stall:
      node_window(k::disk_stall);
      break;
    case elect: {
      fault f;
      f.what = k::elect;
      f.at = start;
      f.node = some_node();
      plan.faults.push_back(f);
      break;
    }
    case fsync_loss: // the power goes during a sync; the node restarts later
      on_disk_then_restart(k::fsync_loss, false);
      break;
    case bitflip: // a bit flips; the node crashes and finds it when it restarts
      on_disk_then_restart(k::bitflip, true);
      break;
    case cancel: {
      fault f;
      f.what = k::cancel;
      f.at = start;
      f.number = static_cast<uint64_t>(uniform(1, std::max<size_t>(1, shape.jobs)));
      plan.faults.push_back(f);
      break;
    }
    }
  }
  std::stable_sort(plan.faults.begin(), plan.faults.end(),
                   [](const fault& a, const fault& b) { return a.at < b.at; });
}

} // namespace conclave::sim
