// One CAF actor system on CAF's test coordinator, driven in virtual time: the
// way the jobs workload runs the real workflow actors deterministically
// (docs/design/simulation.md, "Jobs workload").
//
// Nothing runs unless the driver says so: run() executes every enqueued job,
// advance_to(t) moves the virtual clock to t from one armed CAF timer to the
// next (every delayed_send and request timeout fires at its own instant, and
// the handlers it triggers run before the clock moves on), so a run costs one
// step per instant at which something happens, not one per millisecond.
// Actors spawned through track() are killed when the driver goes away: under
// the test coordinator ~actor_system runs until no work is left, and actors
// with re-arming timers would otherwise keep it busy forever.
//
// Nothing here may run outside the coordinator (no detached actors, no
// scoped_actor, no threads): they would race its unlocked job queue.
#pragma once

#include "actors/ask/ask.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace conclave::sim {

class coordinator_driver {
public:
  using time_point = caf::actor_clock::time_point;

  /// `configure` registers message types and sets options; the driver selects
  /// the testing scheduler and quiets CAF's logger.
  explicit coordinator_driver(
      const std::function<void(caf::actor_system_config&)>& configure);
  ~coordinator_driver();

  coordinator_driver(const coordinator_driver&) = delete;
  coordinator_driver& operator=(const coordinator_driver&) = delete;

  caf::actor_system& sys() { return *sys_; }

  /// Remembers a handle so that the driver kills it at the end.
  template <class Handle>
  Handle track(Handle h) {
    tracked_.push_back(caf::actor_cast<caf::actor>(h));
    return h;
  }

  /// Runs every enqueued job (no timer fires). Returns how many ran.
  size_t run();

  /// Virtual time since the driver started.
  std::chrono::nanoseconds elapsed() const;

  /// Moves virtual time forward to `elapsed() == t` (nothing if t is past),
  /// firing every timer due on the way at its own instant.
  void advance_to(std::chrono::nanoseconds t);

  /// The answer to a request, once run() has delivered it.
  template <class T>
  using reply = conclave::reply<T>;

  /// Sends a request from a throw-away actor; its answer lands in the slot
  /// (run() to deliver it). Never blocks: nothing runs before run().
  template <class T, class Handle, class... Ts>
  std::shared_ptr<reply<T>> ask(const Handle& to, Ts... xs) {
    return conclave::ask<T>(*sys_, to, std::move(xs)...);
  }

  /// ask() and run(): the value, or nothing if the request failed.
  template <class T, class Handle, class... Ts>
  std::optional<T> ask_now(const Handle& to, Ts... xs) {
    auto r = ask<T>(to, std::move(xs)...);
    run();
    return std::move(r->value);
  }

private:
  std::unique_ptr<caf::actor_system_config> cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  caf::scheduler::test_coordinator* sched_ = nullptr;
  time_point origin_;
  std::vector<caf::actor> tracked_;
};

} // namespace conclave::sim
