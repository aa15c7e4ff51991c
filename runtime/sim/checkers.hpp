// Checkers of simulated election runs: each one observes the world and the
// candidates (election_observer) and writes its findings into the run report.
//
// - safety_checker: never two candidates (or two lives of one) act in the same
//   term; a candidate never adopts a term lower than one it adopted before; with
//   the quorum guard, never two candidates acting at the same true instant.
// - claimant_checker: windows with two or more acting leaders (split brain,
//   expected without the guard under partitions), and windows in which a deposed
//   leader still claims leadership (is_leader, not frozen) although a majority
//   of the group has adopted a higher term. Every window's duration is kept;
//   windows that close at the instant they open are not counted.
// - task_checker: a leader task must stop within a bound after its candidate
//   stops acting (the task is frozen with its candidate while paused).
// - liveness_checker: judged over time. After the last fault heals plus a bound
//   derived from the timeouts (stable_from), the group must agree on one leader
//   that acts continuously until the end of the run, and no election may start.
//   Also: the fraction of time the group had an agreed, acting leader.
// - needless_change_checker: a candidate becomes leader, with a term higher than
//   that of another candidate that is a healthy leader: alive, not frozen,
//   leading (with the guard: acting) and connected by the network to a majority
//   of the group, itself included. Such a term deposes that leader as soon as
//   they talk (e.g. a candidate cut off for a while coming back); pre-vote
//   prevents it. A lower term is fenced off and not counted.
// - cost_checker: elections. One runs from the step that opens it (the first
//   suspicion of the leader, or the first election_started) to agreement; its
//   messages are every message sent from that step on, heartbeats until
//   agreement, and election messages until the next election opens or the run
//   ends (so Ring's full coordinator round and late answers count).
#pragma once

#include "runtime/sim/election_host.hpp"
#include "runtime/sim/simulation.hpp"

#include <map>
#include <tuple>

namespace conclave::sim {

/// Records a readable violation (the first few) and counts it.
void report_violation(run_report& r, timestamp now, const std::string& what);

/// Sees every event (every_after_event): under the guard it counts one
/// violation per event after which two candidates act.
class safety_checker final : public election_observer {
public:
  safety_checker(election_host& h, run_report& r) : h_(h), r_(r) {}
  void election_event(node_id, const election::election_event&, timestamp) override;
  void crashed(node_id, timestamp) override;
  void after_event(timestamp now) override;
  unsigned frequent_hooks() const override { return every_after_event; }

private:
  election_host& h_;
  run_report& r_;
  std::map<node_id, election::term> highest_adopted_;
  std::map<std::tuple<uint64_t, uint64_t, uint64_t>, std::pair<node_id, uint32_t>> acted_;
  std::vector<node_id> acting_;
};

class claimant_checker final : public election_observer {
public:
  claimant_checker(election_host& h, run_report& r) : h_(h), r_(r) {}
  void election_event(node_id, const election::election_event&, timestamp) override;
  void view_changed(node_id, timestamp) override { dirty_ = true; }
  void crashed(node_id, timestamp) override { dirty_ = true; }
  void paused(node_id, timestamp, timestamp until) override;
  void after_event(timestamp now) override;
  unsigned frequent_hooks() const override { return 0; }
  void finish(timestamp end);

private:
  void check_stale(timestamp now);
  void close_split(timestamp now);
  void close_stale(duration d);
  election_host& h_;
  run_report& r_;
  std::vector<node_id> acting_;
  bool split_ = false;
  timestamp split_since_{0};
  bool dirty_ = true;
  timestamp next_unpause_ = timestamp::max();
  std::map<node_id, timestamp> stale_since_;
};

class task_checker final : public election_observer {
public:
  task_checker(election_host& h, run_report& r, duration bound)
      : h_(h), r_(r), bound_(bound) {}
  void task_started(node_id, timestamp) override;
  void task_stopped(node_id, timestamp) override;
  void after_event(timestamp now) override;
  unsigned frequent_hooks() const override { return 0; }

private:
  struct running {
    node_id id;
    std::optional<timestamp> overrun_since;
    bool reported = false;
  };
  election_host& h_;
  run_report& r_;
  duration bound_;
  std::vector<running> tasks_;
};

class needless_change_checker final : public election_observer {
public:
  needless_change_checker(election_host& h, run_report& r) : h_(h), r_(r) {}
  void election_event(node_id, const election::election_event&, timestamp) override;
  unsigned frequent_hooks() const override { return 0; }

private:
  /// `id` can exchange messages with a majority of live, unfrozen members.
  bool connected_to_majority(node_id id) const;
  election_host& h_;
  run_report& r_;
};

class liveness_checker final : public election_observer {
public:
  liveness_checker(election_host& h, run_report& r, timestamp heal, timestamp stable_from,
                   duration bound);
  void election_event(node_id, const election::election_event&, timestamp) override;
  void after_event(timestamp now) override;
  unsigned frequent_hooks() const override { return 0; }
  void finish(timestamp end);

private:
  election_host& h_;
  run_report& r_;
  timestamp heal_;
  timestamp stable_from_;
  duration bound_;
  node_id agreed_ = election::no_node;
  node_id last_agreed_ = election::no_node;
  timestamp since_{0};
  timestamp last_{0};
  duration led_{0};
  duration led_after_heal_{0};
  std::optional<timestamp> first_election_after_stable_;
};

class cost_checker final : public election_observer {
public:
  cost_checker(election_host& h, run_report& r) : h_(h), r_(r) {}
  /// The first election (start-up) opens with the run.
  void open_startup(timestamp now);
  void election_event(node_id, const election::election_event&, timestamp) override;
  void message_sent(node_id, node_id, size_t type) override { ++sent_[type]; }
  void before_event(timestamp) override { step_base_ = sent_; }
  void after_event(timestamp now) override;
  /// after_event not after every event: messages sent since do not matter,
  /// an election open and agreed on at the last call was closed there.
  unsigned frequent_hooks() const override {
    return before_event_hook | message_sent_hook;
  }
  void finish();

private:
  using counts = std::array<uint64_t, election::message_type_count>;
  void open(timestamp now);
  void close_tail(const counts& upto);
  election_host& h_;
  run_report& r_;
  counts sent_{};
  counts step_base_{};
  bool open_ = false;
  bool broke_ = false;
  bool ever_agreed_ = false;
  bool startup_ = false;
  timestamp start_{0};
  counts base_{};
  std::optional<size_t> tail_;
  counts tail_base_{};
};

/// Records leadership events and faults for the timeline plot.
class timeline_recorder final : public election_observer {
public:
  explicit timeline_recorder(run_report& r) : r_(r) {}
  unsigned frequent_hooks() const override { return 0; }
  void election_event(node_id, const election::election_event&, timestamp) override;
  void crashed(node_id id, timestamp now) override { note(id, now, "crashed"); }
  void restarted(node_id id, timestamp now) override { note(id, now, "restarted"); }
  void paused(node_id id, timestamp now, timestamp) override { note(id, now, "paused"); }

private:
  void note(node_id id, timestamp now, const char* what);
  run_report& r_;
};

} // namespace conclave::sim
