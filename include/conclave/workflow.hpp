// conclave/workflow.hpp: agent kinds a program serves, for the jobs of its
// cluster (docs/concepts/workflows.md).
//
// A job is a list of steps; each step names an agent kind and carries a
// payload. Every node runs a scheduler that claims ready steps from the
// replicated store and hands each to an agent of the step's kind on that
// node; the leader's supervisor recovers steps whose node died or whose
// deadline passed. Register a kind on an embedded node before run():
//
//   node.on_agent("charge", [](const conclave::step_call& call) {
//     if (already_charged(call.idempotency_key))      // retries repeat the key
//       return conclave::step_result::success("charged before");
//     if (!bank_reachable())
//       return conclave::step_result::transient_failure("bank_down");   // retried
//     charge(call.payload, call.idempotency_key);
//     return conclave::step_result::success();
//   });
//
// The function runs on a thread of its own (it may block), at most
// `concurrency` calls at once per node. A step may run more than once (a
// retry, a recovery after a node died, a late answer): make the effect
// idempotent by the key. Past the deadline its answer is ignored.
//
// This header includes only the standard library.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace conclave {

/// One try of one step.
struct step_call {
  /// The same on every try and every attempt of the step.
  std::string idempotency_key;
  /// Grows each time the step is claimed again (after a recovery).
  uint32_t attempt = 0;
  /// True: run the step's compensating action (the job is being undone).
  bool compensation = false;
  std::string payload;
  /// After this the try's answer is ignored and the step may run elsewhere.
  std::chrono::system_clock::time_point deadline;
};

/// What a try reports.
struct step_result {
  enum class status : uint8_t {
    ok,
    /// Retried by the step's retry policy, then recovered by the supervisor
    /// up to the job's failure threshold.
    transient,
    /// Fails the step at once (the job then fails or compensates).
    permanent,
  };
  status what = status::ok;
  /// A short name of the failure ("card_declined").
  std::string error_kind;
  std::string message;

  static step_result success(std::string message = {}) {
    return {status::ok, {}, std::move(message)};
  }
  static step_result transient_failure(std::string error_kind, std::string message = {}) {
    return {status::transient, std::move(error_kind), std::move(message)};
  }
  static step_result permanent_failure(std::string error_kind, std::string message = {}) {
    return {status::permanent, std::move(error_kind), std::move(message)};
  }
};

/// An agent kind's function. An exception it throws is a transient failure
/// whose message is the exception's what().
using agent_function = std::function<step_result(const step_call&)>;

} // namespace conclave
