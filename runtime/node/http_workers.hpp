// The worker threads of the node's HTTP server and where its connections are
// admitted. cpp-httplib accepts a connection on its accept thread and hands
// over a closure that serves it; http_server.cpp adapts this pool to the
// library's task-queue interface (this header does not include httplib.h).
//
// Each connection runs on a worker of its own: there are as many workers as
// the gate admits connections at once, so none waits, where no deadline
// runs, behind slow ones. The gate (http_gate.hpp) admits a connection on
// the accept thread, as it is handed over; a connection it does not admit
// goes to one more thread that refuses it (refuse_connection) and runs its
// closure, which then ends at once. Admitting only once a worker took a
// connection up let a burst of connections from one source, each waiting
// for a worker to refuse it, fill the pool's bound and crowd out a
// connection from another source that the gate would have admitted.
// A connection whose socket is not known (the accept interposer of
// socket_numbers.hpp is not linked) cannot be gated: beyond `workers` such
// connections queued or served, the refusing thread takes them too.
//
// A worker that starts a long-lived answer (a watch stream) leaves the pool
// (leave_pool): a new worker takes its place, so open streams never take
// workers from ordinary requests.
#pragma once

#include "runtime/node/http_gate.hpp"

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

namespace conclave::node {

/// Refuses a connection without reading from it: over plain HTTP a 503 is
/// written if the socket takes it at once; then the socket is shut down (not
/// closed: the library's task closes it, after its first read fails at once).
void refuse_connection(int sock, bool tls);

class http_workers {
public:
  struct hooks {
    std::shared_ptr<http_gate> gate;
    bool tls = false;
    /// Runs once for every connection refused.
    std::function<void()> on_refused;
  };

  /// `workers`: the gate's bound of open connections (and the bound of
  /// connections whose socket is not known, queued or served).
  http_workers(size_t workers, hooks h);
  ~http_workers();
  http_workers(const http_workers&) = delete;
  http_workers& operator=(const http_workers&) = delete;

  /// On the accept thread: `fn` serves the accepted socket `sock` (-1: not
  /// known) and closes it.
  void enqueue(int sock, std::function<void()> fn);
  /// Runs what is queued, then stops the workers and waits for them (a
  /// worker that left the pool included).
  void shutdown();

  /// From a worker's own thread: its connection no longer counts against
  /// the pool and a new worker replaces it.
  void leave_pool();

  /// The pool whose worker runs on this thread (null elsewhere).
  static http_workers* current();
  /// The gate's ticket of the connection this thread serves (null where
  /// none was admitted, and off the workers' threads).
  static http_gate::ticket* current_ticket();

private:
  struct task {
    int sock = -1;
    std::function<void()> fn;
    http_gate::ticket ticket; ///< taken on the accept thread
  };

  /// Workers are detached and counted: one that left the pool ends on its
  /// own, and shutdown waits for the count to reach zero.
  void spawn_locked(bool refuser);
  void run(bool refuser);

  size_t workers_;
  hooks hooks_;
  std::mutex mtx_;
  std::condition_variable jobs_cv_, rejects_cv_, done_;
  std::deque<task> jobs_, rejects_;
  size_t open_ = 0;
  size_t live_ = 0;
  bool stopping_ = false;
};

} // namespace conclave::node
