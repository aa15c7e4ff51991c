// A service for tests, examples and simulation: told per call (a script, then
// a default) to succeed, fail transiently or permanently, hang, answer slowly
// or crash, and it records how often each idempotency key was called and how
// often it took effect. With `deduplicate` (the default) a key that already
// took effect answers success without a second effect — the idempotent service
// the pattern asks for; checkers assert "at most one effect per key".
#pragma once

#include "actors/workflow/interfaces.hpp"

#include <caf/actor_system.hpp>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace conclave::workflow {

enum class test_behavior : uint8_t { ok, transient, permanent, hang, slow, crash };

struct test_service_state {
  /// Consumed one per call, front first; when empty, `otherwise` applies.
  std::deque<test_behavior> script;
  test_behavior otherwise = test_behavior::ok;
  /// When set, decides each call the script does not (a simulator's fault
  /// windows, drawn per call) instead of `otherwise`.
  std::function<test_behavior()> decide;
  /// How long `slow` waits before answering success.
  duration slow_delay = std::chrono::milliseconds{50};
  bool deduplicate = true;
  /// Per idempotency key: calls received, effects applied.
  std::map<std::string, int> calls;
  std::map<std::string, int> effects;
  /// Effects in the order they were applied (keys).
  std::vector<std::string> effect_order;
};

service_actor spawn_test_service(caf::actor_system& sys,
                                 std::shared_ptr<test_service_state> state);

} // namespace conclave::workflow
