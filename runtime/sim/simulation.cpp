#include "runtime/sim/simulation.hpp"

#include "protocols/election/type_ids.hpp"
#include "runtime/sim/checkers.hpp"
#include "runtime/sim/election_host.hpp"
#include "runtime/sim/election_trace.hpp"
#include "runtime/sim/world.hpp"

#include <algorithm>
#include <optional>
#include <random>

namespace conclave::sim {

namespace el = conclave::election;
using namespace std::chrono_literals;

duration liveness_bound(const el::election_config& cfg, size_t nodes,
                        const fault_plan& plan) {
  auto n = static_cast<int64_t>(nodes);
  auto detector = cfg.detector.kind == el::detector_kind::phi ? cfg.detector.timeout * 4
                                                              : cfg.detector.timeout;
  auto detect = std::max(cfg.election_wait, detector) + cfg.heartbeat_interval;
  duration elect =
      cfg.algo == el::algorithm::bully
          ? cfg.answer_timeout + cfg.coordinator_timeout + plan.delay_max * 4
          : (cfg.hop_timeout * (cfg.hop_retries + 1) + plan.delay_max) * 2 * n;
  // A resigning or restarted candidate may abstain for a while.
  auto abstain = cfg.election_wait + cfg.coordinator_timeout + cfg.detector.timeout;
  return 3 * (detect + elect) + abstain;
}

duration stable_window(const el::election_config& cfg) {
  auto detector = cfg.detector.kind == el::detector_kind::phi ? cfg.detector.timeout * 4
                                                              : cfg.detector.timeout;
  return 2 * (std::max(cfg.election_wait, detector) + cfg.heartbeat_interval);
}

duration task_stop_bound(const el::election_config&) {
  // The candidate cancels its task in the step in which it stops acting; the
  // bound only absorbs events that share that instant.
  return 1ms;
}

namespace {

/// Applies the plan's faults to the world at their times.
void schedule_faults(world& w, election_host& h, const fault_plan& plan) {
  auto crashed_leaders = std::make_shared<std::vector<node_id>>();
  for (auto& f : plan.faults) {
    switch (f.what) {
    case fault::kind::partition:
    case fault::kind::cut:
      w.add_cut(f.at, f.until, f.groups, f.what == fault::kind::cut);
      continue;
    default:
      break;
    }
    w.at(f.at, [&w, &h, f, crashed_leaders] {
      switch (f.what) {
      case fault::kind::crash:
        w.crash(f.node);
        break;
      case fault::kind::restart:
        w.restart(f.node);
        break;
      case fault::kind::pause:
        w.pause(f.node, f.until);
        break;
      case fault::kind::crash_leader:
        if (auto l = h.current_leader(); l != el::no_node) {
          w.crash(l);
          crashed_leaders->push_back(l);
        }
        break;
      case fault::kind::restart_leader:
        if (!crashed_leaders->empty()) {
          w.restart(crashed_leaders->back());
          crashed_leaders->pop_back();
        }
        break;
      case fault::kind::pause_leader:
        if (auto l = h.current_leader(); l != el::no_node)
          w.pause(l, f.until);
        break;
      case fault::kind::elect:
        h.elect(f.node);
        break;
      default:
        break;
      }
    });
  }
}

/// Stops the run at the first agreement (benchmarks).
class first_agreement_stop final : public election_observer {
public:
  first_agreement_stop(world& w, const run_report& r) : w_(w), r_(r) {}
  void after_event(timestamp) override {
    if (!r_.elections.empty())
      w_.stop();
  }
  unsigned frequent_hooks() const override { return 0; }

private:
  world& w_;
  const run_report& r_;
};

double rate_error(const sim_settings& s) {
  if (s.plan.drift) // drift= of the fault spec
    return *s.plan.drift;
  if (s.clock_rate_error >= 0)
    return s.clock_rate_error;
  auto& g = s.config.guard;
  auto window = static_cast<double>((g.lease + g.max_clock_drift).count());
  return window > 0 ? static_cast<double>(g.max_clock_drift.count()) / (4 * window) : 0;
}

} // namespace

run_report run_simulation(const sim_settings& s) {
  run_report report;
  report.seed = s.seed;
  report.algo = s.config.algo;
  report.nodes = s.nodes;

  auto plan = s.plan;
  std::mt19937_64 fault_rng{s.seed};
  add_random_faults(plan, s.nodes, fault_rng, workload::election);
  auto heal = plan.heal_time();
  auto bound = liveness_bound(s.config, s.nodes, plan);
  auto stable_from = std::max(heal, plan.last_fault_end()) + bound;
  auto end =
      stable_from
      + (s.stable_window > duration{0} ? s.stable_window : stable_window(s.config));

  network_model net;
  net.delay_min = plan.delay_min;
  net.delay_max = plan.delay_max;
  net.loss = plan.loss;
  net.dup = plan.dup;
  net.faults_until = heal;
  clock_model clocks;
  clocks.max_rate_error = rate_error(s);
  clocks.max_offset = s.clock_offset_max;
  world w{s.nodes, s.seed * 0x2545f4914f6cdd1dULL + 1, net, clocks,
          [](caf::actor_system_config& cfg) {
            cfg.add_message_types<caf::id_block::conclave_election>();
          }};
  election_host_options ho;
  ho.config = s.config;
  if (s.quiet_start)
    ho.config.election_wait = std::chrono::hours(24 * 365);
  ho.leader_tasks = s.leader_tasks;
  ho.notice_delay = s.down_notice;
  ho.unsafe_silence_proofs = s.unsafe_silence_proofs;
  election_host host{w, ho};
  std::optional<election_trace> trace;
  if (s.trace) {
    trace.emplace(w, *s.trace, trace_options{s.trace_heartbeats});
    host.add_observer(&*trace);
  }

  safety_checker safety{host, report};
  claimant_checker claimants{host, report};
  task_checker tasks{host, report, task_stop_bound(s.config)};
  liveness_checker liveness{host, report, heal, stable_from, bound};
  cost_checker cost{host, report};
  needless_change_checker needless{host, report};
  timeline_recorder timeline{report};
  first_agreement_stop stop{w, report};
  for (election_observer* o : std::initializer_list<election_observer*>{
           &safety, &claimants, &tasks, &liveness, &cost, &needless})
    host.add_observer(o);
  if (s.record_timeline)
    host.add_observer(&timeline);
  if (s.stop_at_first_agreement)
    host.add_observer(&stop);

  schedule_faults(w, host, plan);
  cost.open_startup(w.now());
  host.start_all();
  w.run_until(end);
  if (!s.stop_at_first_agreement) {
    liveness.finish(w.now());
    claimants.finish(w.now());
  }
  cost.finish();
  report.messages_sent = w.messages_sent();
  report.messages_delivered = w.messages_delivered();
  report.events = w.events();
  report.end = w.now();
  return report;
}

} // namespace conclave::sim
