// The job calls of embedded_node (include/conclave/node.hpp): blocking
// requests to the node's workflow client, from any thread, while the node
// runs; a call made while the node is still starting waits (within its
// timeout) for the workflow actors. The node's workflow hook sets the handles once its
// workflow actors run and clears them before they stop; a call holds a shared lock while
// it waits, so the actor system outlives every call in flight.
#pragma once

#include "actors/workflow/interfaces.hpp"
#include "conclave/workflow.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <condition_variable>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

namespace conclave::embed {

class live_jobs {
public:
  /// The node's workflow actors run (on `sys`), serving `local` kinds.
  void set(caf::actor_system& sys, workflow::client_actor client, caf::actor repl,
           std::set<std::string> local = {});
  /// They stop: waits for the calls in flight (each bounded by its timeout).
  void clear();

  job_answer<std::string> submit(const job_request& job,
                                 std::chrono::milliseconds timeout);
  job_answer<job_status> get(const std::string& id, std::chrono::milliseconds timeout);
  job_answer<std::string> cancel(const std::string& id,
                                 std::chrono::milliseconds timeout);
  job_answer<std::string> resubmit(const std::string& id,
                                   std::chrono::milliseconds timeout);
  job_answer<std::vector<std::string>> list(const std::string& state,
                                            std::chrono::milliseconds timeout);

private:
  /// A call answered with the job's state (cancel, resubmit).
  template <class Atom>
  job_answer<std::string> state_call(Atom atom, const std::string& id,
                                     std::chrono::milliseconds timeout);

  /// The lock every call holds; waits up to `timeout` for the workflow
  /// actors while the node is starting (not after clear()).
  std::shared_lock<std::shared_mutex> wait_running(std::chrono::milliseconds timeout);

  std::shared_mutex mu_;
  std::condition_variable_any cv_;
  bool closed_ = false;
  caf::actor_system* sys_ = nullptr;
  workflow::client_actor client_;
  caf::actor repl_;
  std::set<std::string> local_;
};

/// What a stored job looks like to the facade (`now`: wall-clock ns).
job_status to_status(const workflow::job_view& v, workflow::timestamp now);

} // namespace conclave::embed
