// The simulated world: nodes, a network and time, for deterministic runs of
// any conclave service (election candidates today; store replicas and workflow
// actors can be hosted the same way).
//
// What it models:
// - Nodes 1..n. Each node runs one body: a CAF actor on CAF's test coordinator
//   (one actor system per world), or, for tests of pure protocol cores, a plain
//   function. Nodes are addressed by node id; messages are CAF messages.
// - One event queue in true (virtual) time: message deliveries, timer firings,
//   notices ("peer down/up", what a dropped or re-established connection gives)
//   and calls (faults, probes). At one instant, calls run first, then each
//   node's deliveries and notices in the order queued, then its timers (nodes one after
//   the other: what one node does at an instant cannot reach another at that instant,
//   since every message takes a positive delay). Each delivery is handed to the node's
//   actor as a CAF message and the coordinator runs until idle; whatever the actor sends
//   or arms comes back into the queue.
// - A network: every message gets a delay (fixed, or uniform in a range: random
//   delays reorder), may be lost or duplicated until the faults heal, and is
//   dropped at delivery if a partition or a directed cut separates the two nodes.
// - Per-node clocks: each node reads a clock that runs at rate 1 + r (|r| at most
//   the configured rate error) from an offset; timers are armed in local time.
// - Faults: crash (the body dies; peers get a notice after `notice_delay`),
//   restart (a fresh body, a larger incarnation), pause (SIGSTOP-like: nothing
//   reaches the node and its timers wait until the pause ends; then timers fire
//   first and deliveries follow 100 us later, as a resumed process reads its
//   sockets after its due timers).
//
// A seed fixes every random choice, so a run is replayed exactly by its seed.
// Checkers are not part of the world: they are observers (world_observer) fed
// by the world and by the hosts of the services.
#pragma once

#include "protocols/election/types.hpp"

#include <caf/actor.hpp>
#include <caf/actor_clock.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/message.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <unordered_map>
#include <vector>

namespace caf {
class execution_unit;
class resumable;
class scheduled_actor;
namespace scheduler {
class test_coordinator;
}
} // namespace caf

namespace conclave::sim {

using election::duration;
using election::node_id;
using election::timestamp;

struct network_model {
  duration delay_min = std::chrono::milliseconds(1);
  duration delay_max = std::chrono::milliseconds(1);
  /// Per-message loss and duplication probability, before `faults_until`.
  double loss = 0;
  double dup = 0;
  timestamp faults_until{0};
};

struct clock_model {
  /// Each node's clock runs at rate 1 + r, r drawn uniformly in [-e, e].
  double max_rate_error = 0;
  /// Rates chosen by the workload instead (rates[i]: node i + 1's; nodes
  /// beyond the list draw theirs as above).
  std::vector<double> rates;
  /// Each node's clock starts at an offset drawn uniformly in [0, max_offset].
  duration max_offset{0};
};

/// A service of a node: which of its actors a message or timer is for. A node
/// that runs several actors (the node composition: candidate, replica host,
/// replica front, ...) gives each a port; port 0 is `node_body::actor`.
using port_id = uint8_t;

/// What runs on a node: an actor (deliveries are sent to it), or a function
/// that receives every delivery (pure protocol cores in unit tests). A node
/// that runs more actors lists them in `ports` (port k is ports[k - 1]); every
/// actor listed there and `actor` belong to the node: a pause freezes them
/// (what they would run waits until it ends, CAF timers included), a crash
/// kills them.
struct node_body {
  caf::actor actor;
  std::vector<caf::actor> ports;
  std::function<void(const caf::message&)> receive;
};

class world;

/// Called at the start and at every restart of a node, with its incarnation
/// (1 for the first life, then 2, 3, ...).
using node_spawner = std::function<node_body(world&, node_id, uint32_t incarnation)>;

/// Sees what happens in the world. Every hook has a default that does nothing.
class world_observer {
public:
  virtual ~world_observer() = default;
  virtual void before_event(timestamp) {}
  virtual void after_event(timestamp) {}
  virtual void crashed(node_id, timestamp) {}
  virtual void restarted(node_id, timestamp) {}
  virtual void paused(node_id, timestamp /*now*/, timestamp /*until*/) {}
};

/// What became of one message or notice (for traces, see world::set_tap).
enum class fate : uint8_t {
  delivered, ///< handed to the recipient's body
  lost,      ///< dropped by the loss model when sent
  blocked,   ///< dropped at delivery by a partition or cut
  dead,      ///< the recipient had crashed (or restarted) by then
};

/// Sees every message (and notice) the network carries: its send or delivery
/// time, sender (a notice: the peer it is about), recipient, content and fate.
using message_tap =
    std::function<void(timestamp, node_id from, node_id to, const caf::message&, fate)>;

class world {
public:
  /// `configure` registers the message types of the hosted services.
  world(size_t nodes, uint64_t seed, network_model net, clock_model clocks,
        const std::function<void(caf::actor_system_config&)>& configure);
  ~world();

  world(const world&) = delete;
  world& operator=(const world&) = delete;

  // -- nodes ------------------------------------------------------------------

  size_t size() const { return nodes_.size(); }
  /// Node ids 1..n.
  const std::vector<node_id>& ids() const { return ids_; }
  caf::actor_system& system() { return *sys_; }
  std::mt19937_64& rng() { return rng_; }

  /// Sets how `id` is made and makes its first life.
  void spawn(node_id id, node_spawner make);
  /// Kills the node's body; with `notify`, every live peer gets the down notice
  /// (see set_notices) after the notice delay.
  void crash(node_id id, bool notify = true);
  /// A fresh body with the next incarnation; live peers get the up notice.
  void restart(node_id id);
  /// Freezes the node until `until` (true time).
  void pause(node_id id, timestamp until);

  bool alive(node_id id) const { return node(id).alive; }
  bool paused(node_id id) const { return now_ < node(id).paused_until; }
  timestamp paused_until(node_id id) const { return node(id).paused_until; }
  uint32_t incarnation(node_id id) const { return node(id).incarnation; }
  const caf::actor& actor(node_id id) const { return node(id).body.actor; }
  /// The port of `who` among the node's actors (its body's actor: 0), or
  /// none if it is not one of them.
  std::optional<port_id> port_of(node_id id, const caf::actor_addr& who) const;

  /// What crash and restart notices deliver to each live peer, and how long after
  /// the fault (a dropped connection is noticed 1-2 ms after a kill -9).
  void set_notices(std::function<caf::message(node_id peer, bool up)> make,
                   duration delay);

  // -- network ----------------------------------------------------------------

  /// Sends `m` from one node to another through the network model, for the
  /// recipient's actor at `port`.
  void send(node_id from, node_id to, caf::message m, port_id port = 0);
  /// Messages between nodes in different groups are dropped while the window is
  /// open (group[i] is node i+1's group; -1: in no group, alone). Directed: only
  /// messages from group 0 to group 1 are dropped.
  void add_cut(timestamp from, timestamp until, std::vector<int> group, bool directed);
  /// The same with the groups listed (a fault's partition or cut): a node in
  /// no list is alone, cut from every other node; directed: groups[0] to
  /// groups[1] only.
  void add_cut(timestamp from, timestamp until,
               const std::vector<std::vector<node_id>>& groups, bool directed);
  bool blocked(node_id from, node_id to) const;
  /// Closes every partition and cut that is still open at `at`.
  void end_cuts(timestamp at);
  const network_model& network() const { return net_; }
  /// Calls `tap` for every message lost, blocked, delivered or addressed to a
  /// dead node, and every notice delivered (a trace of one run; empty: none).
  /// Timers are not tapped.
  void set_tap(message_tap tap) { tap_ = std::move(tap); }

  // -- time -------------------------------------------------------------------

  /// True time.
  timestamp now() const { return now_; }
  /// The node's own clock.
  timestamp local_now(node_id id) const { return to_local(id, now_); }
  timestamp to_local(node_id id, timestamp t) const;
  timestamp to_true(node_id id, timestamp local) const;
  /// The clock rate of a node (1 + its rate error).
  double clock_rate(node_id id) const { return node(id).rate; }

  /// Delivers `m` to the node's actor at `port` after `local_after` on its own
  /// clock, unless the node has crashed (or restarted) by then.
  void schedule(node_id id, duration local_after, caf::message m, port_id port = 0);
  /// Delivers `m` to the node now (at once, not through the queue).
  void inject(node_id id, const caf::message& m, port_id port = 0);

  /// Runs what the node actors have to do at this instant (messages they
  /// sent each other, answers, spawned actors): what a fault or a probe
  /// outside the queue must call after sending something to a node. Work of a
  /// paused node's actors waits until the pause ends.
  void run_actors();
  /// Runs `f` at true time `t` (faults, probes).
  void at(timestamp t, std::function<void()> f);

  // -- running ----------------------------------------------------------------

  void add_observer(world_observer* o) { observers_.push_back(o); }
  /// Runs the earliest event if it is due no later than `end`; false if none is.
  bool step(timestamp end);
  /// Runs every event up to `end`, then sets the time to `end`.
  void run_until(timestamp end);
  /// Makes run_until return after the current event.
  void stop() { stopped_ = true; }
  /// Bounds the run: once `events` events have run, or the coordinator has
  /// run actors `jobs` times, nothing more runs (step() returns false,
  /// run_until() only moves the time) and exhausted() is true. Actors that
  /// keep messaging each other at one instant, or a node that keeps arming
  /// timers for now, would otherwise never let a run end.
  void set_budget(uint64_t events, uint64_t jobs) {
    events_budget_ = events;
    jobs_left_ = jobs;
  }
  /// The run hit its budget (set_budget).
  bool exhausted() const { return exhausted_; }

  uint64_t messages_sent() const { return sent_; }
  uint64_t messages_delivered() const { return delivered_; }
  /// Messages the network delivers twice (dup).
  uint64_t messages_duplicated() const { return duplicated_; }
  uint64_t events() const { return events_; }

private:
  enum class kind : uint8_t { deliver, timer, notice, call };

  /// Trivially copyable, so that the queue moves events as plain bytes (a
  /// million of them in a large run): the message is held as the raw pointer
  /// of a caf::message's data, owning one reference (owned()/adopt()).
  struct event {
    kind what;
    port_id port;         ///< deliver, timer: the recipient's actor
    uint32_t to;          ///< node index
    uint32_t from;        ///< deliver: sender index; call: index into calls_
    uint32_t incarnation; ///< timer: of the node that armed it
    caf::detail::message_data* msg;
  };

  struct node_state {
    node_spawner make;
    node_body body;
    /// body.actor as the scheduled actor it is (deliveries activate it
    /// directly), or nullptr.
    caf::scheduled_actor* target = nullptr;
    /// The node's actors (as the coordinator's jobs), for pauses; and the
    /// jobs of theirs held while the node is paused.
    std::vector<caf::resumable*> jobs;
    std::vector<caf::resumable*> held;
    bool holding = false;
    bool alive = false;
    uint32_t incarnation = 0;
    timestamp paused_until{0};
    double rate = 1.0;
    timestamp offset{0};
  };

  struct cut {
    timestamp from;
    timestamp until;
    bool directed;
    std::vector<int> group;
  };

  /// Events at one instant, in the order queued.
  struct bucket {
    std::vector<event> events;
    size_t next = 0;
  };

  node_state& node(node_id id) { return nodes_[id.value - 1]; }
  const node_state& node(node_id id) const { return nodes_[id.value - 1]; }
  duration delay();
  void push(timestamp at, event e);
  void dispatch(event& e);
  void group_by_node(std::vector<event>& events);
  void deliver(node_state& n, const caf::message& m, port_id port);
  /// The node's actor at `port` (invalid if there is none).
  const caf::actor& port_actor(const node_state& n, port_id port) const;
  /// Runs the coordinator until idle, holding the jobs of paused nodes.
  void run_jobs();
  /// Runs the coordinator until idle, within the budget of jobs.
  void run_coordinator();
  /// Gives a node whose pause ended its held jobs back.
  void release_held(node_state& n);
  /// At `t`, releases what the node (its life `incarnation`) held, unless
  /// its pause was extended past `t` (then at the new end).
  void resume_at(uint32_t index, uint32_t incarnation, timestamp t);
  /// The true time of CAF's next timer (a request timeout, a delayed send),
  /// if any is armed.
  std::optional<timestamp> next_caf_timer() const;
  /// Moves CAF's clock to true time `t`, firing the CAF timers due by then.
  void advance_caf_clock(timestamp t);
  /// Sets the body of a node's new life.
  void set_body(node_state& n, node_body body);
  void notify_all(uint32_t about, bool up);

  network_model net_;
  std::mt19937_64 rng_;
  /// The execution unit deliveries run on (as the coordinator's own);
  /// declared first so that it outlives the actors that point to it.
  std::unique_ptr<caf::execution_unit> unit_;
  std::unique_ptr<caf::actor_system_config> cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  caf::scheduler::test_coordinator* sched_ = nullptr;
  /// CAF's clock at true time 0.
  caf::actor_clock::time_point caf_origin_;
  /// Nodes whose actors' jobs are held (paused, release not yet run).
  size_t holding_ = 0;

  std::vector<node_id> ids_;
  std::vector<node_state> nodes_;
  std::vector<cut> cuts_;
  std::function<caf::message(node_id, bool)> notice_;
  duration notice_delay_ = std::chrono::milliseconds(1);
  std::vector<std::function<void()>> calls_;
  std::vector<world_observer*> observers_;
  message_tap tap_;

  // The queue: a min-heap of distinct instants, each with its bucket.
  std::vector<std::pair<timestamp, uint32_t>> instants_; ///< (instant, bucket)
  std::unordered_map<int64_t, uint32_t> bucket_at_;
  std::vector<bucket> buckets_;
  std::vector<uint32_t> free_buckets_;
  timestamp last_push_at_{-1};
  uint32_t last_push_bucket_ = 0;
  std::vector<size_t> group_start_;
  std::vector<event> group_scratch_;

  timestamp now_{0};
  bool stopped_ = false;
  uint64_t sent_ = 0;
  uint64_t delivered_ = 0;
  uint64_t duplicated_ = 0;
  uint64_t events_ = 0;
  uint64_t events_budget_ = std::numeric_limits<uint64_t>::max();
  uint64_t jobs_left_ = std::numeric_limits<uint64_t>::max();
  bool exhausted_ = false;
};

} // namespace conclave::sim
