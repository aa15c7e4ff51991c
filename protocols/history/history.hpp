// history: what the clients of a store saw, as data for the linearizability
// checker (protocols/history/linearizability.hpp).
//
// An operation is one client call: who made it, when it was invoked, when its
// answer arrived (or never: a timeout, a crash, a lost connection), what it
// asked and what it got back. Times come from one clock every client shares
// (in a single test process, steady_clock or a virtual clock); the checker only
// compares them, so any unit and origin will do. Two operations are concurrent
// unless one's response time is strictly before the other's invocation time.
//
// The operations are the store's, reduced to what a client observes:
//   dictionary key:  put(k, v) -> ok           get(k) -> value | absent
//                    remove(k) -> ok (found or not, when known)
//                    cas(k, expected | absent, new | remove) -> ok | failed(current)
//                    incr(k, by) -> new value  (an absent key counts as 0)
//   FIFO queue:      enqueue(q, v) -> ok       dequeue(q) -> item | empty
// Keys and queues live in separate namespaces: key "a" and queue "a" differ.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace conclave::history {

/// Time as the history sees it: an offset from an arbitrary origin, shared by
/// every client of one history.
using timestamp = std::chrono::nanoseconds;

/// Which client made a call. A client makes one call at a time; the checker
/// does not rely on it, only on the times.
struct client_id {
  uint64_t value = 0;

  friend constexpr bool operator==(client_id a, client_id b) {
    return a.value == b.value;
  }
  friend constexpr bool operator!=(client_id a, client_id b) {
    return a.value != b.value;
  }
  friend constexpr bool operator<(client_id a, client_id b) { return a.value < b.value; }
};

enum class op_kind : uint8_t { put, get, remove, cas, incr, enqueue, dequeue };

/// What a client asked.
struct call {
  op_kind kind = op_kind::get;
  /// The key (put .. incr) or the queue (enqueue, dequeue).
  std::string target;
  /// put, enqueue: the value written; cas: the new value (none: remove the key).
  std::optional<std::string> value;
  /// cas: the value the key must hold (none: the key must be absent).
  std::optional<std::string> expected;
  /// incr: the amount added.
  int64_t by = 0;

  static call put(std::string key, std::string value);
  static call get(std::string key);
  static call remove(std::string key);
  static call cas(std::string key, std::optional<std::string> expected,
                  std::optional<std::string> desired);
  static call incr(std::string key, int64_t by);
  static call enqueue(std::string queue, std::string value);
  static call dequeue(std::string queue);

  /// True for enqueue and dequeue.
  bool on_queue() const { return kind == op_kind::enqueue || kind == op_kind::dequeue; }
  /// True for calls that never change the state (get).
  bool read_only() const { return kind == op_kind::get; }
};

/// What a client got back.
struct outcome {
  /// cas: whether the swap happened. Ignored by every other call.
  bool ok = true;
  /// get: the value (none: absent); dequeue: the item (none: the queue was
  /// empty); failed cas: the value the key held (none: absent).
  std::optional<std::string> value;
  /// remove: whether the key existed, when the client learned it.
  std::optional<bool> found;
  /// incr: the value after the increment.
  int64_t number = 0;

  /// put, enqueue, a successful cas, a remove that does not say what it found.
  static outcome done();
  /// remove: the key existed (true) or not.
  static outcome removed(bool found);
  /// get, dequeue: what was read (none: absent key, empty queue).
  static outcome read(std::optional<std::string> value);
  /// cas: the key held `current` (none: absent), not the expected value.
  static outcome cas_failed(std::optional<std::string> current);
  /// incr: the new value.
  static outcome counter(int64_t value);
};

/// One call, with its interval and, when the client got an answer, the answer.
struct operation {
  client_id client;
  timestamp invoked{0};
  /// None: the client never learned the outcome. Such a call may have taken
  /// effect at any time after `invoked`, or never.
  std::optional<timestamp> responded;
  call what;
  /// Meaningful only when `responded` is set.
  outcome seen;

  bool completed() const { return responded.has_value(); }
};

/// One line: `client 3: get(k) -> "v" [10, 12]`, `[10, ?)` when unanswered.
std::string to_string(const operation& op);

/// A client history: operations in the order they were recorded. The order
/// does not matter to the checker; the times do.
class client_history {
public:
  using op_index = size_t;

  /// Records that `client` invoked `what` at `at`; the operation stays
  /// unanswered until respond() is called for it.
  op_index invoke(client_id client, timestamp at, call what);
  /// Records the answer to `op`. Throws std::invalid_argument when `op` is not
  /// an operation of this history, already has an answer, or `at` is before
  /// its invocation.
  void respond(op_index op, timestamp at, outcome seen);
  /// Adds a whole operation. Throws std::invalid_argument when it responded
  /// before it was invoked.
  op_index add(operation op);

  const std::vector<operation>& operations() const { return ops_; }
  const operation& operator[](op_index i) const { return ops_[i]; }
  size_t size() const { return ops_.size(); }
  bool empty() const { return ops_.empty(); }

private:
  std::vector<operation> ops_;
};

} // namespace conclave::history
