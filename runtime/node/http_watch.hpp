// The event stream behind GET /v1/watch: a bounded ring of events that the
// node's threads publish into (never blocking on a reader) and that server-sent
// event streams read from, each waiting on a condition variable. No sockets
// here: http_server.cpp writes what watch_ring hands out.
#pragma once

#include "actors/replication/commit_observer.hpp"
#include "runtime/node/status_file.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace conclave::node {

struct watch_event {
  uint64_t seq = 0; ///< 1, 2, 3, ... within one ring
  std::string type; ///< leader, member, running, job, lease
  std::string data; ///< one line of JSON
};

/// Where a client resumes: the ring's boot stamp and the last sequence number
/// it saw, written as the SSE id "BOOT-SEQ".
struct watch_position {
  int64_t boot = 0;
  uint64_t seq = 0;
};

/// "BOOT-SEQ" → position; nullopt for anything else.
std::optional<watch_position> parse_event_id(const std::string& text);
std::string event_id(int64_t boot, uint64_t seq);

/// What a reader gets: the events after its position (oldest first) and
/// whether some it should have seen are no longer in the ring (or came from
/// another life of the node): then it must re-read the state it shows.
struct watch_batch {
  std::vector<watch_event> events;
  bool gap = false;
  bool closed = false; ///< the ring was closed: end the stream
};

class watch_ring {
public:
  /// `boot` tells this life of the node from earlier ones (wall clock µs at
  /// start, say); at most `capacity` events are kept.
  explicit watch_ring(int64_t boot, size_t capacity = 4096, size_t max_streams = 1024);

  int64_t boot() const { return boot_; }
  size_t capacity() const { return capacity_; }

  /// Appends an event and wakes every waiting reader. Constant time; the lock
  /// is held only to append.
  uint64_t publish(std::string type, std::string data);

  /// The sequence number of the newest event (0: none yet).
  uint64_t last_seq() const;

  /// Events after `from` (nullopt: a new client, which starts after the
  /// newest event), at most `max`. A position from another boot, or one
  /// older than the oldest event kept, gives every kept event and gap=true.
  watch_batch read(const std::optional<watch_position>& from, size_t max) const;

  /// read(), but waits until there is something to hand out, the ring is
  /// closed, or `until` has passed (then the batch is empty).
  watch_batch wait(const std::optional<watch_position>& from, size_t max,
                   std::chrono::steady_clock::time_point until) const;

  /// Wakes every waiter for good: streams end (server shutdown).
  void close();

  /// Stream slots: false when max_streams are open.
  bool try_open_stream();
  /// True once a stream was opened in this life of the ring. Before that no
  /// client holds a position in it, so events only a resumed stream could
  /// see (job and lease changes) need not be made at all.
  bool ever_watched() const { return ever_watched_.load(std::memory_order_relaxed); }
  void close_stream();
  size_t open_streams() const;

private:
  watch_batch read_locked(const std::optional<watch_position>& from, size_t max) const;

  int64_t boot_;
  size_t capacity_;
  size_t max_streams_;
  mutable std::mutex mtx_;
  mutable std::condition_variable cv_;
  std::deque<watch_event> events_;
  uint64_t next_seq_ = 1;
  bool closed_ = false;
  size_t streams_ = 0;
  std::atomic<bool> ever_watched_{false};
};

/// The events a change of the node's status makes: `leader` when the leader,
/// term, acting or this node's own role changed; `member` per peer whose
/// link or detector state changed; `running` when the node stops. Each is
/// (type, JSON data); data carries "node" (this node's id) and "at_us".
std::vector<std::pair<std::string, std::string>>
status_events(const node_status& before, const node_status& after, int64_t now_us);

/// The events one committed record makes (every node's replica applies every
/// record, so every node makes them): `job` per write to the jobs collection
/// that created a job or changed its state or current step, `lease` per
/// slot granted, released or expired. Data carries "node" (this node's id)
/// and "at_us" (when this node applied it). A job document that does not
/// decode makes no event.
std::vector<std::pair<std::string, std::string>>
store_events(const replication::committed_changes& c, uint64_t node, int64_t now_us);

/// One server-sent event: "id: ..\nevent: ..\ndata: ..\n\n".
std::string sse_frame(int64_t boot, const watch_event& e);

} // namespace conclave::node
