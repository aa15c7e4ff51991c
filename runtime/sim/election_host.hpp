// Election candidates hosted on the simulated world.
//
// Every node of the world runs the real candidate actor (actors/election), with a
// transport that sends through the world's network, a clock that reads the node's
// own simulated clock and arms timers in the world's queue, and a probe that tells
// the host what the candidate reports. Optionally each candidate runs a leader
// task (a small actor started when the candidate starts acting and stopped when it
// stops), so that checkers can see whether the task outlives the leadership.
//
// The host keeps one view per candidate (after its latest input) in true time,
// and answers the questions every checker asks: who acts now, and whom the group
// agrees on (runtime/sim/agreement.hpp). Checkers subscribe as election_observer.
#pragma once

#include "actors/election/host.hpp"
#include "protocols/election/candidate_core.hpp"
#include "runtime/sim/agreement.hpp"
#include "runtime/sim/world.hpp"

#include <memory>
#include <vector>

namespace conclave::sim {

/// A candidate as the checkers see it, in true time.
struct candidate_view {
  bool alive = false;
  election::node_id leader = election::no_node;
  bool is_leader = false;
  bool acting = false;
  timestamp lease{0}; ///< true time at which acting ends unless renewed
  election::term t;   ///< current term
  bool task_running = false;
};

/// Sees what the candidates do, besides what the world does.
class election_observer : public world_observer {
public:
  virtual void election_event(node_id, const election::election_event&, timestamp) {}
  virtual void message_sent(node_id /*from*/, node_id /*to*/, size_t /*type index*/) {}
  /// The candidate's view changed (leader, role, acting, lease or term).
  virtual void view_changed(node_id, timestamp) {}
  virtual void task_started(node_id, timestamp) {}
  virtual void task_stopped(node_id, timestamp) {}

  /// The frequent hooks (each called up to a million times in a 1,000-node
  /// run) this observer needs, read once when it is added:
  /// - before_event_hook, message_sent_hook: without them, not called;
  /// - every_after_event: after_event after every event. Without it the host
  ///   calls after_event only when time moved or something changed since the
  ///   previous call (a view, an election event, a task, a crash, restart or
  ///   pause; messages sent do not count): for observers whose after_event
  ///   gives the same result when called again at one instant with nothing
  ///   changed.
  enum hook : unsigned {
    before_event_hook = 1,
    message_sent_hook = 2,
    every_after_event = 4,
  };
  virtual unsigned frequent_hooks() const {
    return before_event_hook | message_sent_hook | every_after_event;
  }
};

struct election_host_options {
  election::election_config config;
  /// Run a leader task on every candidate.
  bool leader_tasks = true;
  /// How long after a crash or restart its peers get "peer down/up".
  duration notice_delay = std::chrono::milliseconds(1);
  /// With config.guard.death_proof: a crash also sends every peer the proof
  /// of death of the crashed incarnation through the network (what the
  /// crashed process's kernel sends on its liveness connections: a FIN, with
  /// the network's delay, lost or blocked like any message; a pause,
  /// partition or cut sends nothing).
  /// UNSAFE, a planted defect for the checkers: a pause sends it too (a
  /// silence taken for a death).
  bool unsafe_silence_proofs = false;
};

class election_host : public world_observer {
public:
  election_host(world& w, election_host_options opts);
  ~election_host() override;

  /// Observers are told in the order added, after the host itself. The host
  /// passes the world's hooks on to them (it is the world's observer).
  void add_observer(election_observer* o);

  /// Spawns every candidate and starts it.
  void start_all();
  /// Tells `id` to start an election now.
  void elect(node_id id);

  world& sim() { return w_; }
  const election::election_config& config() const { return opts_.config; }
  const candidate_view& view(node_id id) const { return views_[id.value - 1]; }
  size_t live() const { return live_; }

  /// Acting as observed from outside: live, acting, inside its lease, not frozen.
  bool effectively_acting(node_id id) const;
  /// Whom every live candidate agrees on now (agreement.hpp), or no_node.
  node_id agreed_leader();
  /// The live candidate that leads with the highest term, or no_node.
  node_id current_leader() const;

  // -- world_observer ---------------------------------------------------------
  void before_event(timestamp now) override;
  void after_event(timestamp now) override;
  void crashed(node_id, timestamp) override;
  void restarted(node_id, timestamp) override;
  void paused(node_id, timestamp, timestamp) override;

  // -- called by the candidates' adapters --------------------------------------
  void on_send(node_id from, node_id to, const election::message& m);
  void on_event(node_id id, const election::election_event& e);
  void on_state(node_id id, const election::candidate_core& c);
  void on_task(node_id id, bool running);

  struct task_sink;

private:
  node_body make(world& w, node_id id, uint32_t incarnation);
  void changed(node_id id);
  /// Sends every other node the proof that `id`'s current incarnation is gone.
  void send_death_proofs(node_id id);

  world& w_;
  election_host_options opts_;
  std::vector<candidate_view> views_;
  /// Each node's promise record: it outlives the node's crashes, as a file
  /// written to completion does (the world's disk faults do not reach it).
  std::vector<std::shared_ptr<election::memory_promise_record>> records_;
  std::vector<election_observer*> observers_;
  /// Those of observers_ with the frequent hook (election_observer::hook).
  std::vector<election_observer*> every_event_, before_event_, message_sent_;
  /// Something observers see changed since the last after_event, or time
  /// moved: every observer's after_event runs (else only every_event_).
  bool news_ = true;
  timestamp last_after_{-1};
  std::shared_ptr<task_sink> sink_;
  size_t live_ = 0;

  // agreed_leader() is recomputed only after something it depends on changed.
  bool dirty_ = true;
  node_id agreed_ = election::no_node;
  timestamp next_unpause_ = timestamp::max();
  std::vector<member_view> members_;
};

} // namespace conclave::sim
