// conclave/node.hpp: make your program a conclave node.
//
// A program that embeds a node takes the same flags, CONCLAVE_NODE_*
// variables and config file as `conclave node`, joins its cluster the same
// way (election, replica, metrics, status file, signals), and runs your code
// only while it leads:
//
//   #include <conclave/node.hpp>
//
//   int main(int argc, char** argv) {
//     conclave::embedded_node node{argc, argv};   // bad flags: message, run() == 2
//     node.on_leading([&node](const conclave::leadership& lead) {
//       node.log("leading in term " + lead.term().to_string());
//       while (lead.wait_for(std::chrono::seconds(1)))
//         node.log("still leading in term " + lead.term().to_string());
//       node.log("stopped leading");
//     });
//     return node.run();                           // until SIGTERM or SIGINT
//   }
//
// Link the CMake target conclave::conclave. This header includes only the
// standard library.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "conclave/workflow.hpp"

namespace conclave {

namespace node {
struct node_config; // runtime/node/node_config.hpp
}

/// The term of a leadership: (epoch, leader id, incarnation). Terms only grow;
/// stamp it on every action your leader takes and reject lower terms where the
/// action lands (a fencing token).
struct term {
  uint64_t epoch = 0;
  uint64_t leader = 0;
  /// Grows each time the leader's process starts.
  uint64_t incarnation = 0;

  /// "EPOCH/LEADER", as the node's log and `conclave cluster status` show it.
  std::string to_string() const;

  friend bool operator==(const term& a, const term& b) {
    return a.epoch == b.epoch && a.leader == b.leader && a.incarnation == b.incarnation;
  }
  friend bool operator!=(const term& a, const term& b) { return !(a == b); }
  friend bool operator<(const term& a, const term& b) {
    if (a.epoch != b.epoch)
      return a.epoch < b.epoch;
    if (a.leader != b.leader)
      return a.leader < b.leader;
    return a.incarnation < b.incarnation;
  }
};

/// What a leader task is given: this node's id, the term it leads in, and
/// whether that leadership is over.
class leadership {
public:
  uint64_t self() const;
  conclave::term term() const;
  /// True once this node no longer acts as leader: the task must stop acting
  /// and return.
  bool cancelled() const;
  /// Waits up to `d`, returning early once cancelled. True if this node still
  /// leads afterwards (the loop condition of a periodic task).
  bool wait_for(std::chrono::milliseconds d) const;

  struct state;
  explicit leadership(std::shared_ptr<const state> s);

private:
  std::shared_ptr<const state> s_;
};

/// One member of a cluster, inside your program.
class embedded_node {
public:
  /// Runs while this node acts as leader (with the quorum guard, the default:
  /// only inside a lease a majority renewed), on a thread of its own. Started
  /// for each leadership; cancelled the moment it ends (lost to a higher
  /// term, lease not renewed, or shutdown). It must return soon after
  /// leadership.cancelled() turns true: run() waits for it when it stops.
  /// A node never runs two at once: when it leads again before a cancelled
  /// task has returned, the new one starts once the old one has.
  using leader_task = std::function<void(const leadership&)>;

  /// Parses the `conclave node` flags from argv (argv[0] is the program),
  /// then CONCLAVE_NODE_* variables, then --config FILE. On bad input, prints
  /// one line "PROGRAM: error: ..." on stderr; ok() is then false and run()
  /// returns 2. --help prints the flags; ok() is false and run() returns 0.
  embedded_node(int argc, const char* const* argv);
  /// From a validated configuration (runtime/node/node_config.hpp).
  explicit embedded_node(const node::node_config& cfg);
  ~embedded_node();
  embedded_node(embedded_node&&) noexcept;
  embedded_node& operator=(embedded_node&&) noexcept;

  /// Whether run() will run the node.
  bool ok() const;
  /// Why not (the line printed), or empty.
  const std::string& error() const;
  /// This node's id (0 if not ok()).
  uint64_t id() const;

  /// Sets the leader task; call before run().
  void on_leading(leader_task task);

  /// Serves agent kind `kind` on this node with `fn` (conclave/workflow.hpp),
  /// at most `concurrency` steps at once; call before run(). A kind of
  /// `conclave node` (exec, sleep, fail) registered here is replaced. A
  /// null `fn` removes the kind.
  void on_agent(std::string kind, agent_function fn, unsigned concurrency = 4);

  /// Jobs of this node's cluster, from any thread while run() runs (a call
  /// made while the node is starting waits for its workflow actors; before
  /// run() or after it stopped: error "not running" once `timeout` passed).
  /// Each call returns within `timeout` plus a small margin.
  /// Submits a job; its id once a majority of the replicas has it.
  job_answer<std::string>
  submit(const job_request& job,
         std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// The job as stored (error "unknown job" if there is none).
  job_answer<job_status> job(const std::string& id,
                             std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// Cancels an unfinished job; its state afterwards.
  job_answer<std::string>
  cancel(const std::string& id,
         std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// Runs a failed, compensated or cancelled job again from its failed step;
  /// its state afterwards.
  job_answer<std::string>
  resubmit(const std::string& id,
           std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// The ids of the jobs in `state` (pending, processing, processed, error,
  /// compensating, compensated, cancelled).
  job_answer<std::vector<std::string>>
  jobs(const std::string& state,
       std::chrono::milliseconds timeout = std::chrono::seconds(5));

  /// Writes `message` to the node's log (stderr, with a UTC timestamp and the
  /// node id, as text or JSON per --log-format). Safe from any thread.
  void log(std::string_view message) const;

  /// Runs the node as `conclave node` does until SIGTERM or SIGINT (a leader
  /// resigns first), and returns the process exit status: 0 after a clean
  /// shutdown, 2 bad input, 4 --listen or --metrics address in use, 1
  /// otherwise. Blocks SIGTERM and SIGINT in the calling thread (call it
  /// before starting threads of your own, which inherit the mask).
  int run();

  /// conclave's version, e.g. "0.1.0".
  static std::string version();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace conclave
