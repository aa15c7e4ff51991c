// The user's coordinator work, run only while this candidate leads.
//
// In the spirit of the pattern's RunTaskWhenMutexAcquired: the task starts when
// the candidate starts acting as leader (with the quorum guard: inside the lease)
// and is cancelled as soon as that ends — leadership lost to a higher term, lease
// not renewed, resign, or shutdown. Cancellation is both a flag the task can poll
// (leader_context::cancelled()) and, for actor tasks, an exit message
// (exit_reason::user_shutdown) that stops the task actor.
#pragma once

#include "protocols/election/types.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <atomic>
#include <functional>
#include <memory>

namespace conclave::election {

/// What a leader task knows about its leadership.
class leader_context {
public:
  leader_context(node_id self, term t, std::shared_ptr<std::atomic<bool>> flag)
      : self_(self), term_(t), cancelled_(std::move(flag)) {}

  node_id self() const { return self_; }
  /// The term this task leads in: stamp every action with it (fencing token).
  term leadership_term() const { return term_; }
  /// True once leadership is lost; the task must stop acting.
  bool cancelled() const { return cancelled_->load(std::memory_order_acquire); }

private:
  node_id self_;
  term term_;
  std::shared_ptr<std::atomic<bool>> cancelled_;
};

class leader_task {
public:
  /// Spawns the task actor; the candidate stops it on loss of leadership.
  using actor_factory = std::function<caf::actor(caf::actor_system&, leader_context)>;
  /// Runs on a thread of its own (a detached actor); polls ctx.cancelled().
  using function = std::function<void(leader_context)>;

  static leader_task from_actor(actor_factory f);
  static leader_task from_function(function f);

  /// Starts the task for a new leadership; returns the running task's actor.
  caf::actor start(caf::actor_system& sys, const leader_context& ctx) const;

private:
  actor_factory factory_;
};

} // namespace conclave::election
