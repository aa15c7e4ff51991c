// What goes wrong in a simulation run, and when: the fault spec of every
// `conclave sim` workload. One parser and one printer, one meaning per word;
// docs/design/simulation.md, "Fault spec", has the table of every word, its
// meaning and the workloads that take it.
//
// A spec is a comma-separated list of items; times and durations take a unit
// (us, ms or s, decimals allowed down to 1 ns).
//
//   crash@T:N            crash node N (jobs: agentN, schedulerN, supervisorN
//                        or service)
//   restart@T:N          restart it (same id, no memory)
//   pause@T1-T2:N        SIGSTOP N until T2: its timers wait, nothing is read
//   crash-leader@T       crash whoever leads at T
//   restart-leader@T     restart the latest node crash-leader crashed that no
//                        restart-leader restarted yet
//   pause-leader@T1-T2   pause whoever leads at T1
//   partition@T1-T2:G|G  symmetric partition; G = 1-3 (range), 1+4+5 (list)
//                        or 2; every node not listed is alone
//   cut@T1-T2:G>G        directed: messages from the first group to the second
//   elect@T:N            N starts an election at T
//   disk-stall@T1-T2:N   N's disk completes no write and no sync until T2
//   fsync-loss@T:N       N crashes losing every write not covered by a
//                        completed sync (power loss)
//   bitflip@T:N          one bit of N's stored data flips
//   fail@T1-T2[:P]       service calls fail transiently with probability P
//   reject@T1-T2[:P]     ... fail permanently
//   hang@T1-T2[:P]       ... never answer
//   slow@T1-T2[:P]       ... answer after slow=
//   cancel@T:N           a user cancels job N
//   heal@T               loss and duplication stop at T
//   loss=P  dup=P        per-message loss / duplication probability (0..1)
//   delay=D | D1..D2     message delay, fixed or uniform (default 1ms)
//   drift=R              clock rates drawn from [1 - R, 1 + R] per node
//   slow=D               how long a slow answer takes (default 50ms)
//   random=K             K random faults drawn from the seed, all healed by
//                        the horizon
//   horizon=T            end of the random-fault window
//
// Each workload takes only some words (applies()); parse_fault_spec(spec, w)
// refuses the others with one line naming the word and the workload.
#pragma once

#include "protocols/election/types.hpp"
#include "runtime/sim/disk_kind.hpp"

#include <boost/outcome.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace conclave::sim {

namespace outcome = BOOST_OUTCOME_V2_NAMESPACE;
using election::duration;
using election::node_id;
using election::timestamp;

struct fault {
  enum class kind {
    crash,
    restart,
    pause,
    crash_leader,
    restart_leader,
    pause_leader,
    partition,
    cut,
    elect,
    disk_stall,
    fsync_loss,
    bitflip,
    fail,
    reject,
    hang,
    slow,
    cancel
  };
  /// Whom crash and restart hit: a node, or an actor of the jobs workload.
  enum class role { node, agent, scheduler, supervisor, service };
  kind what = kind::crash;
  timestamp at{0};
  /// pause, pause-leader, partition, cut, disk-stall, fail, reject, hang, slow
  timestamp until{0};
  /// crash and restart of a node; pause, elect, disk-stall, fsync-loss, bitflip
  node_id node;
  /// partition: the groups; cut: groups[0] → groups[1] is cut.
  std::vector<std::vector<node_id>> groups;
  /// crash, restart: a node (`node`) or an actor of the jobs workload.
  role target = role::node;
  /// crash, restart of an agent, scheduler or supervisor: its number (from 1);
  /// cancel: the job (from 1).
  uint64_t number = 0;
  /// fail, reject, hang, slow: the chance that one call is affected.
  double probability = 1;

  friend bool operator==(const fault& a, const fault& b);
  friend bool operator!=(const fault& a, const fault& b) { return !(a == b); }

  /// A window whose end (`until`) the workload must act on, besides its
  /// start: pause, pause-leader, partition, cut and disk-stall. (The service
  /// windows of the jobs workload are read where calls are decided.)
  bool ends_by_action() const {
    return what == kind::pause || what == kind::pause_leader || what == kind::partition
           || what == kind::cut || what == kind::disk_stall;
  }
};

struct fault_plan {
  std::vector<fault> faults;
  double loss = 0;
  double dup = 0;
  duration delay_min = std::chrono::milliseconds(1);
  duration delay_max = std::chrono::milliseconds(1);
  unsigned random_faults = 0;
  duration horizon = std::chrono::seconds(2);
  std::optional<timestamp> heal;
  /// drift=R: each node's clock runs at a rate drawn from [1 - R, 1 + R];
  /// unset: the workload's own default.
  std::optional<double> drift;
  /// slow=D: how long a slow service answer takes (jobs workload).
  duration slow = std::chrono::milliseconds(50);

  /// When the last scheduled fault ends (0 without faults).
  timestamp last_fault_end() const;
  /// When loss and duplication stop: heal@, else the last fault's end.
  timestamp heal_time() const;

  friend bool operator==(const fault_plan& a, const fault_plan& b);
  friend bool operator!=(const fault_plan& a, const fault_plan& b) { return !(a == b); }
};

// -- the words and the workloads that take them ------------------------------

/// The workloads of `conclave sim`.
enum class workload { election, jobs, replication, lease };
std::string_view to_string(workload w);

/// Every word of the language: the kinds of timed faults, then the settings.
/// `slow` is both slow@T1-T2 and slow=D.
enum class fault_word {
  crash,
  restart,
  pause,
  crash_leader,
  restart_leader,
  pause_leader,
  partition,
  cut,
  elect,
  disk_stall,
  fsync_loss,
  bitflip,
  fail,
  reject,
  hang,
  slow,
  cancel,
  heal,
  loss,
  dup,
  delay,
  drift,
  random,
  horizon
};
constexpr size_t fault_word_count = static_cast<size_t>(fault_word::horizon) + 1;
/// "crash-leader", "disk-stall", ...: the word as a spec writes it.
std::string_view to_string(fault_word w);
std::optional<fault_word> fault_word_named(std::string_view name);
/// The word of a timed fault.
fault_word word_of(fault::kind k);

/// Does workload `w` apply this word? A workload takes a word only once it
/// applies it as the table in docs/design/simulation.md says.
bool applies(fault_word word, workload w);
/// The words `w` takes, in the order of fault_word.
std::vector<fault_word> words_of(workload w);

/// A plan with the settings a workload starts from (its horizon: 2s, jobs 300ms).
fault_plan default_plan(workload w);

// -- parsing and printing ----------------------------------------------------

/// Parses a spec of any words, with the election workload's defaults; the
/// error names the offending item and what was expected, on one line.
outcome::result<fault_plan, std::string> parse_fault_spec(std::string_view spec);

/// Parses a spec for workload `w`: its defaults, and a word `w` does not take
/// (or a crash target it does not have) is an error naming the word and `w`.
outcome::result<fault_plan, std::string> parse_fault_spec(std::string_view spec,
                                                          workload w);

/// One fault in the spec's syntax: "crash@12ms:2", "hang@5ms-40ms:0.3".
std::string to_spec(const fault& f);

/// The whole plan in the spec's syntax: the settings that differ from `w`'s
/// defaults (loss, dup, delay, drift, slow, random, horizon), the faults in
/// order, then heal@. parse_fault_spec(to_spec(p, w), w) gives p back.
std::string to_spec(const fault_plan& plan, workload w = workload::election);

/// The spec that replays a run whose random faults were drawn into `drawn`:
/// the drawn faults and the settings, without random=.
std::string replay_spec(const fault_plan& drawn, workload w = workload::election);

/// Checks node ids against the group size, and that no node is in two
/// groups of one partition or cut.
outcome::result<void, std::string> validate(const fault_plan& plan, size_t nodes);

/// Checks the plan against the nodes' disk: a memory disk keeps records, not
/// bytes, so it takes no bitflip.
outcome::result<void, std::string> validate_disk(const fault_plan& plan, disk_kind disk);

/// Lists every node a partition leaves out as a group of its own ("every node
/// not listed is alone"), so that any applier sees the whole partition.
void complete_partitions(fault_plan& plan, size_t nodes);

/// Draws the groups of a random partition (every node on one of two sides;
/// one group if all fell on one side) or cut (one node sends from the cut
/// side, another receives on it, every other node on either side or neither)
/// of `nodes` into f.groups, by f.what. A cut needs two nodes.
void draw_groups(fault& f, size_t nodes, std::mt19937_64& rng);

/// Adds plan.random_faults random faults for a group of `nodes`, drawn from
/// `rng` for workload `w` (election, replication or lease), each kind as
/// likely: crash+restart, pause, partition, crash-leader+restart-leader, cut,
/// pause-leader, elect, and disk-stall where `w` has a disk. Every random
/// fault heals before the horizon (crashes are restarted). With `files_disk`
/// (nodes that keep files), also fsync-loss+restart and bitflip+crash+restart.
void add_random_faults(fault_plan& plan, size_t nodes, std::mt19937_64& rng, workload w,
                       bool files_disk = false);

/// "250ms", "2s", "1.5us" → duration, exact to the nanosecond; at most 10^6 s.
outcome::result<duration, std::string> parse_duration(std::string_view text);
/// The shortest text parse_duration reads back exactly: "250ms", "1500ms",
/// "7us", "1.5us".
std::string format_duration(duration d);

// The pieces of the spec language (jobs_faults.hpp uses them too).

/// "'text'": how error messages show what they got (control characters
/// escaped, long text shortened, so that an error stays one line).
std::string quote(std::string_view text);
/// "42" → 42; nothing unless the text is all decimal digits and fits 64 bits.
std::optional<uint64_t> parse_number(std::string_view text);
/// When the last of `faults` ends (0 without faults): the latest `at` or
/// `until` (the plans' last_fault_end()).
template <class Fault>
timestamp last_end_of(const std::vector<Fault>& faults) {
  timestamp t{0};
  for (auto& f : faults)
    t = std::max({t, f.at, f.until});
  return t;
}
/// heal@ if the spec set it, else when the last fault ends (the plans'
/// heal_time()).
template <class Plan>
timestamp heal_time_of(const Plan& plan) {
  if (plan.heal)
    return *plan.heal;
  return plan.last_fault_end();
}
/// "0.05" → a probability in [0, 1].
outcome::result<double, std::string> parse_probability(std::string_view text);
/// "1s-2s" → (T1, T2) with T1 < T2.
outcome::result<std::pair<timestamp, timestamp>, std::string>
parse_window(std::string_view text);
/// "1ms" or "1ms..5ms" → (min, max) message delay, positive.
outcome::result<std::pair<duration, duration>, std::string>
parse_delay(std::string_view text);
/// Splits a spec at commas, trims spaces, refuses empty items and calls
/// `item` on each in order; the first error ends it.
outcome::result<void, std::string> for_each_spec_item(
    std::string_view spec,
    const std::function<outcome::result<void, std::string>(std::string_view)>& item);

} // namespace conclave::sim
