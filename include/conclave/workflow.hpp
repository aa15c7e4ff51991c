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
#include <vector>

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

/// One step of a job to submit.
struct job_step {
  /// The agent kind that runs it (some node must serve it).
  std::string kind;
  std::string payload;
  /// How long one dispatch may take before the step is recovered.
  std::chrono::milliseconds timeout{30000};
  /// Tries of the agent within one dispatch (transient failures).
  uint32_t attempts = 3;
};

/// A job to submit.
struct job_request {
  /// Empty: the node makes one up (unique in the cluster).
  std::string id;
  std::vector<job_step> steps;
  /// Recoveries of one step before the job fails.
  uint32_t failure_threshold = 3;
};

/// A job as the store holds it.
struct job_status {
  std::string id;
  /// pending, processing, processed, error, compensating, compensated or
  /// cancelled.
  std::string state;
  /// processed, error, compensated or cancelled: nothing more happens.
  bool final = false;
  struct step {
    std::string kind;
    std::string state;
    uint32_t attempt = 0;
    uint32_t failures = 0;
    std::string last_error;
  };
  std::vector<step> steps;
  /// Where the job is and what happens next, in one line (empty once final).
  std::string explanation;
};

/// The answer of a job call: `error` is empty on success.
template <class T>
struct job_answer {
  T value{};
  std::string error;
  explicit operator bool() const { return error.empty(); }
};

} // namespace conclave
